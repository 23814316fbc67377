"""The plan space: one plan is ``(t, p, c, sp_mode, d, z, z_group, b, m, r, v)``.

Tensor parallel ``t``, pipeline ``p``, sequence/context parallel ``c`` with its mode (``none``;
``megatron``: sequence parallelism inside the TP group, ``c = 1``; ``ulysses``; ``ring``), data
parallel ``d``, ZeRO stage ``z`` over groups of ``z_group`` data-parallel ranks, micro-batch ``b``,
micro-batches per step ``m``, recompute ``r`` (none, selective, full) and interleaving ``v``.

Plans are evaluated many at a time: :class:`PlanGrid` holds one numpy array per field, so the
memory and step-time formulas run over thousands of plans in one pass. Ranks are laid out TP
innermost, then CP, DP and PP outermost (Megatron's order); :func:`group_span` says how a group
of ranks falls on the nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import numpy as np

from schedlab.errors import InputError

SP_MODES = ("none", "megatron", "ulysses", "ring")
RECOMPUTE = ("none", "selective", "full")
SP_NONE, SP_MEGATRON, SP_ULYSSES, SP_RING = range(4)
R_NONE, R_SELECTIVE, R_FULL = range(3)
MICRO_BATCHES = (1, 2, 4, 8, 16)
#: The most GPUs an allocation may have (2²⁰ = 1,048,576). The largest training clusters built
#: have ~10⁵ GPUs; past this the allocation (held node by node) and the enumeration over the
#: divisors of the GPU count stop being a model of anything and only cost memory and time, and
#: a count past 2⁶³ cannot even be laid out (it used to end in an OverflowError).
MAX_GPUS = 2**20


def check_allocation(nodes: int, per_node: int, where: str) -> None:
    """InputError (naming ``where``) unless ``nodes`` nodes of ``per_node`` GPUs is an
    allocation the planner can take: ≥ 1 of each, at most :data:`MAX_GPUS` GPUs in all.
    Checked before the node-by-node tuple is built, so a huge count fails fast."""
    if nodes < 1 or per_node < 1:
        raise InputError(f"{where} needs ≥ 1 node of ≥ 1 GPU (got {nodes}x{per_node})")
    if nodes * per_node > MAX_GPUS:
        raise InputError(
            f"{where}: {nodes}x{per_node} is {nodes * per_node:,} GPUs; the planner takes at "
            f"most {MAX_GPUS:,} (2^20, ten times the largest clusters built)"
        )


@dataclass(frozen=True)
class Shape:
    """How many GPUs the allocation has on each of its nodes (sorted, largest first), and how
    many GPUs a node of the cluster has (``node_gpus``; TP must divide it)."""

    gpus_per_node: tuple[int, ...]
    node_gpus: int

    def __post_init__(self) -> None:
        if not self.gpus_per_node or min(self.gpus_per_node) <= 0:
            raise InputError(f"an allocation needs GPUs on every node (got {self.gpus_per_node})")
        if max(self.gpus_per_node) > self.node_gpus:
            raise InputError(
                f"an allocation has {max(self.gpus_per_node)} GPUs on a node of {self.node_gpus}"
            )
        if sum(self.gpus_per_node) > MAX_GPUS:
            raise InputError(
                f"an allocation of {sum(self.gpus_per_node):,} GPUs is more than the planner "
                f"takes ({MAX_GPUS:,}, 2^20)"
            )
        object.__setattr__(self, "gpus_per_node", tuple(sorted(self.gpus_per_node, reverse=True)))
        # A 2,048-node shape is a 2,048-tuple: hash it once, not at every cached plan() call.
        object.__setattr__(self, "_hash", hash((self.gpus_per_node, self.node_gpus)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    @classmethod
    def uniform(cls, nodes: int, per_node: int, node_gpus: int | None = None) -> Shape:
        check_allocation(nodes, per_node, "an allocation")
        return cls((per_node,) * nodes, node_gpus or per_node)

    @property
    def total(self) -> int:
        return sum(self.gpus_per_node)

    @property
    def nodes(self) -> int:
        return len(self.gpus_per_node)

    @property
    def per_node(self) -> int:
        """``q``: the fewest GPUs the job has on one of its nodes (its narrowest NIC share)."""
        return min(self.gpus_per_node)

    def describe(self) -> str:
        counts = self.gpus_per_node
        if len(set(counts)) == 1:
            return f"{self.nodes}x{counts[0]}"
        return "+".join(str(c) for c in counts)


@dataclass(frozen=True)
class Plan:
    """One plan; see the module docstring."""

    t: int = 1
    p: int = 1
    c: int = 1
    sp: str = "none"
    d: int = 1
    z: int = 0
    zg: int = 1
    b: int = 1
    m: int = 1
    r: str = "none"
    v: int = 1

    def label(self) -> str:
        """``t=8,p=4,c=1,sp=megatron,d=64,z=1,zg=64,b=1,m=16,r=selective`` (``v`` when > 1)."""
        parts = [
            f"t={self.t}",
            f"p={self.p}",
            f"c={self.c}",
            f"sp={self.sp}",
            f"d={self.d}",
            f"z={self.z}",
            f"zg={self.zg}",
            f"b={self.b}",
            f"m={self.m}",
            f"r={self.r}",
        ]
        if self.v > 1:
            parts.append(f"v={self.v}")
        return ",".join(parts)

    @property
    def gpus(self) -> int:
        return self.t * self.p * self.c * self.d


_INT_KEYS = ("t", "p", "c", "d", "z", "zg", "b", "m", "v")
_ALIASES = {"sp_mode": "sp", "recompute": "r", "z_group": "zg", "zero": "z"}


def parse_plan(text: str, where: str = "plan") -> dict[str, int | str]:
    """``t=8,p=4,c=1,z=1,b=1,r=selective`` → the fields it fixes (any subset); InputError for an
    unknown key or a bad value."""
    out: dict[str, int | str] = {}
    for part in filter(None, (s.strip() for s in text.replace(";", ",").split(","))):
        key, sep, value = part.partition("=")
        key = _ALIASES.get(key.strip(), key.strip())
        value = value.strip()
        if not sep or key not in {f.name for f in fields(Plan)}:
            raise InputError(
                f"{where}: {part!r} is not KEY=VALUE with KEY one of t, p, c, sp, d, z, zg, b, m, "
                "r, v"
            )
        if key in out:  # the last would win in silence
            raise InputError(f"{where}: {key} is given twice ({part!r} after {key}={out[key]})")
        if key in _INT_KEYS:
            try:
                number = int(value)
            except ValueError:
                raise InputError(f"{where}: {key} must be a whole number (got {value!r})") from None
            low = 0 if key == "z" else 1
            if number < low or (key == "z" and number > 3):
                raise InputError(
                    f"{where}: {key} must be {'0…3' if key == 'z' else '≥ 1'} (got {number})"
                )
            out[key] = number
        elif key == "sp":
            if value not in SP_MODES:
                raise InputError(
                    f"{where}: sp must be one of {', '.join(SP_MODES)} (got {value!r})"
                )
            out[key] = value
        else:
            if value not in RECOMPUTE:
                raise InputError(
                    f"{where}: r must be one of {', '.join(RECOMPUTE)} (got {value!r})"
                )
            out[key] = value
    return out


@dataclass(frozen=True)
class PlanGrid:
    """Many plans at once, one int64 array per field (``sp`` and ``r`` as codes)."""

    t: np.ndarray
    p: np.ndarray
    c: np.ndarray
    sp: np.ndarray
    d: np.ndarray
    z: np.ndarray
    zg: np.ndarray
    b: np.ndarray
    m: np.ndarray
    r: np.ndarray
    v: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index: np.ndarray) -> PlanGrid:
        return PlanGrid(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def plan(self, i: int) -> Plan:
        return Plan(
            t=int(self.t[i]),
            p=int(self.p[i]),
            c=int(self.c[i]),
            sp=SP_MODES[int(self.sp[i])],
            d=int(self.d[i]),
            z=int(self.z[i]),
            zg=int(self.zg[i]),
            b=int(self.b[i]),
            m=int(self.m[i]),
            r=RECOMPUTE[int(self.r[i])],
            v=int(self.v[i]),
        )

    @classmethod
    def of(cls, plans: list[Plan]) -> PlanGrid:
        """A grid of the given plans (for evaluating chosen plans with the same formulas)."""
        cols: dict[str, list[int]] = {f.name: [] for f in fields(cls)}
        for plan in plans:
            for f in fields(cls):
                value = getattr(plan, f.name)
                if f.name == "sp":
                    value = SP_MODES.index(value)
                elif f.name == "r":
                    value = RECOMPUTE.index(value)
                cols[f.name].append(int(value))
        return cls(**{k: np.asarray(v, dtype=np.int64) for k, v in cols.items()})

    @classmethod
    def concat(cls, parts: list[Mapping[str, np.ndarray]]) -> PlanGrid:
        return cls(
            **{f.name: np.concatenate([np.asarray(p[f.name]) for p in parts]) for f in fields(cls)}
        )


def with_fields(plan: Plan, **values: int | str) -> Plan:
    return replace(plan, **values)


def group_span(stride: np.ndarray, size: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """``(g_l, n_nodes)`` of groups of ``size`` ranks ``stride`` apart, on nodes of ``q`` ranks
    (ranks numbered node by node): ``g_l`` of a group's ranks share a node, over ``n_nodes``."""
    stride = np.asarray(stride, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    per = np.where(stride >= q, 1, np.maximum(q // np.maximum(stride, 1), 1))
    g_l = np.minimum(size, per)
    n_nodes = -(-size // g_l)
    return g_l, n_nodes
