"""The whole-job placement hook: a JobPlacementPolicy decides every GPU job of a replay itself,
sees the job's index and the run's topology, and is refused without a topology."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from schedlab.cli import main
from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.policies.placement.job_placement import (
    JobPlacementPolicy,
    JobRequest,
    free_gpus_by_node,
    lowest_free_gpus,
)

TOPOLOGY = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
TRACE = "job_id,submit_time,num_gpus,duration\na,0,6,100\nb,10,4,100\nc,20,2,50\n"


class LastNodeFirst(JobPlacementPolicy):
    """Fills nodes from the last one backwards: an order no per-node policy here produces."""

    name = "test-last-node-first"
    summary = "test policy"
    seen: ClassVar[list[tuple[int, int]]] = []

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        assert self.ctx.topology is not None and self.ctx.network is not None
        type(self).seen.append((request.job, request.num_gpus))
        free = free_gpus_by_node(state, request, self.model_bits)
        chosen, left = [], request.num_gpus
        for node in range(len(free) - 1, -1, -1):
            take = min(int(free[node]), left)
            if take:
                chosen.append((node, lowest_free_gpus(state, node, take)))
                left -= take
            if left == 0:
                return tuple(chosen)
        return None


def _run(tmp_path: Path, *extra: str) -> int:
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    plugin = f"{__name__}:LastNodeFirst"
    args = ["replay", "--trace", str(trace), "--policy", "fifo", "--plugin", plugin]
    args += ["--placement", "test-last-node-first", "--out", str(tmp_path / "out"), *extra]
    return main(args)


def test_whole_job_placement_decides_every_gpu_job(tmp_path: Path) -> None:
    LastNodeFirst.seen = []
    assert _run(tmp_path, "--topology", TOPOLOGY) == 0
    # a (6 GPUs) takes node 3 and two GPUs of node 2; b (4) must wait for a; c (2) fits beside a
    # but FIFO keeps it behind b.
    decided = [seen for seen in LastNodeFirst.seen if seen[0] >= 0]  # not the empty-state probes
    assert decided[:1] == [(0, 6)]
    assert {(0, 6), (1, 4), (2, 2)} <= set(decided)
    rows = (tmp_path / "out" / "jobs.csv").read_text().splitlines()
    assert len(rows) == 4 and all(",completed," in r for r in rows[1:])


def test_whole_job_placement_refused_without_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, "--cluster", "4x4") == 2
    assert "needs the network under the cluster: give --topology" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_shape_the_placement_cannot_place_even_on_the_empty_network_is_rejected(
    tmp_path: Path,
) -> None:
    """vclos on 4 leaves × 8 GPUs with 2 spines cannot hold 12 GPUs (not whole leaves, more than
    a leaf, and 3 leaves × 4 GPUs would need 4 spines): the job is rejected at arrival instead of
    blocking the FIFO queue for ever, and the 4-GPU job behind it runs."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nbig,0,12,100\nsmall,1,4,100\n")
    out = tmp_path / "out"
    topology = "leafspine:leaves=4,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
    args = ["replay", "--trace", str(trace), "--policy", "fifo", "--placement", "vclos"]
    assert main([*args, "--topology", topology, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["rejected"], summary["completed"], summary["unfinished"]) == (1, 1, 0)
    why = "placement 'vclos' cannot place 12 GPUs on this network even when it is empty"
    assert summary["rejected_reasons"] == {why: 1}
    assert why in (out / "jobs.csv").read_text()


def test_a_fixed_geometry_is_kept_or_the_job_is_turned_away(tmp_path: Path) -> None:
    """LastNodeFirst ignores geometry: 8 GPUs from the last node backwards is 4 + 4 on nodes 3
    and 2, which is what '2 nodes × 4' asks, so that job runs; '4 nodes × 2' it can never give
    (it always fills whole nodes), so that job is rejected with the shape in the reason."""
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,gpus_per_node,num_nodes\n"
        "fits,0,8,100,4,2\nspread,1,8,100,2,4\n"
    )
    plugin = f"{__name__}:LastNodeFirst"
    args = ["replay", "--trace", str(trace), "--policy", "fifo", "--plugin", plugin]
    args += ["--placement", "test-last-node-first", "--topology", TOPOLOGY]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["completed"], summary["rejected"]) == (1, 1)
    why = (
        "placement 'test-last-node-first' cannot place 8 GPUs as 4 node(s) × 2 on this network "
        "even when it is empty"
    )
    assert summary["rejected_reasons"] == {why: 1}
