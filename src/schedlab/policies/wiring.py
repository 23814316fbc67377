"""The one place where an engine turns policy names into started policy objects.

Pack, replay and serve all build their policies here (:func:`build`: the registry's refusals
included) and start them here (:meth:`Policies.start`): the seeded tie order among nodes, the
placement framework around the placement policy, the context, and every ``reset`` — in that order,
so that one seed means the same draws in every engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from schedlab.engines.decision_check import guarded, shown, who
from schedlab.errors import InputError, PolicyError
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.pods import PodTable
from schedlab.perf.models import PerfModel
from schedlab.policies.api import PACK, SERVE, PolicyContext, tie_order
from schedlab.policies.placement.base import PlacementPolicy, Placer
from schedlab.policies.placement.gang import GangPlacer
from schedlab.policies.plugins import load_references
from schedlab.policies.registry import DEFAULT_PLACEMENT, make_placement, make_scheduler
from schedlab.policies.scheduler import SchedulingPolicy


@dataclass(frozen=True)
class PolicyChoice:
    """What a run names: the policy (in pack: the placement policy), the placement a time-based
    policy uses, backfill, parameters, the round length, and the plugins to load first."""

    policy: str
    placement: str = DEFAULT_PLACEMENT
    backfill: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    slot: float | None = None
    plugins: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.policy + ("+backfill" if self.backfill else "")


def job_pods(jobs: JobTable) -> PodTable:
    """Jobs as whole-GPU pods, so the typical-task workload of fragmentation-aware placement
    policies can be derived the same way as in pack."""
    return PodTable.from_columns(
        name=jobs.job_id,
        cpu_milli=jobs.cpu_milli,
        memory_mib=jobs.memory_mib,
        num_gpu=jobs.num_gpus,
        gpu_milli=np.where(jobs.num_gpus > 0, GPU_MILLI, 0),
        model_mask=jobs.gpu_model_mask,
    )


@dataclass
class Policies:
    """The policy objects of one run: a placement policy and, except in pack, the time-based
    scheduler that places through it. The objects live as long as the run (in serve: as long as
    the process); :meth:`start` (re)starts them on a cluster and job table."""

    engine: str
    placement: PlacementPolicy
    scheduler: SchedulingPolicy | None = None
    placer: Placer | None = None

    def start(
        self,
        cluster: Cluster,
        rng: np.random.Generator,
        *,
        jobs: JobTable | None = None,
        perf: PerfModel | None = None,
        target: TargetWorkload | None = None,
        topology: Any = None,
        network: Any = None,
    ) -> PolicyContext:
        """Draw the tie order from ``rng``, reset the placement policy then the scheduler, and
        return the context they were given. ``target`` defaults to the jobs as pods."""
        if target is None and jobs is not None and len(jobs):
            target = TargetWorkload.from_pods(job_pods(jobs))
        tie_rank = tie_order(cluster, rng)
        ctx = PolicyContext(
            cluster, target, rng, jobs, perf, None, tie_rank, self.engine, topology, network
        )
        self.placer = Placer(self.placement, ctx, tie_rank)
        ctx = replace(ctx, placer=GangPlacer(self.placer))
        if self.scheduler is not None:
            guarded(self.scheduler, "reset", self.scheduler.reset, ctx)
        return ctx

    def export_state(self) -> dict[str, Any]:
        """The state both policies carry to their next start (empty: nothing to carry)."""
        placement = self.placement
        state = {"placement": guarded(placement, "export_state", placement.export_state)}
        if self.scheduler is not None:
            scheduler = self.scheduler
            state["scheduler"] = guarded(scheduler, "export_state", scheduler.export_state)
        return {k: v for k, v in state.items() if v}

    def export_json(self) -> dict[str, Any]:
        """:meth:`export_state` as it reads back from a journal; a policy whose state is not
        JSON is a PolicyError naming it (serve journals the state every cycle)."""
        state = self.export_state()
        try:
            return json.loads(json.dumps(state))  # type: ignore[no-any-return]
        except (TypeError, ValueError):
            culprit = next(
                p
                for p in (self.placement, self.scheduler)
                if p is not None and not _is_json(p.export_state())
            )
            raise PolicyError(
                f"{who(culprit)}: export_state() returned {shown(culprit.export_state())}, "
                "which is not JSON (serve journals it)"
            ) from None

    def import_state(self, state: Mapping[str, Any]) -> None:
        """Give both policies, just started, what :meth:`export_state` took."""
        placement, scheduler = self.placement, self.scheduler
        guarded(placement, "import_state", placement.import_state, state.get("placement") or {})
        if scheduler is not None:
            mine = state.get("scheduler") or {}
            guarded(scheduler, "import_state", scheduler.import_state, mine)


def _is_json(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def build(engine: str, choice: PolicyChoice) -> Policies:
    """Fresh policy objects for ``choice`` in ``engine``; every refusal is an InputError raised
    here, before any work (plugins are loaded first, so a worker process finds them too)."""
    load_references(choice.plugins)
    if engine == PACK:
        return Policies(engine, make_placement(choice.policy, engine))
    scheduler, placement = make_scheduler(
        choice.policy, choice.placement, choice.backfill, choice.params, choice.slot, engine
    )
    if engine == SERVE:
        for name, policy in ((choice.policy, scheduler), (choice.placement, placement)):
            if policy.network_control:
                raise InputError(
                    f"'{name}' needs {policy.network_control}, which Slurm cannot give (it only "
                    "chooses nodes): it runs in 'schedlab replay' only"
                )
    return Policies(engine, placement, scheduler)
