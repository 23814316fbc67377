"""S1–S8 against the fake Slurm (every commit), and the oracle on hand-made cases that break it."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.testing.faultinject import invariants
from schedlab.testing.faultinject.invariants import Execution
from schedlab.testing.faultinject.scenarios import SCENARIOS, run_scenario


@pytest.mark.parametrize("seed", [1])
@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_keeps_every_invariant(name: str, seed: int, tmp_path: Path) -> None:
    result = run_scenario(name, tmp_path, seed=seed)
    assert result.violations == []
    assert result.completed == 16
    if name in ("S1", "S2"):
        assert result.restarts >= 1  # the lost node's jobs were requeued and ran again
    if name == "S5":
        assert result.crashes >= 5
    if name in ("S3", "S6", "S8"):
        assert any(r["action"] == "error" for r in result.journal)


def test_the_oracle_catches_a_scheduler_that_forgets_requeued_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation check: a scheduler that never starts a job Slurm requeued leaves S1's jobs from
    the lost node pending for good, and the oracle says so."""
    from schedlab.model.snapshot import Start
    from schedlab.serve.apply import Applier

    real = Applier.apply

    def forgetful(self, view, decisions):
        keep = [
            d
            for d in decisions
            if not (isinstance(d, Start) and view.infos[d.job].restart_count > 0)
        ]
        return real(self, view, keep)

    monkeypatch.setattr(Applier, "apply", forgetful)
    result = run_scenario("S1", tmp_path, seed=1, deadline=300.0)
    assert any("ended PENDING" in v for v in result.violations)


def test_the_oracle_catches_decisions_on_unknown_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation check: a scheduler that acts on its last good view while reads fail."""
    from schedlab.serve import loop

    real = loop.Server.read

    def stale(self):
        try:
            self._last = real(self)
        except Exception:
            if getattr(self, "_last", None) is None:
                raise
        return self._last

    monkeypatch.setattr(loop.Server, "read", stale)
    result = run_scenario("S8", tmp_path, seed=1)
    assert any("on unknown state" in v for v in result.violations)


def _run(job, start, stop, ended=True, node="n1", gpus=(0,), restart=0) -> Execution:
    return Execution(job, restart, node, gpus, start, stop, ended)


def test_invariants_by_hand() -> None:
    assert invariants.nothing_lost([1, 2, 3], {1: "COMPLETED", 2: "FAILED"}) == [
        "job 2 ended FAILED",
        "job 3 ended never",
    ]
    assert invariants.nothing_lost([1], {1: "CANCELLED"}, cancelled=[1]) == []
    overlap = [_run(1, 0, 50, ended=False), _run(1, 40, 90, restart=1)]
    assert invariants.nothing_doubled(overlap, {1: 1})[0].startswith("job 1: runs overlap")
    assert invariants.nothing_doubled(overlap, {1: 1}, partitioned={1: 50}) == []
    assert "2 executions, Slurm counts 0" in invariants.nothing_doubled(overlap, {})[1]
    twice = [_run(1, 0, 10), _run(1, 20, 30, restart=1)]
    assert "2 executions wrote 'end'" in invariants.nothing_doubled(twice, {1: 1})[0]
    crowded = [_run(1, 0, 10, gpus=(0, 1)), _run(2, 5, 15, gpus=(1,))]
    assert invariants.capacity(crowded, {"n1": 8}) == ["n1 GPU 1: jobs 1 and 2 at 5"]
    assert invariants.capacity([_run(1, 0, 10, gpus=(0, 1, 2))], {"n1": 2})
    assert invariants.capacity([_run(1, 0, 10), _run(2, 10, 20)], {"n1": 1}) == []
    journal = [
        {"time": 5.0, "job": 1, "action": "start", "nodes": ["n1"]},
        {"time": 7.0, "job": 1, "action": "start", "nodes": ["n1"]},
        {"time": 9.0, "job": 2, "action": "error"},
    ]
    assert invariants.no_action_on_unknown_state(journal, [(6.0, 8.0)]) == [
        "start of job 1 at 7 on unknown state"
    ]
    assert invariants.no_double_release(journal, {}) == [
        "job 1 released again at 7 without a requeue or hold"
    ]
    assert invariants.no_double_release(journal, {1: [6.0]}) == []
    assert invariants.never_on_a_down_node(journal, {"n1": [(6.0, 8.0)]}) == [
        "job 1 started on n1, down at 7"
    ]


def test_a_launch_that_never_reached_the_script_is_not_an_execution() -> None:
    """Slurm's zero-length NODE_FAIL run with no marker near it (the launch failed on an
    unreachable node) counts as a restart without an execution; a long one does not."""
    runs = [_run(1, 100, 120, restart=1)]
    records = [(1, "NODE_FAIL", 10.0, 10.0), (1, "COMPLETED", 100.0, 120.0)]
    unlaunched = invariants.unlaunched_runs(records, runs)
    assert unlaunched == {1: 1}
    assert invariants.nothing_doubled(runs, {1: 1}, unlaunched=unlaunched) == []
    assert "1 executions, Slurm counts 1" in invariants.nothing_doubled(runs, {1: 1})[0]
    ran = [_run(1, 10, 50, ended=False), *runs]
    assert invariants.unlaunched_runs([(1, "NODE_FAIL", 10.0, 50.0)], ran) == {}
    assert invariants.unlaunched_runs([(1, "NODE_FAIL", 10.0, 10.5)], ran) == {}


def test_the_live_window_of_unknown_state_allows_for_slurms_message_timeout(
    tmp_path: Path,
) -> None:
    # a start journaled under a cycle's begin time, 5 s before the heal of a 30 s blackhole:
    # inside the window when it ends 1 s before the heal, outside when the client's 10 s
    # MessageTimeout (Slurm's default) is allowed for
    from schedlab.testing.faultinject.live import message_timeout

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=dev\nSlurmctldPort=6817\n")
    assert message_timeout(conf) == 10.0
    conf.write_text("ClusterName=dev\nMessageTimeout=5\n")
    assert message_timeout(conf) == 5.0
    t0, healed, held = 1000.0, 1030.0, 10.0
    start = [{"action": "start", "job": 1, "time": healed - 5.0}]
    assert invariants.no_action_on_unknown_state(start, [(t0 + 1, healed - 1)])
    assert not invariants.no_action_on_unknown_state(start, [(t0 + 1, healed - held - 1)])
