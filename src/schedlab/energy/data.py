"""The shipped power and carbon tables, found beside the checkout and read with exact errors.

The tables (PWR's GPU and CPU constants, Zeus's power-limit measurements, codecarbon's annual
carbon intensities) are data with their own licences, so schedlab reads them where they are and
never bundles them: ``--energy-data DIR``, else ``$SCHEDLAB_ENERGY_DATA``, else the first
``shared/data`` folder found beside the working directory or beside this source tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.traces.columns import fail_at_first, float_column, read_text_table

ENV_VAR = "SCHEDLAB_ENERGY_DATA"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The folder holding ``power/``, ``zeus-nsdi23/`` and ``carbon/``."""
    if explicit:
        path = Path(explicit)
        if not path.is_dir():
            raise InputError("energy data folder not found", path=str(path))
        return path
    env = os.environ.get(ENV_VAR)
    if env:
        return data_dir(env)
    here = Path(__file__).resolve()
    for base in (Path.cwd(), *Path.cwd().parents, *here.parents):
        candidate = base / "shared" / "data"
        if (candidate / "power").is_dir():
            return candidate
        sibling = base.parent / "shared" / "data"
        if (sibling / "power").is_dir():
            return sibling
    raise InputError(
        f"energy data not found: pass --energy-data DIR or set {ENV_VAR} "
        "(a folder with power/, zeus-nsdi23/ and carbon/)"
    )


@dataclass(frozen=True)
class GpuPower:
    """Idle and busy (TDP) watts of one GPU model."""

    idle_w: float
    tdp_w: float


@dataclass(frozen=True)
class CpuPower:
    """One CPU socket: idle and full watts, physical cores."""

    idle_w: float
    full_w: float
    cores: int


@lru_cache(maxsize=8)
def gpu_power_table(root: Path) -> dict[str, GpuPower]:
    """``power/gpu_power.csv``: GPU model name (upper case) → idle/TDP watts."""
    path = root / "power" / "gpu_power.csv"
    frame = read_text_table(path, ["gpu_model", "idle_w", "tdp_w"])
    idle = float_column(frame, "idle_w", path)
    tdp = float_column(frame, "tdp_w", path)
    fail_at_first(
        frame, tdp < idle, path, "tdp_w", lambda i: f"'tdp_w' {tdp[i]:g} is below 'idle_w'"
    )
    names = [n.upper() for n in frame.stripped("gpu_model").tolist()]
    return {n: GpuPower(float(a), float(b)) for n, a, b in zip(names, idle, tdp, strict=True)}


@lru_cache(maxsize=8)
def cpu_power_table(root: Path) -> tuple[dict[str, CpuPower], dict[str, str]]:
    """``power/cpu_power.csv``: CPU model → socket figures, and GPU model (upper case, or
    ``CPU-ONLY``) → the CPU model PWR assigns to such nodes."""
    path = root / "power" / "cpu_power.csv"
    cols = ["cpu_model", "idle_w_per_socket", "full_w_per_socket", "physical_cores_per_socket"]
    frame = read_text_table(path, [*cols, "assigned_to_openb_nodes"])
    idle = float_column(frame, cols[1], path)
    full = float_column(frame, cols[2], path)
    cores = float_column(frame, cols[3], path, low=1)
    models: dict[str, CpuPower] = {}
    assigned: dict[str, str] = {}
    for i, name in enumerate(frame.stripped("cpu_model").tolist()):
        models[name] = CpuPower(float(idle[i]), float(full[i]), int(cores[i]))
        for node_kind in str(frame["assigned_to_openb_nodes"][i]).split("|"):
            if node_kind.strip():
                assigned[node_kind.strip().upper()] = name
    return models, assigned


@dataclass(frozen=True)
class ZeusRow:
    """One measured power limit of one Zeus workload group."""

    limit_w: float
    time_per_epoch: float
    average_power: float


#: Zeus curve files by the GPU they were measured on.
ZEUS_GPUS = ("v100", "a40", "rtx6000", "p100")


@lru_cache(maxsize=16)
def zeus_groups(root: Path, gpu: str) -> dict[tuple[str, str, int, str], tuple[ZeusRow, ...]]:
    """``summary_power_<gpu>.csv``: (dataset, network, batch, optimizer) → rows by limit."""
    path = root / "zeus-nsdi23" / f"summary_power_{gpu}.csv"
    key_cols = ["dataset", "network", "batch_size", "optimizer"]
    frame = read_text_table(path, [*key_cols, "power_limit", "time_per_epoch", "average_power"])
    batch = float_column(frame, "batch_size", path, low=1)
    limit = float_column(frame, "power_limit", path, low=1)
    epoch = float_column(frame, "time_per_epoch", path, low=0)
    power = float_column(frame, "average_power", path, low=0)
    fail_at_first(frame, epoch <= 0, path, "time_per_epoch", lambda i: "must be > 0")
    groups: dict[tuple[str, str, int, str], list[ZeusRow]] = {}
    for i in range(len(frame)):
        key = (
            str(frame["dataset"][i]).strip(),
            str(frame["network"][i]).strip(),
            int(batch[i]),
            str(frame["optimizer"][i]).strip(),
        )
        groups.setdefault(key, []).append(
            ZeusRow(float(limit[i]), float(epoch[i]), float(power[i]))
        )
    return {k: tuple(sorted(v, key=lambda r: r.limit_w)) for k, v in groups.items()}


@lru_cache(maxsize=8)
def country_ci(root: Path) -> dict[str, float]:
    """``carbon/annual_country_ci.csv``: ISO3 → g CO2e per kWh."""
    path = root / "carbon" / "annual_country_ci.csv"
    frame = read_text_table(path, ["iso3", "carbon_intensity_g_per_kwh"])
    values = float_column(frame, "carbon_intensity_g_per_kwh", path)
    names = [n.upper() for n in frame.stripped("iso3").tolist()]
    return dict(zip(names, values.tolist(), strict=True))


@lru_cache(maxsize=8)
def region_ci(root: Path) -> dict[str, float]:
    """``carbon/cloud_region_ci.csv``: ``provider/region`` → g CO2e per kWh."""
    path = root / "carbon" / "cloud_region_ci.csv"
    frame = read_text_table(path, ["provider", "region", "carbon_intensity_g_per_kwh"])
    values = float_column(frame, "carbon_intensity_g_per_kwh", path)
    keys = [
        f"{provider}/{region}".lower()
        for provider, region in zip(
            frame.stripped("provider").tolist(), frame.stripped("region").tolist(), strict=True
        )
    ]
    return dict(zip(keys, np.asarray(values).tolist(), strict=True))
