"""The axes of a replay grid: the options every run shares, ``--param`` variants, loads.

Options every run of a replay grid shares are declared once in :data:`SPEC_OPTIONS`: the table
gives the command-line option, its check and the :class:`ReplaySpec` field it fills, so adding a
``schedlab replay`` option to the grid is one line here.

``--param`` builds variants: values given for the same key are alternatives, different keys are
crossed (``--param thresholds=3600,36000 --param thresholds=1800`` is two variants). A key applies
only to the policies that take it (the others run once with their defaults); a key that no
policy of the grid takes is an error, since it would change nothing.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.commands.common import MIN_SLOT, check_seconds
from schedlab.errors import InputError
from schedlab.experiments.replay_run import FALLBACKS
from schedlab.network.options import (
    DEFAULT_RULE,
    NET_CONTROLS,
    REPLAY_ROUTING,
    RULES,
    resolve_net_control,
)
from schedlab.perf.models import parse_speed_factors
from schedlab.policies.registry import parameter_names


@dataclass(frozen=True)
class SpecOption:
    """A replay option that every run of the grid shares: ``--flag`` fills ``ReplaySpec.<field>``
    with ``convert(value)``; ``check`` refuses a bad value before any run."""

    flag: str
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    choices: tuple[str, ...] | None = None
    convert: Callable[[Any], Any] = lambda v: v
    check: Callable[[str, Any], Any] = lambda _flag, v: v
    #: Several values allowed: each is a variant of every run (an axis of the grid).
    many: bool = False

    @property
    def field(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def _seconds(minimum: float) -> Callable[[str, Any], Any]:
    return lambda flag, v: v if v is None else check_seconds(flag, v, minimum)


def _positive_seconds(flag: str, v: Any) -> Any:
    if v is not None and not (v > 0 and math.isfinite(v)):
        raise InputError(f"'{flag}' must be > 0 seconds (got {v})")
    return v


SPEC_OPTIONS: tuple[SpecOption, ...] = (
    SpecOption("--restart-overhead", "seconds a preempted job needs to restart (default 0)",
               float, 0.0, check=_seconds(0.0)),
    SpecOption("--resize-overhead", "seconds a resized job needs to resume (default 0)",
               float, 0.0, check=_seconds(0.0)),
    SpecOption("--min-runtime", "seconds a run lasts before it may be preempted (default 0)",
               float, convert=lambda v: v or 0.0, check=_seconds(0.0)),
    SpecOption("--grace", "seconds a victim runs on after its signal (default 0)",
               float, convert=lambda v: v or 0.0, check=_seconds(0.0)),
    SpecOption("--time-limit", "seconds a run of a job without its own limit may last "
               "(default: none)", float, check=_positive_seconds),
    SpecOption("--slot", "decide once per round of this many seconds (default: every event)",
               float, check=_seconds(MIN_SLOT)),
    SpecOption("--throughputs", "folder of <model>.csv throughput tables, or 'builtin'"),
    SpecOption("--throughputs-fallback", "run jobs the tables do not cover on linear scaling",
               choices=FALLBACKS),
    SpecOption("--speed", "GPU speed factors vs the reference, e.g. V100=1,T4=0.4",
               convert=lambda v: parse_speed_factors(v or "")),
    SpecOption("--topology", "a network under --cluster (see 'replay --help'); several: each a "
               "variant of every run", many=True),
    SpecOption("--net-sharing", f"with --topology: link-sharing rule (default {DEFAULT_RULE})",
               choices=RULES, convert=lambda v: v or DEFAULT_RULE),
    SpecOption("--net-routing", "with --topology: routing mode (default ecmp)",
               choices=REPLAY_ROUTING, convert=lambda v: v or "ecmp"),
    SpecOption("--net-control", "with --topology: who decides paths, ecmp, spray or crux "
               "(see 'replay --help')", choices=NET_CONTROLS, convert=lambda v: v or ""),
)  # fmt: skip


def add_spec_options(group: argparse._ArgumentGroup) -> None:
    for o in SPEC_OPTIONS:
        group.add_argument(
            o.flag,
            type=o.type,
            default=o.default,
            choices=o.choices,
            nargs="+" if o.many else None,
            help=o.help,
        )


def spec_fields(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[Any]]]:
    """(ReplaySpec keyword arguments, the raw values for the grid manifest, the axes: fields
    given several values, each value a variant of every run), checked. A field with several
    values holds its first in the keyword arguments."""
    fields: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    axes: dict[str, list[Any]] = {}
    for o in SPEC_OPTIONS:
        given = getattr(args, o.field)
        values = list(dict.fromkeys(given)) if o.many and given is not None else [given]
        values = [o.check(o.flag, v) for v in values]
        raw[o.field] = values if len(values) > 1 else values[0]
        fields[o.field] = o.convert(values[0])
        if len(values) > 1:
            axes[o.field] = [o.convert(v) for v in values]
    if raw.get("throughputs_fallback") is not None and not raw.get("throughputs"):
        raise InputError("'--throughputs-fallback' needs '--throughputs'")
    for net in ("net_sharing", "net_routing", "net_control"):
        if raw.get(net) is not None and raw.get("topology") is None:
            raise InputError(f"'--{net.replace('_', '-')}' needs '--topology'")
    # The three network options settle each other as in 'schedlab replay'.
    control, routing, sharing = resolve_net_control(
        raw.get("net_control"), raw.get("net_routing"), raw.get("net_sharing")
    )
    fields.update(net_control=control, net_routing=routing, net_sharing=sharing)
    return fields, {k: v for k, v in raw.items() if v is not None}, axes


def parse_param_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """``KEY=VALUE`` items → alternatives per key, in the order given."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"'--param' must look like KEY=VALUE (got {item!r})")
        values = grid.setdefault(key.strip(), [])
        if value.strip() not in values:
            values.append(value.strip())
    return grid


