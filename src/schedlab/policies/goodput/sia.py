"""Sia (SOSP '23): heterogeneity-aware goodput scheduling by an ILP per interval.

Every interval (60 s) Sia builds the goodput matrix of the active jobs over the cluster's
configurations (:mod:`.sia_configs`, :mod:`.sia_matrix`) and solves the ILP of
:mod:`.sia_ilp` for one configuration per job; each job's agent then picks its batch size for
the best goodput on what it got, as in Pollux. GPU types are the cluster's GPU models.

**Heterogeneity here is synthetic.** The artifact's per-type tables (RTX, A100) are not
redistributable, so every type uses the same application tables with step and sync times
divided by the type's speed factor (``replay --speed MODEL=F``); a job's agent fits its model
to the tables' own times, so its goodput on type k is the fitted goodput × speed_k — the
bootstrap of Sia's matrix (one-GPU throughput ratios) is exact under this construction.

Choices where the paper's simulator is not node-exact: a configuration is mapped to GPUs
after the solve — a job whose configuration did not change keeps its GPUs; a one-node
configuration goes to the node of its type with the fewest free GPUs that still fit it; a
multi-node one takes that many fully free nodes. A configuration that cannot be mapped so
(fragmentation) leaves the job waiting for the interval. A solve that fails keeps every
allocation and is counted in the run's report (``fallbacks``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.snapshot import Snapshot
from schedlab.perf.goodput.job import RESTART_SECONDS, GoodputJob
from schedlab.policies.goodput.interval import IntervalPolicy
from schedlab.policies.goodput.sia_configs import Config, GpuPool, config_space
from schedlab.policies.goodput.sia_ilp import LAMBDA_N, solve_sia
from schedlab.policies.goodput.sia_matrix import (
    DEFAULT_PENALTY,
    PENALTY,
    SiaJob,
    goodput_matrix,
    ilp_coefficients,
)

#: Most replicas a job may get.
MAX_REPLICAS = 64


class Sia(IntervalPolicy):
    """See the module docstring. Parameters: ``p`` (the power of the goodputs, −0.5),
    ``lambda_n`` (the idling penalty, 1.1), ``project`` (bootstrap unprofiled types, on)."""

    name = "sia"
    summary = "Sia: goodput per GPU type and configuration, one ILP per interval (SOSP '23)"
    adaptive = True
    elastic = True  # it sizes every job itself

    def __init__(
        self,
        slot: float | None = None,
        interference: float = 0.0,
        restart: float = RESTART_SECONDS,
        p: float = -0.5,
        lambda_n: float = LAMBDA_N,
        project: bool = True,
    ) -> None:
        super().__init__(slot, interference, restart)
        if p == 0 or not math.isfinite(p):
            raise ValueError(f"'p' must be a non-zero number (got {p})")
        self.p, self.lambda_n, self.project = float(p), float(lambda_n), bool(project)

    def setup(self, ctx) -> None:
        models = sorted({int(self.cluster.model[n]) for n in self.nodes})
        self.pool_nodes = {
            m: [n for n in self.nodes if int(self.cluster.model[n]) == m] for m in models
        }
        self.pools = [
            GpuPool(
                GPU_MODELS[m], len(ns), min(self.node_gpus[n] for n in ns)
            )  # uniform nodes assumed; a mixed type uses its smallest node
            for m, ns in self.pool_nodes.items()
        ]
        self.pool_model = {GPU_MODELS[m]: m for m in models}
        self.configs: list[Config] = config_space(self.pools)
        self.config_gpus = np.array([c.gpus for c in self.configs])
        names = [p.name for p in self.pools]
        self.config_pool = np.array([names.index(c.pool) for c in self.configs])
        self.capacity = np.array(
            [sum(self.node_gpus[n] for n in self.pool_nodes[m]) for m in models]
        )
        self.speed = {p.name: self._speed(self.pool_model[p.name]) for p in self.pools}
        self.profiled: dict[int, set[str]] = {}
        self.fallbacks = 0

    def _speed(self, model: int) -> float:
        return self.goodput.factor(model) if self.goodput is not None else 1.0

    # -- one job's row ---------------------------------------------------------------------
    def _current_config(self, job: int, nodes: list[int]) -> int:
        if not nodes:
            return -1
        model = int(self.cluster.model[nodes[0]])
        key = (GPU_MODELS[model], len(set(nodes)), len(nodes))
        for i, c in enumerate(self.configs):
            if (c.pool, c.nodes, c.gpus) == key:
                return i
        return -1

    def _sia_job(self, job: int, now: float, current: int) -> SiaJob:
        state = self.state[job]
        allowed = {GPU_MODELS[int(self.cluster.model[n])] for n in self.allowed_nodes(job)}
        app = state.app if isinstance(state, GoodputJob) else None
        if app is None:
            limit = min(int(self.jobs.num_gpus[job]), MAX_REPLICAS)
        elif app.name == "ncf":
            limit = 1
        else:
            profiled = state.max_profiled_replicas  # type: ignore[union-attr]
            limit = min(max(2 * profiled, 1), MAX_REPLICAS, app.max_batch_size // app.min_local_bsz)
        max_replicas = {p.name: (limit if p.name in allowed else 0) for p in self.pools}
        models = {}
        speedup = state.speedup_fn() if isinstance(state, GoodputJob) else None
        if speedup is not None:
            for pool in self.profiled.get(job, set()):
                models[pool] = self._scaled(speedup, self.speed[pool])
        return SiaJob(
            models=models,
            max_replicas=max_replicas,
            min_replicas=0,
            current=current,
            age=now - float(self.jobs.submit_time[job]),
            restarts=int(state.num_restarts or 0),
            penalty=PENALTY.get(app.name, DEFAULT_PENALTY) if app is not None else DEFAULT_PENALTY,
        )

    @staticmethod
    def _scaled(speedup, factor: float):
        return lambda nodes, gpus: np.asarray(speedup.raw(nodes, gpus)) * factor

    # -- one decision ------------------------------------------------------------------------
    def allocate(
        self, snap: Snapshot, active: list[int], current: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        if not active:
            return {}
        now = snap.now
        cur = {j: self._current_config(j, current.get(j, [])) for j in active}
        rows = [self._sia_job(j, now, cur[j]) for j in active]
        rate = {p.name: self.speed[p.name] for p in self.pools}
        goodput = goodput_matrix(rows, self.configs, self.pools, rate, self.project)
        coeff = ilp_coefficients(goodput, self.p)
        locked = {
            r: cur[j]
            for r, j in enumerate(active)
            if cur[j] >= 0 and getattr(self.state[j], "rescale_time", 0.0) > 0
        }
        result = solve_sia(
            coeff,
            self.config_gpus,
            self.config_pool,
            self.capacity,
            p=self.p,
            lambda_n=self.lambda_n,
            locked=locked,
        )
        if result is None:
            self.fallbacks += 1
            return {j: list(a) for j, a in current.items() if j in set(active)}
        chosen = {j: int(result.config[r]) for r, j in enumerate(active)}
        out = {j: list(current[j]) for j in active if chosen[j] >= 0 and chosen[j] == cur[j]}
        free = {n: self.node_gpus[n] for n in self.nodes}
        for nodes in out.values():
            for n in nodes:
                free[n] -= 1
        todo = sorted(
            (j for j in active if chosen[j] >= 0 and j not in out),
            key=lambda j: (-self.configs[chosen[j]].gpus, j),  # larger first, then job order
        )
        for j in todo:
            nodes = self._map(self.configs[chosen[j]], free)
            if nodes is not None:
                out[j] = nodes
        for j, nodes in out.items():
            state = self.state[j]
            pool = GPU_MODELS[int(self.cluster.model[nodes[0]])]
            self.profiled.setdefault(j, set()).add(pool)
            if isinstance(state, GoodputJob):
                state.speed = self.speed[pool]
        return out

    def _map(self, config: Config, free: dict[int, int]) -> list[int] | None:
        """GPUs for ``config`` from ``free`` (updated), or None when it does not fit so."""
        nodes = self.pool_nodes[self.pool_model[config.pool]]
        if config.nodes == 1:
            fits = [n for n in nodes if free[n] >= config.gpus]
            if not fits:
                return None
            node = min(fits, key=lambda n: (free[n], n))
            free[node] -= config.gpus
            return [node] * config.gpus
        whole = [n for n in nodes if free[n] == self.node_gpus[n]][: config.nodes]
        if len(whole) < config.nodes:
            return None
        per = config.gpus // config.nodes
        out = []
        for n in whole:
            free[n] -= per
            out += [n] * per
        return out

    def report(self) -> dict[str, Any]:
        return {**super().report(), "fallbacks": self.fallbacks}
