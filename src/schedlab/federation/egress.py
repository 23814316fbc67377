"""What moving data out of a site costs: a flat $/GB, or SkyPilot's AWS and GCP functions.

SkyPilot (``sky/clouds/{aws,gcp}.py: get_egress_cost``) prices each transfer on its own, though
the real tiers are monthly; schedlab does the same so its figures match the optimizer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.errors import InputError

PRESETS = ("skypilot-aws", "skypilot-gcp")
TIB = 1024.0


def skypilot_aws(gb: float) -> float:
    """First GB free; $0.09/GB to 10 TiB, $0.085 to 50 TiB, $0.07 to 150 TiB; above 150 TiB
    $0.05 on all of it."""
    if gb <= 1.0:
        return 0.0
    if gb > 150 * TIB:
        return 0.05 * gb
    cost, low = 0.0, 1.0
    for top, price in ((10 * TIB, 0.09), (50 * TIB, 0.085), (150 * TIB, 0.07)):
        if gb <= low:
            break
        cost += (min(gb, top) - low) * price
        low = top
    return cost


def skypilot_gcp(gb: float) -> float:
    """The whole volume at one rate: $0.12/GB up to 1 TiB, $0.11 up to 10 TiB, else $0.08."""
    if gb <= TIB:
        return 0.12 * gb
    if gb <= 10 * TIB:
        return 0.11 * gb
    return 0.08 * gb


@dataclass(frozen=True)
class Egress:
    """A site's egress price: ``flat`` $/GB, or a ``preset`` function."""

    flat: float = 0.0
    preset: str | None = None

    def cost(self, gb: float) -> float:
        if gb <= 0:
            return 0.0
        if self.preset == "skypilot-aws":
            return skypilot_aws(gb)
        if self.preset == "skypilot-gcp":
            return skypilot_gcp(gb)
        return self.flat * gb


def parse_egress(value: object, where: str) -> Egress:
    """``{flat = P}`` or ``{preset = "skypilot-aws" | "skypilot-gcp"}`` (absent: free)."""
    if value is None:
        return Egress()
    if not isinstance(value, dict) or len(value) != 1:
        raise InputError(f"{where}, key 'egress': give {{flat = $/GB}} or {{preset = NAME}}")
    ((key, v),) = value.items()
    if key == "flat":
        if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
            raise InputError(f"{where}, key 'egress.flat': must be $/GB ≥ 0 (got {v!r})")
        return Egress(flat=float(v))
    if key == "preset":
        if v not in PRESETS:
            raise InputError(
                f"{where}, key 'egress.preset': must be one of {', '.join(PRESETS)} (got {v!r})"
            )
        return Egress(preset=str(v))
    raise InputError(f"{where}, key 'egress.{key}': unknown (flat or preset)")
