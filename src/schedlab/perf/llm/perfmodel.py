"""LLM jobs in replay: work in tokens, speed from the planner for the allocation the policy gave.

:class:`LLMPlanner` is a :class:`~schedlab.perf.models.PerfModel`. An LLM job (a row of the trace's
``llm`` side table) advances at ``B·s/T_step`` tokens per second of the best feasible plan on its
allocation (or of its fixed plan fields); a GPU count with no feasible plan has rate 0, so
elastic policies skip it and a placement there makes no progress. Other jobs of the trace go to
the base model. A resize or move re-plans with the same global batch and costs one checkpoint
and one restart (``--resize-overhead`` overrides). The planner is asked with the allocation's
shape (GPUs per node); policies that only know a GPU count get whole nodes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.jobs import JobTable
from schedlab.perf.llm.hardware import GPUSpec, NodeNet, get_gpu, has_gpu
from schedlab.perf.llm.planner import Options, Result, plan
from schedlab.perf.llm.profile import Profile, get_profile
from schedlab.perf.llm.space import Shape
from schedlab.perf.models import PerfModel

DEFAULT_PROFILE = "generic"


@dataclass
class LLMPlanner(PerfModel):
    """See the module docstring. ``cluster`` gives node sizes and GPU models; ``nic_gbps`` the
    NICs per node (None: the GPU's default; a topology passes its hosts' rates)."""

    base: PerfModel
    cluster: Any
    profile: str = DEFAULT_PROFILE
    nic_gbps: float | None = None
    #: ``--resize-overhead`` when given (> 0): the re-plan cost; otherwise checkpoint + restart.
    resize_fixed: float | None = None
    checkpoint: Any = None  # a CheckpointSpec for the re-plan cost (None: the defaults)
    #: job → [(time, plan label, MFU, GPUs)] of every allocation the engine ran it on.
    history: dict[int, list[tuple[float, str, float, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _shapes: dict[int, tuple] = field(default_factory=dict, repr=False)
    _feasible: dict[tuple, bool] = field(default_factory=dict, repr=False)

    def __hash__(self) -> int:
        return id(self)

    def _shape_of(self, allocation: Any) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
        """(GPUs per node, the largest node's size, GPU models) of an allocation, remembered for
        the last few allocations (the engine and the failure model ask about the same one)."""
        hit = self._shapes.get(id(allocation))
        if hit is not None and hit[0] is allocation:
            return hit[1]
        nodes = [n for n, _ in allocation]
        counts = tuple(len(g) for _, g in allocation)
        g = int(self.cluster.num_gpus[nodes].max())
        models = tuple(sorted({int(m) for m in np.unique(self.cluster.model[nodes])}))
        if len(self._shapes) > 64:
            self._shapes.clear()
        self._shapes[id(allocation)] = (allocation, (counts, g, models))
        return counts, g, models

    # -- PerfModel ---------------------------------------------------------------------------
    def work(self, jobs: JobTable) -> np.ndarray:
        out = np.asarray(self.base.work(jobs), dtype=np.float64).copy()
        llm = jobs.llm
        if llm is not None:
            mask = np.array([m is not None for m in llm.model], dtype=bool)
            out[mask] = llm.tokens[mask]
        return out

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        if not self._is_llm(jobs, job):
            return self.base.rate(jobs, job, num_gpus, gpu_model)
        if num_gpus <= 0:
            return 0.0
        g = self._node_size(gpu_model)
        counts = (g,) * (num_gpus // g) + ((num_gpus % g,) if num_gpus % g else ())
        best = self._best(jobs, job, counts, g, gpu_model)
        return best.tokens_per_s if best is not None else 0.0

    def max_useful_gpus(self, jobs: JobTable, job: int, limit: int) -> int:
        if not self._is_llm(jobs, job):
            return self.base.max_useful_gpus(jobs, job, limit)
        g = self._node_size(-1)
        top = min(limit, int(jobs.llm.max_gpus[job]))  # the job's elastic range caps it
        best, best_rate = int(jobs.num_gpus[job]), 0.0
        for n in [*range(1, min(g, top) + 1), *range(2 * g, top + 1, g)]:
            r = self.rate(jobs, job, n, -1)
            if r > best_rate * (1 + 1e-9):
                best, best_rate = n, r
        return best

    def rate_for_allocation(
        self, jobs: JobTable, job: int, allocation: Any, now: float = math.nan
    ) -> float | None:
        """Tokens/s on this allocation's shape (None: not an LLM job, the engine's usual rule)."""
        if not self._is_llm(jobs, job):
            return None
        counts, g, models = self._shape_of(allocation)
        results = [self._best(jobs, job, counts, g, m) for m in models]
        if any(r is None for r in results):
            self.history[job].append((now, "no feasible plan", 0.0, sum(counts)))
            return 0.0
        slowest = min(results, key=lambda r: r.tokens_per_s)  # the gang waits for its slowest
        self.history[job].append((now, slowest.plan.label(), slowest.mfu, sum(counts)))
        return slowest.tokens_per_s

    def resize_seconds(self, jobs: JobTable, job: int, allocation: Any, default: float) -> float:
        """A re-plan: one checkpoint and one restart (``--resize-overhead`` when given)."""
        if not self._is_llm(jobs, job) or self.resize_fixed is not None:
            return default
        from schedlab.failures.checkpoint import costs
        from schedlab.failures.spec import CheckpointSpec

        spec = self.checkpoint or CheckpointSpec()
        gpus = sum(self._shape_of(allocation)[0])
        c = costs(spec, self.ckpt_bytes(jobs, job), gpus, len(allocation))
        assert c is not None
        restart = float(jobs.llm.restart_s[job])
        if not math.isfinite(restart):
            restart = spec.detect + spec.launch + c.load
        return c.sync + restart

    # -- for the failure model -----------------------------------------------------------------
    def ckpt_bytes(self, jobs: JobTable, job: int) -> float | None:
        if not self._is_llm(jobs, job):
            return None
        return float(jobs.llm.ckpt_bytes_per_param[job]) * jobs.llm.model[job].params

    def step_seconds(self, jobs: JobTable, job: int, allocation: Any) -> float | None:
        if not self._is_llm(jobs, job):
            return None
        counts, g, models = self._shape_of(allocation)
        best = self._best(jobs, job, counts, g, models[0])
        return best.step_seconds if best is not None else None

    def largest_feasible_prefix(self, jobs: JobTable, job: int, counts: list[int]) -> int:
        """The most nodes of ``counts`` (taken in order) on which the job has a plan."""
        g = self._node_size(-1)
        uniform = len(set(counts)) == 1
        for k in range(len(counts), 0, -1):
            key = (job, k, counts[0]) if uniform else None
            ok = self._feasible.get(key) if key is not None else None
            if ok is None:
                ok = self._best(jobs, job, tuple(counts[:k]), g, -1) is not None
                if key is not None:
                    self._feasible[key] = ok
            if ok:
                return k
        return 0

    # -- internals -------------------------------------------------------------------------------
    def _is_llm(self, jobs: JobTable, job: int) -> bool:
        return jobs.llm is not None and jobs.llm.model[job] is not None

    def _node_size(self, gpu_model: int) -> int:
        c = self.cluster
        sizes = c.num_gpus[(c.num_gpus > 0) & ((c.model == gpu_model) | (gpu_model < 0))]
        return int(sizes.max()) if len(sizes) else int(c.num_gpus.max())

    def _gpu(self, jobs: JobTable, job: int, gpu_model: int) -> GPUSpec:
        named = str(jobs.llm.gpu_model[job])
        if named:
            return get_gpu(named)
        if gpu_model < 0:
            present = self.cluster.model[self.cluster.num_gpus > 0]
            gpu_model = int(np.bincount(present).argmax()) if len(present) else -1
        name = GPU_MODELS[gpu_model] if gpu_model >= 0 else "A100"
        return get_gpu(name if has_gpu(name) else "A100")

    def _profile(self, jobs: JobTable, job: int) -> Profile:
        return get_profile(str(jobs.llm.profile[job]) or self.profile)

    def _best(
        self, jobs: JobTable, job: int, counts: tuple[int, ...], g: int, gpu_model: int
    ) -> Result | None:
        llm = jobs.llm
        gpu = self._gpu(jobs, job, gpu_model)
        shape = Shape(counts, max(g, max(counts)))
        net = (
            NodeNet.from_gbps(self.nic_gbps)
            if self.nic_gbps
            else NodeNet.default(gpu, shape.node_gpus)
        )
        options = Options(fixed=llm.plan[job], flexible_batch=bool(llm.flexible[job]))
        search = plan(
            llm.model[job], int(llm.batch[job]), gpu, shape, self._profile(jobs, job), net,
            options, 1,
        )  # fmt: skip
        return search.best

    # -- what jobs.csv and summary.json add ------------------------------------------------------
    def job_columns(self, jobs: JobTable, end_time: np.ndarray, horizon: float) -> dict:
        n = len(jobs)
        first = np.empty(n, dtype=object)
        used = np.empty(n, dtype=object)
        mfu = np.full(n, np.nan)
        for job in range(n):
            hist = self.history.get(job, [])
            if not self._is_llm(jobs, job) or not hist:
                first[job], used[job] = "", ""
                continue
            first[job] = hist[0][1]
            used[job] = ";".join(dict.fromkeys(h[1] for h in hist))
            stop = end_time[job] if np.isfinite(end_time[job]) else horizon
            times = [h[0] for h in hist] + [stop]
            weights = np.array(
                [max(0.0, b - a) * h[3] for a, b, h in zip(times, times[1:], hist, strict=False)]
            )
            values = np.array([h[2] for h in hist])
            mfu[job] = (
                float((weights * values).sum() / weights.sum()) if weights.sum() > 0 else values[-1]
            )
        llm = jobs.llm
        return {
            "model": np.array([m.name if m is not None else "" for m in llm.model], dtype=object),
            "tokens": llm.tokens,
            "job_type": llm.job_type,
            "plan_first": first,
            "plans_used": used,
            "mfu_mean": mfu,
        }
