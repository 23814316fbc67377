"""Shared helpers of the sharing-engine tests: workloads from rows, the pack/sharing comparison."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from conftest import make_pods
from schedlab.engines.pack import PackConfig, run_pack
from schedlab.engines.shared_time import SharingConfig, SharingResult, run_sharing
from schedlab.model.cluster import Cluster
from schedlab.model.pods import PodTable
from schedlab.model.shared_pods import SharedWorkload


def workload(rows: Sequence[tuple]) -> SharedWorkload:
    """From ``(name, cpu, mem, num_gpu, gpu_milli, qos, arrival, work)`` rows."""
    pods = make_pods([r[:5] for r in rows])
    return SharedWorkload(
        pods,
        np.array([r[6] for r in rows], dtype=np.float64),
        np.array([r[7] for r in rows], dtype=np.float64),
        np.array([r[5] for r in rows], dtype=object),
    )


def assert_pack_mode_is_pack(cluster: Cluster, pods: PodTable, policy: str, seed: int) -> None:
    """The sharing engine in pack mode places every pod where ``schedlab pack`` does, with the
    same unallocated-GPU and fragmentation curves."""
    a = run_pack(cluster, pods, PackConfig(policy, seed))
    b: SharingResult = run_sharing(
        cluster, SharedWorkload.at_time_zero(pods), SharingConfig(policy, mode="pack", seed=seed)
    )
    assert b.workload.pods.name.tolist() == a.pods.name.tolist()
    assert b.node.tolist() == a.node.tolist()
    assert b.gpus == a.gpus
    assert np.array_equal(b.series["arrived_milli"], a.arrived_milli)
    unallocated = 100.0 - 100.0 * b.series["allocated_milli"] / b.capacity_milli
    assert np.array_equal(unallocated, a.unallocated_pct)
    assert np.array_equal(b.series["frag_milli"], a.frag_milli)
