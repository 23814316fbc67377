"""Small seeded workloads for the conformance suite: a few nodes, tens of pods or jobs."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.pods import PodTable
from schedlab.traces.cluster_spec import parse_cluster_spec

#: Two GPU models and node widths, so GPU choice, model masks and multi-node gangs all matter.
CLUSTER_SPEC = "3x8:V100+2x4:T4"

#: The network under the cluster for placements that need one: 4 leaves × 2 hosts × 4 GPUs
#: (32 GPUs) and 4 spines, so jobs of 8 GPUs may cross leaves.
TOPOLOGY_SPEC = "leafspine:leaves=4,spines=4,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
#: The same hosts under an optical circuit switch, for placements that set circuits.
OCS_TOPOLOGY_SPEC = "ocs:leaves=4,spines=2,hosts_per_leaf=2,g=4,m=4,nic_gbps=100"


def small_cluster() -> Cluster:
    return parse_cluster_spec(CLUSTER_SPEC)


def small_pods(seed: int, count: int = 40) -> PodTable:
    """Pods of every shape pack sees: CPU-only, GPU-sharing, one and several whole GPUs, some
    bound to one model."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(4, size=count, p=[0.1, 0.3, 0.4, 0.2])
    num_gpu = np.select([kind == 0, kind == 3], [0, rng.choice([2, 4], size=count)], 1)
    share = np.where(kind == 1, rng.choice([250, 500], size=count), GPU_MILLI)
    share = np.where(num_gpu == 0, 0, share)
    v100 = 1 << model_index("V100")
    mask = np.where(rng.random(count) < 0.2, v100, ANY_MODEL_MASK)
    return PodTable.from_columns(
        name=[f"pod{i}" for i in range(count)],
        cpu_milli=rng.integers(1, 9, size=count) * 1000,
        memory_mib=rng.integers(1, 17, size=count) * 1024,
        num_gpu=num_gpu,
        gpu_milli=share,
        model_mask=mask,
    )


def small_jobs(seed: int, count: int = 30) -> JobTable:
    """Training jobs arriving faster than the cluster runs them (queues, preemption), half with
    deadlines, and one that can never run (more GPUs than the cluster has): it must be rejected,
    not left waiting."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(100.0, size=count)).round()
    gpus = rng.choice([1, 1, 2, 4, 8], size=count)
    gpus[count // 2] = 64
    duration = rng.lognormal(np.log(1200.0), 0.6, size=count).round() + 60
    deadline = np.where(rng.random(count) < 0.5, submit + 3 * duration, np.inf)
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(count)],
        submit_time=submit,
        num_gpus=gpus,
        duration=duration,
        deadline=deadline,
        user=[f"u{i % 3}" for i in range(count)],
    )
