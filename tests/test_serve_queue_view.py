"""The queue in the policy's order with reasons and estimated starts (``serve status``).

Hand-computed plans of :func:`estimate_starts`, a property that no plan ever books a node past
its GPUs, and a real Server cycle on a fake partition: the queue file it writes lists the jobs in
the policy's order (sjf and fifo differ), and ``serve status`` shows it, in text and JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.serve.estimate import Ask, Hold, estimate_starts
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.queue_view import queue_path, read_queue
from schedlab.serve.status import gather, render

T0 = 1_700_000_000.0


def test_a_hand_computed_plan_with_and_without_strict_order() -> None:
    """Two 8-GPU nodes; node0 full until 100, node1 half full until 50. A (8 GPUs on one node,
    60 s), B (4 GPUs, 10 s), C (two nodes × 8, 10 s), in that order."""
    capacity = [8, 8]
    holds = [Hold(0, 8, 0, 100), Hold(1, 4, 0, 50)]
    queue = [Ask(8, 60, per_node=8, nodes=1), Ask(4, 10), Ask(16, 10, per_node=8, nodes=2)]
    a, b, c = estimate_starts(capacity, holds, queue, now=0.0)
    assert (a.start, a.waits_for, a.nodes) == (50, "resources", (1,))
    assert (b.start, b.waits_for, b.nodes) == (0, "now", (1,))  # backfills beside the holds
    # C needs both nodes: node0 from 100, node1 after A's reservation ends at 110; alone it
    # could have started at 100, so it waits for a job ahead of it.
    assert (c.start, c.waits_for, c.nodes) == (110, "priority", (0, 1))
    a, b, c = estimate_starts(capacity, holds, queue, now=0.0, in_order=True)
    assert (a.start, b.start, c.start) == (50, 100, 110)
    assert b.waits_for == "priority" and b.nodes == (0,)


def test_nodes_that_are_down_and_exclusive_jobs() -> None:
    """A node of capacity 0 (down or drained) lends nothing: a two-node job never fits on one
    node up; an exclusive job waits for a node with nothing on it."""
    wide, alone = Ask(16, 10, per_node=8, nodes=2), Ask(1, 10, exclusive=True)
    [never] = estimate_starts([8, 0], [], [wide], now=5.0)
    assert never.start is None and never.waits_for == "resources"
    [excl] = estimate_starts([8, 8], [Hold(0, 1, 0, 30), Hold(1, 2, 0, 20)], [alone], now=0.0)
    assert (excl.start, excl.nodes) == (20, (1,))
    [zero] = estimate_starts([8], [Hold(0, 8, 0, 30)], [Ask(0, 10)], now=3.0)
    assert zero.start == 3.0 and zero.waits_for == "now"


holds_st = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 8), st.integers(1, 50)), max_size=6)
asks_st = st.lists(
    st.tuples(st.integers(1, 16), st.integers(1, 40), st.booleans(), st.booleans()),
    min_size=1,
    max_size=8,
)


def _fits(capacity, booked, ask: Ask, t: float) -> bool:
    """Brute force: does ``ask`` fit at ``t`` for its whole time limit beside ``booked``
    (node, GPUs, start, end)? Use is highest at ``t`` or where a booking begins inside."""
    free = []
    for node, cap in enumerate(capacity):
        points = [t] + [s for n, _, s, _ in booked if n == node and t < s < t + ask.seconds]
        busy = max(sum(g for n, g, s, e in booked if n == node and s <= p < e) for p in points)
        free.append(cap - busy)
    if ask.exclusive:
        free = [f if f == cap else 0 for f, cap in zip(free, capacity, strict=True)]
    if ask.per_node:
        return sum(f >= ask.per_node for f in free) >= ask.nodes
    return sum(max(f, 0) for f in free) >= ask.gpus


@settings(max_examples=150, deadline=None)
@given(holds_st, asks_st, st.booleans())
def test_a_plan_is_the_earliest_and_never_books_a_node_past_its_gpus(holds, asks, in_order) -> None:
    """Against a brute-force oracle: every job starts at the first time (now, or when GPUs are
    given back; in strict order not before the job ahead) at which it fits beside the running
    jobs and the reservations ahead of it, gets GPUs of the shape it asked for, and no node is
    ever booked past its GPUs; a job that never fits gets no estimate."""
    capacity = [8, 8, 4]
    used = [0, 0, 0]
    booked: list[tuple[int, int, float, float]] = []
    for node, gpus, end in holds:  # holds that fit the nodes now
        if used[node] + gpus <= capacity[node]:
            used[node] += gpus
            booked.append((node, gpus, 0.0, float(end)))
    hs = [Hold(n, g, s, e) for n, g, s, e in booked]
    queue = [
        Ask(
            g,
            float(s),
            per_node=g if shaped and g <= 8 else 0,
            nodes=1 if shaped else 0,
            exclusive=x,
        )
        for g, s, shaped, x in asks
    ]
    plans = estimate_starts(capacity, hs, queue, now=0.0, in_order=in_order)
    assert len(plans) == len(queue)
    floor = 0.0
    for ask, est in zip(queue, plans, strict=True):
        times = sorted({floor} | {e for *_, e in booked if e > floor})
        first = next((t for t in times if _fits(capacity, booked, ask, t)), None)
        assert est.start == first, (ask, est, booked)
        if first is None:
            continue
        assert sum(g for _, g in est.where) == ask.gpus
        if ask.per_node:
            assert [g for _, g in est.where] == [ask.per_node] * ask.nodes
        booked += [(n, g, first, first + ask.seconds) for n, g in est.where]
        if in_order:
            floor = first
    for node, cap in enumerate(capacity):
        for p in {s for n, _, s, _ in booked if n == node}:
            assert sum(g for n, g, s, e in booked if n == node and s <= p < e) <= cap


def _server(tmp_path: Path, policy: str) -> tuple[FakeSlurm, Server, Path]:
    """One 8-GPU node run full by a job until T0 + 600; j2 (8 GPUs, 10 min) submitted before
    j3 (1 GPU, 1 min)."""
    jobs = [
        fake_job(1, 8, T0, state="RUNNING", held=False, nodes="node1", start=T0, time_limit=10),
        fake_job(2, 8, T0 + 1, time_limit=10),
        fake_job(3, 1, T0 + 2, time_limit=1),
        fake_job(4, 1, T0 + 3, eligible=T0 + 9999),  # not eligible yet
    ]
    fake = FakeSlurm([fake_node("node1")], jobs)
    path = queue_path(tmp_path, "gpu")
    config = ServeConfig(policy=policy, partition="gpu")
    journal = Journal(tmp_path / "serve.jsonl")
    return fake, Server(fake, config, journal, clock=lambda: T0 + 5, queue_file=path), path


@pytest.mark.parametrize(("policy", "order"), [("fifo", ["2", "3"]), ("sjf", ["3", "2"])])
def test_each_cycle_writes_the_queue_in_the_policy_order(
    tmp_path: Path, policy: str, order: list[str]
) -> None:
    fake, server, path = _server(tmp_path, policy)
    server.cycle()
    data = read_queue(path)
    assert data is not None
    assert [e["job"] for e in data["queue"]] == order
    assert data["order"] == "policy" and data["policy"] == policy and data["in_order"]
    assert all(
        e["reason"] == f"queued: waiting for policy {policy} to place it ({e['gpus']} GPUs)"
        for e in data["queue"]
    )
    starts = {e["job"]: e["estimated_start"] for e in data["queue"]}
    if policy == "fifo":  # j2 after the running job, j3 behind j2 (no backfill)
        assert starts == {"2": T0 + 600, "3": T0 + 1200}
    else:  # j3 first, then j2 once j3's minute is over too
        assert starts == {"3": T0 + 600, "2": T0 + 660}
    assert data["not_eligible"][0]["job"] == "4"
    assert data["not_eligible"][0]["reason"].startswith("not eligible: BeginTime")
    # serve status shows it, in order, with the estimate and the reason.
    lines = render(gather(tmp_path, "gpu", None), T0 + 6)
    k = next(i for i, line in enumerate(lines) if line.startswith("queue in the policy's order"))
    assert lines[k].startswith(f"queue in the policy's order ({policy}), as of cycle 1 at ")
    first, second = lines[k + 2].split(), lines[k + 3].split()
    assert [first[0], first[1], second[0], second[1]] == ["1", order[0], "2", order[1]]
    assert "2023-11-14 22:23:20 (in 10 min)" in lines[k + 2]
    gpus = {"2": 8, "3": 1}[order[0]]
    assert lines[k + 2].endswith(f"queued: waiting for policy {policy} to place it ({gpus} GPUs)")
    assert fake.calls and all(c[0] == "update" for c in fake.calls)  # only the reasons


def test_backfill_lets_a_short_job_start_before_a_blocked_head(tmp_path: Path) -> None:
    """fifo+backfill: the 1-GPU job is not held to strict order in the plan either."""
    jobs = [
        fake_job(1, 4, T0, state="RUNNING", held=False, nodes="node1", start=T0, time_limit=10),
        fake_job(2, 8, T0 + 1, time_limit=10),
        fake_job(3, 1, T0 + 2, time_limit=1),
    ]
    fake = FakeSlurm([fake_node("node1")], jobs)
    path = queue_path(tmp_path, None)
    server = Server(
        fake,
        ServeConfig(policy="fifo", backfill=True),
        Journal(None),
        clock=lambda: T0 + 5,
        queue_file=path,
    )
    server.cycle()  # backfill starts j3 now beside the running job
    data = read_queue(path)
    assert data is not None and not data["in_order"]
    assert [(e["job"], e["estimated_start"]) for e in data["queue"]] == [("2", T0 + 600)]
    assert data["queue"][0]["waits_for"] == "resources"


def test_the_json_carries_the_queue_and_a_bad_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, server, path = _server(tmp_path, "sjf")
    server.cycle()
    args = ["serve", "status", "--partition", "gpu", "--state-dir", str(tmp_path), "--json"]
    main(args)
    data = json.loads(capsys.readouterr().out)
    assert data["queue"] == json.loads(path.read_text())
    assert [e["position"] for e in data["queue"]["queue"]] == [1, 2]
    path.write_text('{"queue": [1, 2')
    with pytest.raises(InputError, match=r"serve-gpu\.queue\.json:1:\d+: not JSON"):
        read_queue(path)
    status = gather(tmp_path, "gpu", None)
    assert status.queue is None and status.queue_error is not None
    assert render(status, T0)[-1].startswith("queue: ")
