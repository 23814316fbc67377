"""The planner: enumerate every plan for a model on an allocation, keep those that fit, rank them.

``plan(model, batch, gpu, shape, profile, ...)`` returns a :class:`Search`: the feasible plans
best first (smallest step time; ties by smaller memory, then smaller ``t``, ``p``, ``c``, larger
``b``), and for the others the constraint that rejected them. It is pure and deterministic and
cached on its arguments, so replay can ask it at every start and resize.

Constraints (see ``docs/llm.md``): ``t·p·c·d = N``; ``t`` divides the GPUs the job has on every
node; ``a % t = 0`` and (``a_kv % t = 0`` or ``t % a_kv = 0``); at most ``L`` stages; Ulysses needs
``a % (t·c) = 0`` and ``s % c = 0``, ring ``s % 2c = 0``; ``B = d·b·m`` (or, with a flexible batch,
``B`` rounded to a multiple of ``d·b``); ZeRO-2/3 not with ``p > 1``; memory ≤ the GPU's usable
memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from schedlab.errors import InputError
from schedlab.perf.llm.hardware import GPUSpec, NodeNet
from schedlab.perf.llm.memory import Memory, memory
from schedlab.perf.llm.model import MAX_BATCH, ModelConfig
from schedlab.perf.llm.profile import Profile
from schedlab.perf.llm.space import (
    MICRO_BATCHES,
    RECOMPUTE,
    SP_MEGATRON,
    SP_MODES,
    SP_NONE,
    SP_RING,
    SP_ULYSSES,
    Plan,
    PlanGrid,
    Shape,
)
from schedlab.perf.llm.steptime import Links, StepTime, step_time

#: The constraints in the order they are checked; a rejected plan is charged to its first.
CONSTRAINTS: dict[str, str] = {
    "tp-node": "tensor parallelism must stay inside a node (t divides the job's GPUs on each node)",
    "tp-heads": "t must divide the heads (and the KV heads, or be a multiple of them)",
    "stages": "more pipeline stages than layers",
    "cp-split": "Ulysses needs a % (t·c) = 0 and s % c = 0; ring needs s % 2c = 0",
    "batch": "the global batch must equal d·b·m (a whole number of micro-batches per rank)",
    "zero-pp": "ZeRO stages 2 and 3 do not combine with pipeline parallelism",
    "fixed": "differs from the fields fixed by the request",
    "memory": "needs more memory per GPU than the GPU has usable",
}


@dataclass(frozen=True)
class Options:
    """What the request fixes or allows beyond the defaults.

    ``fixed``: plan fields forced (``t``, ``p``, ``c``, ``sp``, ``d``, ``z``, ``zg``, ``b``, ``m``,
    ``r``, ``v``); a fixed ``zg`` other than ``d`` shards ZeRO over groups of that size.
    ``flexible_batch``: round ``B`` to the nearest multiple of ``d·b`` instead of requiring it.
    """

    fixed: tuple[tuple[str, int | str], ...] = ()
    flexible_batch: bool = False
    micro_batches: tuple[int, ...] = MICRO_BATCHES

    @classmethod
    def of(cls, fixed: Mapping[str, int | str] | None = None, **kw: object) -> Options:
        return cls(fixed=tuple(sorted((fixed or {}).items())), **kw)  # type: ignore[arg-type]

    @property
    def fixed_map(self) -> dict[str, int | str]:
        return dict(self.fixed)


@dataclass(frozen=True)
class Result:
    """One evaluated plan with its figures."""

    plan: Plan
    batch: int  # global batch in sequences (after rounding, with a flexible batch)
    step_seconds: float
    tokens_per_s: float
    tgs: float  # tokens per GPU per second
    mfu: float
    hfu: float
    memory_bytes: float
    usable_bytes: float
    breakdown: dict[str, float] = field(default_factory=dict)
    memory_parts: dict[str, float] = field(default_factory=dict)

    @property
    def hfu_tflops(self) -> float:
        return self.breakdown.get("hfu_tflops", math.nan)

    @property
    def mfu_tflops(self) -> float:
        return self.breakdown.get("mfu_tflops", math.nan)


@dataclass(frozen=True)
class Rejection:
    constraint: str
    count: int
    example: str


@dataclass(frozen=True)
class Search:
    """The planner's answer: feasible plans best first, and why the others were rejected."""

    model: ModelConfig
    gpu: GPUSpec
    shape: Shape
    batch: int
    considered: int
    ranked: tuple[Result, ...]
    rejections: tuple[Rejection, ...]
    emptied: tuple[str, str] | None = None  # the constraint that rejected the last candidates

    @property
    def best(self) -> Result | None:
        return self.ranked[0] if self.ranked else None

    def failure(self) -> str:
        """One line: why nothing fits (the constraint that got furthest, and by how much)."""
        where = (
            f"{self.model.name} with a global batch of {self.batch} sequences on "
            f"{self.shape.describe()} {self.gpu.name} GPUs"
        )
        if not self.rejections:
            return f"no plan for {where}: nothing to enumerate"
        name, example = self.emptied or (
            self.rejections[-1].constraint,
            self.rejections[-1].example,
        )
        return f"no plan fits {where}: {name} — {example}"


