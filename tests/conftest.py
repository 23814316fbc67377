"""Small builders shared by the tests: tiny clusters, pod tables, hand-set states, target workloads.

Test modules import the plain functions (``from conftest import make_cluster``); pytest puts this
folder on ``sys.path`` because it has no ``__init__.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import Cluster, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index, parse_gpu_spec, spec_mask
from schedlab.model.pods import PodTable
from schedlab.policies.placement.base import PodRequest, RunContext

# CI runs the same examples every time (a red CI must be reproducible); locally, hypothesis keeps
# exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The public traces live beside the checkout, never inside it.
SHARED_DIR = REPO_ROOT.parent / "shared"
ALIBABA_DIR = SHARED_DIR / "traces" / "alibaba-gpu-2023"
SHARED_MISSING_REASON = (
    "../shared/traces/alibaba-gpu-2023 not found: the public trace is not beside this checkout"
)


def exited_pid() -> int:
    """The pid of a process that has already exited (free unless the system reuses it)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def make_cluster(nodes: Sequence[tuple[str, int, int, int, str | None]]) -> Cluster:
    """Cluster from ``(name, cpu_milli, mem_mib, num_gpus, model)`` rows; model None/"" = no GPU."""
    return Cluster(
        names=np.array([n[0] for n in nodes], dtype=object),
        cpu_milli=np.array([n[1] for n in nodes], dtype=np.int64),
        memory_mib=np.array([n[2] for n in nodes], dtype=np.int64),
        num_gpus=np.array([n[3] for n in nodes], dtype=np.int64),
        model=np.array([model_index(n[4]) if n[4] else -1 for n in nodes], dtype=np.int64),
    )


def set_gpu_free(state: ClusterState, node: int, shares: Sequence[int]) -> None:
    """Set the free share of every real GPU of ``node`` by hand (padding slots stay 0).

    Bumps the node's version like a real change would, so caching policies notice.
    """
    n_gpus = int(state.cluster.num_gpus[node])
    if len(shares) != n_gpus:
        raise ValueError(f"node {node} has {n_gpus} GPUs, got {len(shares)} shares")
    row = np.zeros(state.gpu_free.shape[1], dtype=np.int64)
    row[:n_gpus] = shares
    state.set_gpu_free(node, row)


def set_cpu_free(state: ClusterState, node: int, cpu_milli: int) -> None:
    state.cpu_free[node] = cpu_milli
    state.touch(node)


def make_pods(rows: Sequence[tuple]) -> PodTable:
    """PodTable from ``(name, cpu_milli, mem_mib, num_gpu, gpu_milli[, gpu_spec])`` rows."""
    masks = [spec_mask(parse_gpu_spec(r[5] if len(r) > 5 else "")) for r in rows]
    return PodTable.from_columns(
        name=[r[0] for r in rows],
        cpu_milli=[r[1] for r in rows],
        memory_mib=[r[2] for r in rows],
        num_gpu=[r[3] for r in rows],
        gpu_milli=[r[4] for r in rows],
        model_mask=masks,
    )


def make_target(tasks: Sequence[tuple]) -> TargetWorkload:
    """TargetWorkload from ``(cpu_milli, num_gpu, gpu_milli, prob[, model_mask])`` rows."""
    return TargetWorkload(
        cpu_milli=np.array([t[0] for t in tasks], dtype=np.int64),
        num_gpu=np.array([t[1] for t in tasks], dtype=np.int64),
        gpu_milli=np.array([t[2] for t in tasks], dtype=np.int64),
        model_mask=np.array([t[4] if len(t) > 4 else ANY_MODEL_MASK for t in tasks], np.int64),
        prob=np.array([t[3] for t in tasks], dtype=np.float64),
        count=np.ones(len(tasks), dtype=np.int64),
    )


def pod(cpu: int, num_gpu: int = 0, share: int = 0, mem: int = 0, spec: str = "") -> PodRequest:
    """A PodRequest; ``share`` is the per-GPU milli share (1000 = whole GPU)."""
    return PodRequest(cpu, mem, num_gpu, share, spec_mask(parse_gpu_spec(spec)))


def make_ctx(cluster: Cluster, target: TargetWorkload, seed: int = 0) -> RunContext:
    return RunContext(cluster, target, np.random.default_rng(seed))


@pytest.fixture
def shared_traces() -> Path:
    """Folder of the public Alibaba GPU-2023 trace; skips the test when it is not there."""
    if not ALIBABA_DIR.is_dir():
        pytest.skip(SHARED_MISSING_REASON)
    return ALIBABA_DIR


#: Policies that read ../shared/data (power tables) when they are built.
NEEDS_ENERGY_DATA = frozenset({"pwr", "pwr+fgd"})


def _energy_data_found() -> bool:
    from schedlab.energy.data import data_dir
    from schedlab.errors import InputError

    try:
        data_dir()
    except InputError:
        return False
    return True


def policy_params(names: Sequence[str], *, networks: bool = False) -> list:
    """``names`` for ``parametrize``: the ones that need the public power tables skip, naming
    why, where ../shared/data is absent; whole-job network placements skip unless the test gives
    them a network (``networks``)."""
    missing = not _energy_data_found()
    return [
        pytest.param(
            n,
            marks=[
                pytest.mark.skipif(
                    missing and n in NEEDS_ENERGY_DATA,
                    reason=f"{n} reads the power tables in ../shared/data, which is not found",
                ),
                pytest.mark.skipif(
                    not networks and _needs_topology(n),
                    reason=f"{n} places whole jobs on a network (--topology), which this test's "
                    "runs do not have; its own replay tests and the conformance suite cover it",
                ),
            ],
        )
        for n in names
    ]


def _needs_topology(name: str) -> bool:
    """A built-in placement that refuses to run without ``--topology``."""
    from schedlab.policies.registry import placement_classes

    return bool(getattr(placement_classes().get(name), "requires_topology", False))
