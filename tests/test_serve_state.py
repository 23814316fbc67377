"""serve keeps its policy objects across cycles, carries a stateful policy's state from one
cycle to the next, and takes it back from the journal after a restart: a restarted server decides
as one that never stopped."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from schedlab.model.snapshot import Decision, Snapshot, Start
from schedlab.policies.plugins import forget, reference_of, register
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import POLICY_STATE, ServeConfig, Server

T0 = 1_000_000.0


class Patience(SchedulingPolicy):
    """Jobs passed over at more decision points go first (then earlier submit): its order
    depends on every decision it made before, so it is stateful."""

    name = "test-patience"
    summary = "most passed over first"
    engines = frozenset({"replay", "serve"})
    stateful = True

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.waits = {str(job_id): 0 for job_id in ctx.jobs.job_id.tolist()}  # type: ignore[union-attr]

    def export_state(self) -> dict[str, Any]:
        return {"waits": {j: n for j, n in self.waits.items() if n}}

    def import_state(self, state: Mapping[str, Any]) -> None:
        for job_id, n in (state.get("waits") or {}).items():
            if job_id in self.waits:
                self.waits[job_id] = int(n)

    def decide(self, snap: Snapshot) -> list[Decision]:
        ids = snap.jobs.job_id
        order = sorted(
            snap.pending().tolist(), key=lambda j: (-self.waits[ids[j]], snap.jobs.submit_time[j])
        )
        scratch = snap.state.copy()
        out: list[Decision] = []
        for j in order:
            alloc = self.ctx.placer.place(int(snap.jobs.num_gpus[j]), 0, 0, -1, scratch)  # type: ignore[union-attr]
            if alloc is None:
                self.waits[ids[j]] += 1
                continue
            for node, gpus in alloc:
                scratch.allocate(node, gpus, 0, 0, 1000, len(gpus))
            out.append(Start(j, alloc))
        return out


@pytest.fixture(autouse=True)
def patience_plugin():
    register(Patience, reference_of(Patience), "--plugin")
    yield
    forget(Patience.name)


def starts(path: Path, cycle: int, skip: int = 0) -> list[tuple[int, list[str]]]:
    """The starts journaled in ``cycle`` (of the process that wrote after the first ``skip``
    records: every process numbers its cycles from 1)."""
    return [
        (r["job"], r["nodes"])
        for r in list(read_journal(path))[skip:]
        if r["action"] == "start" and r["cycle"] == cycle
    ]


def records(path: Path) -> int:
    return len(list(read_journal(path)))


def run_cycles(
    fake: FakeSlurm, config: ServeConfig, path: Path, steps: list[Callable[[], None]]
) -> Server:
    """A server on ``path`` running one cycle per step, each step first changing Slurm."""
    server = Server(fake, config, Journal(path), clock=lambda: T0 + 100)
    for step in steps:
        step()
        server.cycle()
    server.journal.close()
    return server


def patience_cluster() -> FakeSlurm:
    return FakeSlurm(
        [fake_node("node1", gpus=8)],
        [fake_job(1, 8, T0), fake_job(2, 8, T0 + 1)],
        start_on_release=True,
    )


def test_a_stateful_policy_keeps_its_state_across_cycles_and_restarts(tmp_path: Path) -> None:
    config = ServeConfig("test-patience")

    def script(fake: FakeSlurm) -> list[Callable[[], None]]:
        # cycle 1: job 1 starts, job 2 waits; cycle 2: job 3 arrives (submitted earlier than
        # job 2), both wait; cycle 3: job 1 has finished: one of them may start.
        return [
            lambda: None,
            lambda: fake.jobs.update({3: fake_job(3, 8, T0 - 50)}),
            lambda: fake.finish(1),
        ]

    never_stopped = patience_cluster()
    steps = script(never_stopped)
    run_cycles(never_stopped, config, tmp_path / "a.jsonl", steps)
    # job 2 was passed over twice, job 3 once: job 2 goes first although job 3 is older
    assert starts(tmp_path / "a.jsonl", 3) == [(2, ["node1"])]

    restarted = patience_cluster()
    steps = script(restarted)
    run_cycles(restarted, config, tmp_path / "b.jsonl", steps[:2])  # killed after cycle 2
    before = records(tmp_path / "b.jsonl")
    run_cycles(restarted, config, tmp_path / "b.jsonl", steps[2:])  # a new process, same journal
    assert starts(tmp_path / "b.jsonl", 1, before) == [(2, ["node1"])]
    states = [r["state"] for r in read_journal(tmp_path / "b.jsonl") if r["action"] == POLICY_STATE]
    # after cycle 2 (journaled by the first process), then after the restarted one's cycle
    assert states[-2:] == [
        {"scheduler": {"waits": {"2": 2, "3": 1}}},
        {"scheduler": {"waits": {"2": 2, "3": 2}}},
    ]

    forgetful = patience_cluster()
    steps = script(forgetful)
    run_cycles(forgetful, config, tmp_path / "c.jsonl", steps[:2])
    run_cycles(forgetful, config, tmp_path / "fresh.jsonl", steps[2:])  # the journal is lost
    assert starts(tmp_path / "fresh.jsonl", 1) == [(3, ["node1"])]  # what state changes


def random_cluster() -> FakeSlurm:
    nodes = [fake_node(f"node{i}", gpus=4) for i in range(1, 7)]
    jobs = [fake_job(k, 1, T0 + k) for k in range(1, 49)]
    return FakeSlurm(nodes, jobs, start_on_release=True)


def test_random_placement_continues_its_generator_after_a_restart(tmp_path: Path) -> None:
    config = ServeConfig("fifo", "random", seed=5)

    def script(fake: FakeSlurm) -> list[Callable[[], None]]:
        def finish(first: int) -> Callable[[], None]:
            return lambda: [fake.finish(j) for j in range(first, first + 6)]

        return [lambda: None, finish(1), finish(7), finish(13)]

    a, b = random_cluster(), random_cluster()
    run_cycles(a, config, tmp_path / "a.jsonl", script(a))
    steps = script(b)
    run_cycles(b, config, tmp_path / "b.jsonl", steps[:3])
    before = records(tmp_path / "b.jsonl")
    run_cycles(b, config, tmp_path / "b.jsonl", steps[3:])
    after_restart = starts(tmp_path / "b.jsonl", 1, before)
    assert len(after_restart) == 6 and after_restart == starts(tmp_path / "a.jsonl", 4)
    assert len({tuple(nodes) for _, nodes in after_restart}) > 1  # the draws chose the nodes
    states = [r["state"] for r in read_journal(tmp_path / "a.jsonl") if r["action"] == POLICY_STATE]
    # the generator moves on from cycle to cycle instead of starting from the seed each time
    rngs = [s["placement"]["rng"]["state"]["state"] for s in states]
    assert len(set(rngs)) == len(rngs) == 4
