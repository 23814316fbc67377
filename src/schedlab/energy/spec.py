"""The energy options of a replay run as plain data: what was asked, how ``config.toml`` records
it, and its checks. Nothing here loads the power tables, carbon series or meter until energy
accounting is on (``--power-model`` or ``--ci``), so a plain replay does not pay for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedlab.energy.carbon import CarbonSeries
    from schedlab.energy.power import EnergySettings

#: ``--power-model`` choices.
POWER_MODELS = ("binary", "linear", "measured")


@dataclass(frozen=True)
class EnergySpec:
    """The energy options of a replay run (what ``config.toml`` records)."""

    power_model: str | None = None
    ci: str | None = None
    ci_start: str | None = None
    ci_wrap: bool = True
    pue: float = 1.0
    node_base_w: float = 0.0
    gpu_power: str = ""
    power_limit: float = 1.0
    energy_data: str | None = None

    @property
    def enabled(self) -> bool:
        return self.power_model is not None or self.ci is not None

    def settings(self) -> EnergySettings:
        from schedlab.energy.power import EnergySettings, parse_gpu_power

        return EnergySettings(
            model=self.power_model or "binary",
            pue=self.pue,
            node_base_w=self.node_base_w,
            gpu_power=parse_gpu_power(self.gpu_power),
            power_limit=self.power_limit,
            energy_data=self.energy_data,
        )

    def series(self) -> CarbonSeries | None:
        if self.ci is None:
            return None
        from schedlab.energy.carbon import parse_ci

        return parse_ci(
            self.ci, start=self.ci_start, wrap=self.ci_wrap, energy_data=self.energy_data
        )

    def check(self) -> None:
        """Every refusal of the energy options, before any work."""
        if self.enabled:
            settings = self.settings()
            if settings.model == "measured" or self.power_limit < 1:
                settings.root  # noqa: B018 - the data folder must exist
            self.series()


#: config.toml keys of the energy options, with their types (added only when energy is on).
CONFIG_KEYS: dict[str, type] = {
    "power_model": str,
    "ci": str,
    "ci_start": str,
    "ci_wrap": bool,
    "pue": float,
    "node_base_w": float,
    "gpu_power": str,
    "power_limit": float,
    "energy_data": str,
}


def config_entries(spec: EnergySpec) -> dict[str, object]:
    """What config.toml records of the energy options (nothing when energy is off)."""
    if not spec.enabled:
        return {}
    return {
        "power_model": spec.power_model or "binary",
        "ci": spec.ci or "",
        "ci_start": spec.ci_start or "",
        "ci_wrap": spec.ci_wrap,
        "pue": spec.pue,
        "node_base_w": spec.node_base_w,
        "gpu_power": spec.gpu_power,
        "power_limit": spec.power_limit,
        "energy_data": spec.energy_data or "",
    }
