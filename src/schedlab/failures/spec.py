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
#: The shortest MTBF (exp) or Weibull scale accepted, in hours per instance. Published
#: per-component MTBFs are 10³–10⁵ h (the presets: 1,488 h to 337,042 h); at 1 h a component
#: already fails 20× per default restart overhead (180 s) of a job on it, and the streams make at
#: most ~168 events per instance per simulated week. Far below it a job can never get through
#: its restart, and below ~1e-13 h the gaps vanish under float64 rounding, so simulated time
#: stops advancing (a hang): refused rather than simulated.
MIN_MTBF_H = 1.0
#: Weibull shapes accepted. Hardware fits lie in 0.5–3; below 0.1 nearly all gaps are ~0 or
#: astronomically long (and below 1/170 the mean, Γ(1 + 1/k), is not even a float).
MIN_WEIBULL_SHAPE, MAX_WEIBULL_SHAPE = 0.1, 100.0


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


def _at_least(value: float, floor: float, what: str, text: str, why: str) -> float:
    """``value`` if ≥ ``floor``, else a one-line error saying why the floor is there."""
    if value < floor:
        raise InputError(f"'--failures': {what} must be ≥ {floor:g} (got {text}): {why}")
    return value


def parse_process(text: str, cls: str) -> Process:
    kind, _, rest = text.partition(":")
    why_mtbf = "shorter MTBFs let no job get through a restart (see docs/failures.md)"
    if kind == "exp":
        what = f"the MTBF of {cls} (hours)"
        mtbf = _at_least(_number(rest, what), MIN_MTBF_H, what, rest, why_mtbf)
        return Process("exp", mtbf_h=mtbf)
    if kind == "weibull":
        shape_text, _, scale_text = rest.partition(",")
        what = f"the Weibull shape of {cls}"
        shape = _number(shape_text, what)
        _at_least(shape, MIN_WEIBULL_SHAPE, what, shape_text, "smaller shapes degenerate")
        if shape > MAX_WEIBULL_SHAPE:
            raise InputError(
                f"'--failures': {what} must be ≤ {MAX_WEIBULL_SHAPE:g} (got {shape_text})"
            )
        what = f"the Weibull scale of {cls} (hours)"
        scale = _at_least(_number(scale_text, what), MIN_MTBF_H, what, scale_text, why_mtbf)
        return Process("weibull", shape=shape, scale_h=scale)
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
    seen: dict[str, str] = {}  # key → the item that gave it: a key given twice is refused
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        slot = key if eq else "preset"
        if slot in seen and key != "preset":
            raise InputError(
                f"'--failures': {_twice(slot)} given twice ({seen[slot]!r} and {item!r}): "
                "give it once"
            )
        seen[slot] = item
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
            if not value:
                raise InputError("'--failures': preset= needs a preset name")
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


def _twice(slot: str) -> str:
    return "a preset" if slot == "preset" else repr(slot)


def _blank(text: str | None) -> bool:
    """An option given with nothing in it (``--checkpoint ""`` or ``","``)."""
    return text is not None and not text.replace(",", "").replace(";", "").strip()


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


#: Keys that only the asynchronous mode uses: refused with ``mode=sync`` rather than ignored.
ASYNC_ONLY = ("block", "persist", "delta", "w_d2h")


def parse_checkpoint(text: str | None) -> CheckpointSpec:
    """``--checkpoint``: comma-joined ``KEY=VALUE``, each key at most once; keys the chosen
    mode does not use are refused (a silently ignored setting looks like it took effect)."""
    spec = CheckpointSpec()
    if text is None:
        return spec
    if _blank(text):
        raise InputError("'--checkpoint' needs a value (KEY=VALUE items, e.g. policy=young)")
    seen: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise InputError(f"'--checkpoint': {item!r} is not KEY=VALUE")
        if key in seen:
            raise InputError(
                f"'--checkpoint': {key!r} given twice ({seen[key]!r} and {item!r}): give it once"
            )
        seen[key] = item
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
            spec = replace(spec, delta=_delta(value))
        elif key in ("block", "persist", "detect", "launch"):
            spec = replace(spec, **{key: _ckpt_number(value, key, allow_zero=True)})
        elif key in ("cost", "w_node", "w_storage", "w_d2h", "w_read", "bytes_per_param"):
            spec = replace(spec, **{key: _ckpt_number(value, key)})
        else:
            raise InputError(
                f"'--checkpoint': unknown key {key!r} (policy, cost, mode, block, persist, delta, "
                "w_node, w_storage, w_d2h, w_read, bytes_per_param, detect, launch)"
            )
    if spec.mode == "sync":
        ignored = [key for key in ASYNC_ONLY if key in seen]
        if ignored:
            raise InputError(
                f"'--checkpoint': {ignored[0]}= applies to mode=async only (got {seen[ignored[0]]} "
                "with the synchronous mode); add mode=async or drop it"
            )
    return spec


def _delta(text: str) -> float:
    """The slowdown while persisting: a fraction in [0, 1) (1 would stop training)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0.0 <= value < 1.0):
        raise InputError(f"'--checkpoint': delta must be a number in [0, 1) (got {text!r})")
    return value


def _ckpt_number(text: str, what: str, allow_zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"'--checkpoint': {what} must be a number (got {text!r})") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = "≥ 0" if allow_zero else "> 0"
        raise InputError(f"'--checkpoint': {what} must be a finite number {bound} (got {text})")
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
    """``--failure-reaction``: each reaction at most once; ``requeue`` (what happens without
    ``shrink`` or ``spares:K``) cannot be combined with them, since it would be ignored."""
    out = Reaction()
    if text is None:
        return out
    if _blank(text):
        raise InputError(
            "'--failure-reaction' needs a value (requeue, shrink, spares:K, exclude-lemons:N,HOURS)"
        )
    parts = [p.strip() for p in text.split(",") if p.strip()]
    seen: dict[str, str] = {}
    i = 0
    while i < len(parts):
        part = parts[i]
        name = part.partition(":")[0]
        if name in seen:
            raise InputError(
                f"'--failure-reaction': {name} given twice ({seen[name]!r} and {part!r}): "
                "give it once"
            )
        if name in ("requeue", "shrink", "spares", "exclude-lemons"):
            seen[name] = part
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
            if n < 1 or not 0 < hours < math.inf:
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
    if "requeue" in seen and (out.shrink or out.spares):
        other = seen.get("shrink") or seen["spares"]
        raise InputError(
            f"'--failure-reaction': requeue and {other} are two reactions to one failure: give "
            "one (requeue is what happens without shrink or spares:K)"
        )
    return out