def variant_label(params: dict[str, str]) -> str:
    return ";".join(f"{k}={v}" for k, v in params.items())


def policy_variants(
    policies: Sequence[str], grid: dict[str, list[str]], placement_keys: Iterable[str] = ()
) -> dict[str, list[dict]]:
    """For each policy, the distinct parameter combinations it runs (``[{}]``: its defaults);
    ``placement_keys``: parameters the grid's placements take (every policy runs them)."""
    extra = set(placement_keys)
    takes = {p: (parameter_names(p) or set()) | extra for p in policies}
    unused = [k for k in grid if not any(k in t for t in takes.values())]
    if unused:
        raise InputError(
            f"'--param {unused[0]}' is taken by none of the policies "
            f"({', '.join(policies)}); see 'schedlab policies'"
        )
    keys = list(grid)
    combos = [dict(zip(keys, values, strict=False)) for values in itertools.product(*grid.values())]
    out: dict[str, list[dict]] = {}
    for p in policies:
        seen: dict[str, dict] = {}
        for combo in combos:
            mine = {k: v for k, v in combo.items() if k in takes[p]}
            seen.setdefault(variant_label(mine), mine)
        out[p] = list(seen.values())
    return out


def parse_loads(text: str | None) -> list[float]:
    """``0.5,0.7,0.9`` → offered loads (each > 0); an empty list when not given."""
    if text is None:
        return []
    loads: list[float] = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"'--load' must be numbers > 0 joined by ',' (got {text!r})")
        if value not in loads:
            loads.append(value)
    return loads


def axis_names(values: Sequence[str]) -> dict[str, str]:
    """Short names of an axis's values for run folders and labels: a topology's generator name
    or file stem (``leafspine``), numbered when two share it (``leafspine1``, ``leafspine2``)."""
    bases = [Path(v).stem if Path(v).is_file() else v.split(":")[0] for v in values]
    if len(set(bases)) == len(bases):
        return dict(zip(values, bases, strict=True))
    return {v: f"{b}{k}" for k, (v, b) in enumerate(zip(values, bases, strict=True), start=1)}
