"""The energy options of ``schedlab replay``: parser arguments and their reading."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from schedlab.energy.spec import CONFIG_KEYS, POWER_MODELS, EnergySpec

ENERGY_CONFIG_KEYS = CONFIG_KEYS


def add_energy_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("energy and carbon (off unless --power-model or --ci is given)")
    g.add_argument(
        "--power-model", choices=POWER_MODELS, help="GPU power model (default with --ci: binary)"
    )
    g.add_argument(
        "--ci",
        help="carbon intensity: FILE.csv, const:G, country:ISO3, region:PROVIDER/REGION or "
        "synth:PRESET[,key=value] (gb2020, de2020)",
    )
    g.add_argument("--ci-start", help="ISO-8601 UTC time of simulated time 0 (for a CI file)")
    g.add_argument(
        "--ci-wrap",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="repeat the CI series past its end (default on)",
    )
    g.add_argument("--pue", type=float, help="facility power / IT power (default 1.0)")
    g.add_argument("--node-base-w", type=float, help="watts of other parts per node (default 0)")
    g.add_argument("--gpu-power", help="idle/TDP watts for GPU models, e.g. H100=60/700")
    g.add_argument(
        "--power-limit",
        type=float,
        help="GPU power limit of every job as a fraction of the top limit (measured model)",
    )
    g.add_argument(
        "--energy-data", help="folder with power/, zeus-nsdi23/ and carbon/ (default: found)"
    )


def energy_spec(args: argparse.Namespace, cfg: Mapping[str, Any]) -> EnergySpec:
    """The energy options: defaults < ``--config`` < the command line; checked here."""

    def pick(key: str, default: object = None) -> Any:
        value = getattr(args, key, None)
        if value is not None:
            return value
        value = cfg.get(key, default)
        return None if value == "" else value

    spec = EnergySpec(
        power_model=pick("power_model"),
        ci=pick("ci"),
        ci_start=pick("ci_start"),
        ci_wrap=pick("ci_wrap", True),
        pue=pick("pue", 1.0),
        node_base_w=pick("node_base_w", 0.0),
        gpu_power=pick("gpu_power", "") or "",
        power_limit=pick("power_limit", 1.0),
        energy_data=pick("energy_data"),
    )
    spec.check()
    return spec
