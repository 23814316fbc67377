"""The ElasticFlow paper's ablations, each one part of ElasticFlow on top of plain EDF.

- ``edf-ac``: EDF with admission control. Arrivals are admitted exactly as ElasticFlow admits them
  (every admitted deadline must still hold at minimum satisfactory shares, planned within
  ElasticFlow's per-model caps), but admitted jobs are then sized the EDF way — earliest deadline
  first, each up to EDF's cap min(64, batch size, cluster) — with no hand-out. It pays no
  per-round overhead by default, like the artifact's EDF.
- ``edf-elastic``: EDF with elastic scaling — ElasticFlow's minimum satisfactory shares, caps and
  hand-out of idle GPUs (``rule``, default ``gpu-time``), without admission control: every
  arrival is admitted. It pays ElasticFlow's per-round overhead (``round_overhead``, ``auto``).

The plain ``edf-greedy`` (EDF with greedy GPU counts) completes the paper's set.
"""

from __future__ import annotations

from schedlab.model.snapshot import Snapshot
from schedlab.policies.elastic.admission import PlanRequest
from schedlab.policies.elastic.edf_greedy import greedy_sizes, job_levels
from schedlab.policies.elastic.elasticflow import ElasticFlow
from schedlab.policies.elastic.planning import FreeTimeline, Plan
from schedlab.policies.scheduler import ReplayContext


class EdfAdmissionControl(ElasticFlow):
    name = "edf-ac"
    summary = "EDF greedy GPU counts behind ElasticFlow's admission control (ablation)"

    def __init__(self, round_overhead: str = "0", slot: float | None = None) -> None:
        super().__init__(admission=True, handout=False, round_overhead=round_overhead, slot=slot)

    def reset(self, ctx: ReplayContext) -> None:
        super().reset(ctx)
        # EDF's own cap: min(64, batch size, cluster), even past where throughput peaks.
        self.greedy_cap, self.greedy_levels = job_levels(self.name, ctx, "table")

    def _targets(
        self,
        snap: Snapshot,
        requests: dict[int, PlanRequest],
        plans: dict[int, Plan],
        timeline: FreeTimeline,
    ) -> dict[int, int]:
        order = sorted(
            self.admitted, key=lambda j: (requests[j].deadline, snap.jobs.submit_time[j], j)
        )
        target = greedy_sizes(order, self.greedy_cap, snap.cluster.total_gpus, self.greedy_levels)
        for job in snap.running().tolist():
            target.setdefault(int(job), 0)  # running, but no GPUs left for it: preempted
        return target


class EdfElastic(ElasticFlow):
    name = "edf-elastic"
    summary = "ElasticFlow's minimum shares and hand-out without admission control (ablation)"

    def __init__(
        self, rule: str = "gpu-time", round_overhead: str = "auto", slot: float | None = None
    ) -> None:
        super().__init__(
            rule=rule, admission=False, handout=True, round_overhead=round_overhead, slot=slot
        )