class NoPlanError(InputError):
    """No plan satisfies the constraints; the message names the one that failed last."""


def divisors(n: int) -> list[int]:
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))


def _splits(n: int) -> np.ndarray:
    """Every ``(t, p, c, d)`` with ``t·p·c·d = n``, as an (k, 4) array."""
    divs = divisors(n)
    rows = []
    for t in divs:
        for p in divisors(n // t):
            rest = n // (t * p)
            for c in divisors(rest):
                rows.append((t, p, c, rest // c))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 4)


def _expand(arrays: dict[str, np.ndarray], name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """Cartesian product of the rows of ``arrays`` with ``values`` as a new column ``name``."""
    k = len(values)
    out = {key: np.repeat(col, k) for key, col in arrays.items()}
    out[name] = np.tile(values, len(next(iter(arrays.values())))) if arrays else values
    return out


class _Tally:
    """Rejection counts per constraint with one example each, in check order, and the
    constraint that rejected the last candidates (what a failure names)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, str] = {}
        self.emptied: tuple[str, str] | None = None

    def charge(self, name: str, count: int, example: str, left: int = 1) -> None:
        if count <= 0:
            return
        self.counts[name] = self.counts.get(name, 0) + count
        self.examples.setdefault(name, example)
        if left == 0 and self.emptied is None:
            self.emptied = (name, example)

    def result(self) -> tuple[Rejection, ...]:
        order = list(CONSTRAINTS)
        names = sorted(self.counts, key=order.index)
        return tuple(Rejection(n, self.counts[n], self.examples[n]) for n in names)


def _keep(cols: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[mask] for k, v in cols.items()}


def _label(cols: dict[str, np.ndarray], i: int) -> str:
    keys = [k for k in ("t", "p", "c", "d", "b", "m", "z") if k in cols]
    return ",".join(f"{k}={cols[k][i]}" for k in keys)


class _Candidates:
    """The plans still standing while the constraints are applied one by one; each plan row
    stands for ``weight`` plans of the full space (the fields not expanded yet)."""

    def __init__(self, cols: dict[str, np.ndarray], weight: int, tally: _Tally) -> None:
        self.cols, self.weight, self.tally = cols, weight, tally

    def __len__(self) -> int:
        return len(self.cols["t"])

    def reject(self, name: str, bad: np.ndarray, why: str) -> None:
        if not bad.any():
            return
        i = int(np.flatnonzero(bad)[0])
        example = f"{why} ({_label(self.cols, i)})"
        self.cols = _keep(self.cols, ~bad)
        self.tally.charge(name, int(bad.sum()) * self.weight, example, len(self))

    def expand(self, name: str, values: np.ndarray, weight: int) -> None:
        self.cols = _expand(self.cols, name, np.asarray(values, dtype=np.int64))
        self.weight = weight

    def fix(self, fixed: Mapping[str, int | str], keys: tuple[str, ...]) -> None:
        for key in keys:
            if key in fixed:
                value = fixed[key]
                want = (
                    SP_MODES.index(str(value))
                    if key == "sp"
                    else RECOMPUTE.index(str(value))
                    if key == "r"
                    else int(value)
                )
                self.reject("fixed", self.cols[key] != want, f"{key} must be {value}")


def enumerate_plans(
    model: ModelConfig, batch: int, shape: Shape, options: Options, tally: _Tally
) -> tuple[PlanGrid, np.ndarray, int]:
    """The structurally valid plans (before memory), their global batches, and how many plans
    were considered in all. Fields the request fixes are filtered first, so a request that
    cannot be met is charged to the constraint that rules it out."""
    n = shape.total
    fixed = options.fixed_map
    splits = _splits(n)
    cols = {"t": splits[:, 0], "p": splits[:, 1], "c": splits[:, 2], "d": splits[:, 3]}
    # sequence/context mode: c = 1 → none or megatron (t > 1); c > 1 → ulysses or ring
    one = cols["c"] == 1
    c1 = _expand(_keep(cols, one), "sp", np.array([SP_NONE, SP_MEGATRON]))
    c1 = _keep(c1, ~((c1["sp"] == SP_MEGATRON) & (c1["t"] == 1)))
    cp = _expand(_keep(cols, ~one), "sp", np.array([SP_ULYSSES, SP_RING]))
    cols = {k: np.concatenate([c1[k], cp[k]]) for k in c1}
    weight = 4 * len(options.micro_batches) * len(RECOMPUTE)
    considered = len(cols["t"]) * weight
    cand = _Candidates(cols, weight, tally)
    cand.fix(fixed, ("t", "p", "c", "d", "sp"))

    q = shape.per_node
    t = cand.cols["t"]
    cand.reject(
        "tp-node", (q % t != 0) | (shape.node_gpus % t != 0), f"the job has {q} GPUs on a node"
    )
    t = cand.cols["t"]
    a, kv = model.heads, model.kv_heads
    cand.reject(
        "tp-heads", (a % t != 0) | ((kv % t != 0) & (t % kv != 0)), f"{a} heads, {kv} KV heads"
    )
    cand.reject("stages", cand.cols["p"] > model.layers, f"{model.layers} layers")
    t, c, sp = cand.cols["t"], cand.cols["c"], cand.cols["sp"]
    s = model.seq_len
    bad = ((sp == SP_ULYSSES) & ((a % (t * c) != 0) | (s % c != 0))) | (
        (sp == SP_RING) & (s % (2 * c) != 0)
    )
    cand.reject("cp-split", bad, f"{a} heads, sequence {s}")

    # micro-batch and the batch equation
    cand.expand("b", np.asarray(options.micro_batches), 4 * len(RECOMPUTE))
    cand.fix(fixed, ("b",))
    per_rank = cand.cols["d"] * cand.cols["b"]
    if options.flexible_batch:
        m = np.maximum(np.rint(batch / per_rank).astype(np.int64), 1)
        bad = np.zeros(len(m), dtype=bool)
    else:
        m = np.maximum(batch // per_rank, 1)
        bad = batch % per_rank != 0
    cand.cols["m"] = m
    cand.fix(fixed, ("m",))
    per_rank = cand.cols["d"] * cand.cols["b"]
    if not options.flexible_batch:
        bad = (batch % per_rank != 0) | (batch < per_rank)
        cand.reject("batch", bad, f"B = {batch} sequences is no multiple of d·b")

    # ZeRO stage, its group, recompute, interleaving
    cand.expand("z", np.arange(4), len(RECOMPUTE))
    zg = int(fixed["zg"]) if "zg" in fixed else 0
    cand.cols["zg"] = np.minimum(cand.cols["d"], zg) if zg else cand.cols["d"].copy()
    cand.fix(fixed, ("z",))
    # ZeRO over one rank shards nothing: the same plan as stage 0, listed once.
    same = (cand.cols["z"] > 0) & (cand.cols["zg"] == 1) & ("z" not in fixed)
    cand.cols = _keep(cand.cols, ~same)
    if zg:
        cand.reject("fixed", cand.cols["d"] % cand.cols["zg"] != 0, f"zg = {zg} must divide d")
    cand.reject("zero-pp", (cand.cols["p"] > 1) & (cand.cols["z"] >= 2), "ZeRO-2/3 with p > 1")
    cand.expand("r", np.arange(len(RECOMPUTE)), 1)
    cand.fix(fixed, ("r",))
    v = int(fixed.get("v", 1))
    cand.cols["v"] = np.full(len(cand), v, dtype=np.int64)
    if v > 1:
        bad = (cand.cols["p"] == 1) | (cand.cols["p"] * v > model.layers)
        cand.reject("stages", bad, f"interleaving v={v} needs p > 1 and p·v ≤ L")
    cols = cand.cols
    batches = cols["d"] * cols["b"] * cols["m"]
    return PlanGrid(**cols), batches, considered


def _links(gpu: GPUSpec, net: NodeNet, shape: Shape) -> Links:
    return Links(intra=gpu.nvlink_bytes_per_s, nic=net.nic_bytes_per_s, q=shape.per_node)


def evaluate(
    model: ModelConfig,
    grid: PlanGrid,
    batches: np.ndarray,
    gpu: GPUSpec,
    shape: Shape,
    profile: Profile,
    net: NodeNet | None = None,
) -> tuple[Memory, StepTime]:
    """Memory and step time of every plan of ``grid`` (no feasibility check)."""
    del batches
    net = net or NodeNet.default(gpu, shape.node_gpus)
    return memory(model, grid, profile), step_time(
        model, grid, gpu, _links(gpu, net, shape), profile
    )


def _result(
    model: ModelConfig,
    grid: PlanGrid,
    i: int,
    batch: int,
    mem: Memory,
    st: StepTime,
    gpu: GPUSpec,
    shape: Shape,
) -> Result:
    plan = grid.plan(i)
    step = float(st.total[i])
    tokens = batch * model.seq_len / step
    n = shape.total
    model_flops = model.step_flops(batch, "none")
    hw_flops = model.step_flops(batch, plan.r)
    mfu = model_flops / (step * n * gpu.peak_flops)
    hfu = hw_flops / (step * n * gpu.peak_flops)
    breakdown = {
        "compute": float(st.compute[i]) - float(st.bubble[i]) * 0.0,
        "tp": float(st.tp[i]),
        "cp": float(st.cp[i]),
        "pp": float(st.pp[i]),
        "bubble": float(st.bubble[i]),
        "dp": float(st.dp[i]),
        "zero": float(st.zero[i]),
        "optimizer": float(st.optimizer[i]),
        "grad_seconds": float(st.grad_seconds[i]),
        "backward_seconds": float(st.backward_seconds[i]),
        "mfu_tflops": model_flops / step / n / 1e12,
        "hfu_tflops": hw_flops / step / n / 1e12,
    }
    parts = {
        "states": float(mem.states[i]),
        "activations": float(mem.activations[i]),
        "buffers": float(mem.buffers[i]),
        "params_per_gpu": float(mem.params[i]),
    }
    return Result(
        plan=plan,
        batch=batch,
        step_seconds=step,
        tokens_per_s=tokens,
        tgs=tokens / n,
        mfu=mfu,
        hfu=hfu,
        memory_bytes=float(mem.total[i]),
        usable_bytes=gpu.usable_bytes,
        breakdown=breakdown,
        memory_parts=parts,
    )


@lru_cache(maxsize=4096)
def plan(
    model: ModelConfig,
    batch: int,
    gpu: GPUSpec,
    shape: Shape,
    profile: Profile,
    net: NodeNet | None = None,
    options: Options = Options(),
    keep: int = 20,
) -> Search:
    """All plans of ``model`` at global batch ``batch`` (sequences) on ``shape`` GPUs ``gpu``:
    the best ``keep`` feasible ones ranked, and the rejections."""
    if batch < 1:
        raise InputError(f"the global batch must be ≥ 1 sequence (got {batch})")
    if batch > MAX_BATCH:
        raise InputError(
            f"the global batch must be ≤ {MAX_BATCH:,} sequences (2^24; got {batch:,})"
        )
    tally = _Tally()
    grid, batches, considered = enumerate_plans(model, batch, shape, options, tally)
    ranked: tuple[Result, ...] = ()
    if len(grid):
        mem, st = evaluate(model, grid, batches, gpu, shape, profile, net)
        fits = mem.total <= gpu.usable_bytes
        if (~fits).any():
            over = np.flatnonzero(~fits)
            i = int(over[np.argmin(mem.total[over])])
            need = float(mem.total[i])
            tally.charge(
                "memory",
                int((~fits).sum()),
                f"the nearest miss needs {need / 1e9:.1f} GB per GPU, "
                f"{(need - gpu.usable_bytes) / 1e9:.1f} GB over the "
                f"{gpu.usable_bytes / 1e9:.1f} GB usable on {gpu.name} ({grid.plan(i).label()})",
                int(fits.sum()),
            )
        ok = np.flatnonzero(fits)
        if len(ok):
            order = np.lexsort(
                (
                    -grid.b[ok],
                    grid.c[ok],
                    grid.p[ok],
                    grid.t[ok],
                    mem.total[ok],
                    st.total[ok],
                )
            )
            chosen = ok[order[:keep]]
            ranked = tuple(
                _result(model, grid, int(i), int(batches[i]), mem, st, gpu, shape) for i in chosen
            )
    return Search(
        model=model,
        gpu=gpu,
        shape=shape,
        batch=batch,
        considered=considered,
        ranked=ranked,
        rejections=tally.result(),
        emptied=tally.emptied,
    )


def best_plan(
    model: ModelConfig,
    batch: int,
    gpu: GPUSpec,
    shape: Shape,
    profile: Profile,
    net: NodeNet | None = None,
    options: Options = Options(),
) -> Result:
    """The fastest plan that fits; :class:`NoPlanError` naming the failing constraint if none."""
    search = plan(model, batch, gpu, shape, profile, net, options)
    if search.best is None:
        raise NoPlanError(search.failure())
    return search.best


def evaluate_plan(
    model: ModelConfig,
    the_plan: Plan,
    gpu: GPUSpec,
    shape: Shape,
    profile: Profile,
    net: NodeNet | None = None,
) -> Result:
    """The figures of one given plan, whether or not it fits (its memory says)."""
    grid = PlanGrid.of([the_plan])
    batch = the_plan.d * the_plan.b * the_plan.m
    mem, st = evaluate(model, grid, np.array([batch]), gpu, shape, profile, net)
    return _result(model, grid, 0, batch, mem, st, gpu, shape)
