"""Properties every sizing policy must keep, on random small clusters and traces."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayEngine
from schedlab.experiments.replay_run import jobs_frame
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.models import ThroughputTable
from schedlab.policies.registry import SIZING_POLICIES, make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec

#: Policies that never resize a job.
FIXED_SIZE = {"gandiva", "themis", "chronus", "lcs", "suspend-resume", "pollux-sim-tiresias"}
#: Policies of Pollux's simulator (and Sia): a job asking for more GPUs than the cluster has is
#: turned away at once, as their base does, rather than left waiting forever.
TURN_AWAY_OVERSIZED = FIXED_SIZE | {"optimus-oracle", "pollux", "sia"}
#: A small genetic search: the property is of the policy's answers, not of its search's depth.
PARAMS = {"pollux": {"generations": "3", "population": "8"}}

TABLE = ThroughputTable({("m", 8): {1: 10.0, 2: 18.0, 4: 30.0, 8: 40.0}})


@st.composite
def cases(draw):
    nodes = draw(st.integers(1, 3))
    per_node = draw(st.sampled_from([1, 2, 4, 8]))
    n = draw(st.integers(1, 12))
    submit = sorted(draw(st.lists(st.integers(0, 2000), min_size=n, max_size=n)))
    iters = draw(st.lists(st.integers(10, 20_000), min_size=n, max_size=n))
    gpus = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    slack = draw(st.lists(st.one_of(st.none(), st.integers(50, 5000)), min_size=n, max_size=n))
    deadline = [np.nan if s is None else t + s for t, s in zip(submit, slack, strict=True)]
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=submit,
        num_gpus=gpus,
        iterations=iters,
        model_name=["m"] * n,
        batch_size=[8] * n,
        deadline=deadline,
        duration=[np.nan] * n,
    )
    slot = draw(st.sampled_from([None, 60.0, 240.0]))
    return f"{nodes}x{per_node}:A100", jobs, slot


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_sizing_policies_keep_the_invariants(case) -> None:
    spec, jobs, slot = case
    cluster = parse_cluster_spec(spec)
    for name in SIZING_POLICIES:
        policy, placement = make_scheduler(name, slot=slot, params=PARAMS.get(name))
        # The engine raises PolicyError on any decision that over-allocates or is out of turn.
        rec = ReplayEngine(cluster, jobs, policy, placement, TABLE).run()
        label = f"{name} on {spec}, slot {slot}"
        assert (rec.ts_busy <= cluster.total_gpus).all(), label
        started = ~np.isnan(rec.first_start)
        assert (rec.first_start[started] >= rec.jobs.submit_time[started]).all(), label
        # Every job is accounted for, and every job ends: completed or rejected.
        ended = (rec.status == DONE) | (rec.status == REJECTED)
        assert ended.all(), f"{label}: unfinished {rec.jobs.job_id[~ended].tolist()}"
        # Jobs without a deadline are never rejected — unless the policy runs every job at
        # the count it asked for and that count is more than the cluster has.
        best_effort = np.isnan(rec.jobs.deadline)
        # Gavel runs jobs at their scale.
        if name in TURN_AWAY_OVERSIZED or name.startswith("gavel-"):
            best_effort &= rec.jobs.num_gpus <= cluster.total_gpus
        assert not (best_effort & (rec.status == REJECTED)).any(), label
        # Same inputs, same outputs.
        policy2, placement2 = make_scheduler(name, slot=slot, params=PARAMS.get(name))
        again = ReplayEngine(cluster, jobs, policy2, placement2, TABLE).run()
        assert jobs_frame(rec).equals(jobs_frame(again)), label
