"""The energy options of ``schedlab replay``: parser arguments and their reading."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from schedlab.energy.spec import CONFIG_KEYS, POWER_MODELS, EnergySpec
from schedlab.errors import InputError

ENERGY_CONFIG_KEYS = CONFIG_KEYS


def add_energy_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    """The energy options; ``many``: --power-model and --ci take several values (a sweep's
    axes, every combination a variant)."""
    g = p.add_argument_group("energy and carbon (off unless --power-model or --ci is given)")
    several = " (several: each a variant of every run)" if many else ""
    g.add_argument(
        "--power-model",
        choices=POWER_MODELS,
        nargs="+" if many else None,
        help=f"GPU power model (default with --ci: binary){several}",
    )
    g.add_argument(
        "--ci",
        nargs="+" if many else None,
        help="carbon intensity: FILE.csv, const:G, country:ISO3, region:PROVIDER/REGION or "
        f"synth:PRESET[,key=value] (gb2020, de2020){several}",
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

    _refuse_unused(args, pick("power_model") is not None, pick("ci") is not None)
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


#: Options that only refine the accounting that --power-model or --ci turns on.
REFINEMENTS = ("pue", "node_base_w", "gpu_power", "power_limit", "energy_data")
#: Options about the carbon series alone.
CI_ONLY = ("ci_start", "ci_wrap")


def _refuse_unused(args: argparse.Namespace, power_model: bool, ci: bool) -> None:
    """An energy option given on the command line without the accounting it refines would
    change nothing: refused."""
    for key in CI_ONLY:
        if getattr(args, key, None) is not None and not ci:
            raise InputError(f"'--{key.replace('_', '-')}' needs '--ci'")
    if power_model or ci:
        return
    for key in REFINEMENTS:
        if getattr(args, key, None) is not None:
            raise InputError(f"'--{key.replace('_', '-')}' needs '--power-model' or '--ci'")


#: The energy options a sweep crosses (the others are shared by every run).
ENERGY_AXES = ("power_model", "ci")
#: Every energy option's ``argparse`` destination.
ENERGY_OPTIONS = (*ENERGY_AXES, *CI_ONLY, *REFINEMENTS)


def energy_variants(args: argparse.Namespace) -> list[tuple[dict[str, str], EnergySpec]]:
    """Each combination of the sweep's --power-model and --ci values, checked: (what names it
    among the others, its spec); one entry without energy when neither is given."""
    models = list(dict.fromkeys(getattr(args, "power_model", None) or [None]))
    series = list(dict.fromkeys(getattr(args, "ci", None) or [None]))
    out = []
    for model in models:
        for ci in series:
            one = argparse.Namespace(**{**vars(args), "power_model": model, "ci": ci})
            name = {
                **({"power_model": model} if len(models) > 1 else {}),
                **({"ci": ci} if len(series) > 1 else {}),
            }
            out.append((name, energy_spec(one, {})))  # type: ignore[arg-type]
    return out
