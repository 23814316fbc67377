"""What ``--failures``, ``--checkpoint`` and ``--failure-reaction`` say, parsed and checked.

``--failures`` is a preset name or ``;``-separated items (see ``docs/failures.md``)::

    llama3-405b
    gpu=exp:79230;node=exp:50079;software=exp:337042;repair.node=fixed:24
    node=weibull:0.8,40000;gpu_scope=gpu
    trace=failures.csv

A process is ``exp:MTBF_HOURS`` (one Poisson stream per component instance) or
``weibull:SHAPE,SCALE_HOURS`` (a renewal process per instance); ``software`` is per job, its
rate proportional to the GPUs the job holds (MTBF per GPU). A repair is ``exp:HOURS`` or
``fixed:HOURS`` (defaults: node 24 h, gpu 48 h, nic 24 h, link 4 h, switch 4 h).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from schedlab.errors import InputError

CLASSES = ("gpu", "node", "nic", "link", "switch", "software")
#: Hours a component of each class is out after failing, by default (ours).
DEFAULT_REPAIR_H = {"gpu": 48.0, "node": 24.0, "nic": 24.0, "link": 4.0, "switch": 4.0}
GPU_SCOPES = ("node", "gpu")
LINK_EFFECTS = ("interrupt", "reroute")


@dataclass(frozen=True)
class Process:
    """A failure process per component instance: ``exp`` (MTBF hours) or ``weibull``."""

    kind: str
    mtbf_h: float = math.nan  # exp: mean hours between failures of one instance
    shape: float = math.nan  # weibull k
    scale_h: float = math.nan  # weibull scale

    @property
    def rate_per_s(self) -> float:
        """Failures per second of one instance (long-run mean for Weibull)."""
        if self.kind == "exp":
            return 1.0 / (self.mtbf_h * 3600.0)
        return 1.0 / (self.scale_h * 3600.0 * math.gamma(1.0 + 1.0 / self.shape))


@dataclass(frozen=True)
class Repair:
    kind: str  # exp | fixed
    hours: float


@dataclass(frozen=True)
class FailureSpec:
    """The failure model of a run."""

    processes: dict[str, Process] = field(default_factory=dict)
    repairs: dict[str, Repair] = field(default_factory=dict)
    #: Category weights per class: each event draws one (reports break interruptions down by it).
    categories: dict[str, dict[str, float]] = field(default_factory=dict)
    trace: str | None = None
    gpu_scope: str = "node"
    link_effect: str = "interrupt"
    preset: str = ""
    text: str = ""

    def repair(self, cls: str) -> Repair:
        return self.repairs.get(cls, Repair("fixed", DEFAULT_REPAIR_H.get(cls, 24.0)))


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"'--failures': {what} must be a number (got {text!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"'--failures': {what} must be > 0 (got {text})")
    return value


def parse_process(text: str, cls: str) -> Process:
    kind, _, rest = text.partition(":")
    if kind == "exp":
        return Process("exp", mtbf_h=_number(rest, f"the MTBF of {cls} (hours)"))
    if kind == "weibull":
        shape, _, scale = rest.partition(",")
        return Process(
            "weibull",
            shape=_number(shape, f"the Weibull shape of {cls}"),
            scale_h=_number(scale, f"the Weibull scale of {cls} (hours)"),
        )
    raise InputError(
        f"'--failures': {cls}={text!r} must be exp:MTBF_HOURS or weibull:SHAPE,SCALE_HOURS"
    )


def parse_repair(text: str, cls: str) -> Repair:
    kind, _, hours = text.partition(":")
    if kind not in ("exp", "fixed"):
        raise InputError(f"'--failures': repair.{cls}={text!r} must be exp:HOURS or fixed:HOURS")
    return Repair(kind, _number(hours, f"the repair time of {cls} (hours)"))


def parse_failures(text: str) -> FailureSpec:
    """``--failures``: a preset, items, or both (items after a preset override it)."""
    from schedlab.failures.presets import PRESETS

    spec = FailureSpec(text=text)
    items = [p.strip() for p in text.split(";") if p.strip()]
    if not items:
        raise InputError("'--failures' is empty")
    processes, repairs = dict(spec.processes), dict(spec.repairs)
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            if key not in PRESETS:
                known = ", ".join(PRESETS)
                raise InputError(f"'--failures': unknown preset {key!r} (known: {known})")
            preset = PRESETS[key]
            spec = replace(spec, preset=key, categories=dict(preset.categories))
            processes.update(preset.processes)
            repairs.update(preset.repairs)
            continue
        if key == "preset":
            return parse_failures(";".join([value, *[i for i in items if i != item]]))
        if key in CLASSES:
            processes[key] = parse_process(value, key)
        elif key.startswith("repair.") and key[7:] in DEFAULT_REPAIR_H:
            repairs[key[7:]] = parse_repair(value, key[7:])
        elif key == "trace":
            spec = replace(spec, trace=value)
        elif key == "gpu_scope":
            if value not in GPU_SCOPES:
                raise InputError(f"'--failures': gpu_scope must be node or gpu (got {value!r})")
            spec = replace(spec, gpu_scope=value)
        elif key == "link_effect":
            if value not in LINK_EFFECTS:
                raise InputError(
                    f"'--failures': link_effect must be interrupt or reroute (got {value!r})"
                )
            spec = replace(spec, link_effect=value)
        else:
            raise InputError(
                f"'--failures': unknown item {item!r} (CLASS=exp:H or weibull:K,H with CLASS in "
                f"{', '.join(CLASSES)}; repair.CLASS=exp:H|fixed:H; trace=FILE; gpu_scope; "
                "link_effect; or a preset name)"
            )
    if not processes and spec.trace is None:
        raise InputError("'--failures' names no failure process and no trace")
    return replace(spec, processes=processes, repairs=repairs)


# -- checkpointing ---------------------------------------------------------------------------------
CKPT_POLICIES = ("none", "fixed", "steps", "young", "daly")


@dataclass(frozen=True)
class CheckpointSpec:
    """``--checkpoint policy=young,cost=30,mode=sync,...`` (every key optional).

    ``cost`` fixes the synchronous cost C (seconds); otherwise C = S_ck / min(W_storage,
    n_nodes·W_node) from the job's checkpoint bytes. ``mode=async``: a blocking copy
    ``block`` (default (S_ck/N)/W_d2h) then a background ``persist`` (default C_sync) at
    ``(1 − delta)`` speed."""

    policy: str = "young"
    interval: float = math.nan  # fixed:S seconds
    steps: int = 0  # steps:K
    cost: float = math.nan
    mode: str = "sync"
    block: float = math.nan
    persist: float = math.nan
    delta: float = 0.05
    w_node: float = 5e9
    w_storage: float = math.inf
    w_d2h: float = 20e9
    w_read: float = math.nan  # default: w_node
    bytes_per_param: float = 14.0
    detect: float = 60.0
    launch: float = 120.0


def parse_checkpoint(text: str | None) -> CheckpointSpec:
    spec = CheckpointSpec()
    if not text:
        return spec
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise InputError(f"'--checkpoint': {item!r} is not KEY=VALUE")
        if key == "policy":
            name, _, arg = value.partition(":")
            if name not in CKPT_POLICIES:
                raise InputError(
                    f"'--checkpoint': policy must be one of none, fixed:S, steps:K, young, daly "
                    f"(got {value!r})"
                )
            if name == "fixed":
                spec = replace(spec, policy=name, interval=_ckpt_number(arg, "fixed interval"))
            elif name == "steps":
                try:
                    steps = int(arg)
                except ValueError:
                    steps = 0
                if steps < 1:
                    raise InputError(f"'--checkpoint': steps:K needs K ≥ 1 (got {arg!r})")
                spec = replace(spec, policy=name, steps=steps)
            else:
                spec = replace(spec, policy=name)
        elif key == "mode":
            if value not in ("sync", "async"):
                raise InputError(f"'--checkpoint': mode must be sync or async (got {value!r})")
            spec = replace(spec, mode=value)
        elif key == "delta":
            delta = _ckpt_number(value, "delta", allow_zero=True)
            if delta >= 1:
                raise InputError(f"'--checkpoint': delta must be in [0, 1) (got {value})")
            spec = replace(spec, delta=delta)
        elif key in ("cost", "block", "persist", "detect", "launch"):
            spec = replace(spec, **{key: _ckpt_number(value, key, allow_zero=True)})
        elif key in ("w_node", "w_storage", "w_d2h", "w_read", "bytes_per_param"):
            spec = replace(spec, **{key: _ckpt_number(value, key)})
        else:
            raise InputError(
                f"'--checkpoint': unknown key {key!r} (policy, cost, mode, block, persist, delta, "
                "w_node, w_storage, w_d2h, w_read, bytes_per_param, detect, launch)"
            )
    return spec


def _ckpt_number(text: str, what: str, allow_zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"'--checkpoint': {what} must be a number (got {text!r})") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"'--checkpoint': {what} must be > 0 (got {text})")
    return value


# -- reactions -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reaction:
    """``--failure-reaction``: ``requeue`` (default), ``shrink``, ``spares:K``, and optionally
    ``exclude-lemons:N,HOURS``, comma-joined (``shrink,spares:8``)."""

    shrink: bool = False
    spares: int = 0
    lemon_failures: int = 0
    lemon_window_h: float = 0.0

    @property
    def label(self) -> str:
        parts = (["shrink"] if self.shrink else []) + (
            [f"spares:{self.spares}"] if self.spares else []
        )
        if self.lemon_failures:
            parts.append(f"exclude-lemons:{self.lemon_failures},{self.lemon_window_h:g}")
        return ",".join(parts) or "requeue"


def parse_reaction(text: str | None) -> Reaction:
    out = Reaction()
    if not text:
        return out
    parts = [p.strip() for p in text.split(",") if p.strip()]
    i = 0
    while i < len(parts):
        part = parts[i]
        if part == "requeue":
            pass
        elif part == "shrink":
            out = replace(out, shrink=True)
        elif part.startswith("spares:"):
            try:
                k = int(part[7:])
            except ValueError:
                k = -1
            if k < 1:
                raise InputError(f"'--failure-reaction': spares:K needs K ≥ 1 (got {part!r})")
            out = replace(out, spares=k)
        elif part.startswith("exclude-lemons:") and i + 1 < len(parts):
            try:
                n, hours = int(part[15:]), float(parts[i + 1])
            except ValueError:
                n, hours = 0, 0.0
            if n < 1 or not hours > 0:
                raise InputError(
                    f"'--failure-reaction': exclude-lemons:N,HOURS needs N ≥ 1 and HOURS > 0 "
                    f"(got {part},{parts[i + 1]})"
                )
            out = replace(out, lemon_failures=n, lemon_window_h=hours)
            i += 1
        else:
            raise InputError(
                f"'--failure-reaction': unknown reaction {part!r} (requeue, shrink, spares:K, "
                "exclude-lemons:N,HOURS)"
            )
        i += 1
    return out
