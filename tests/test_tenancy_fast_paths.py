"""The tenancy layer's shortcuts decide exactly what the long way decides: KAI's division
reused while only requests above their bounds move, the running jobs kept from one decision
to the next, the planning state's free GPUs without a copy, and the quick tests that rule a
reclaim out before its victims are ordered."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.model.snapshot import DONE, PENDING, RUNNING
from schedlab.policies.ordering.queue_scheduler import take
from schedlab.tenancy.kai_division import TreeDivider, divide, divide_tree
from schedlab.tenancy.policy import SharePolicy
from schedlab.tenancy.running import RunningIndex, sums_exactly
from schedlab.tenancy.scheduler import TenantScheduler, _Planning
from schedlab.tenancy.tree import QueueSpec, build_tree
from schedlab.traces.cluster_spec import parse_cluster_spec
from tenancy_cases import run

INF = float("inf")


def _same(a, b) -> bool:
    return [float(x).hex() for x in a] == [float(x).hex() for x in b]


# -- KAI's division and its bounds -------------------------------------------------------------
@st.composite
def divisions(draw):
    n = draw(st.integers(1, 6))
    total = draw(st.sampled_from([7.5, 16.0, 100.0, 640.0]))
    deserved = draw(
        st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.5, 5.0, 10.0]), min_size=n, max_size=n)
    )
    request = draw(
        st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0, 8.0, 40.0, 700.0]), min_size=n, max_size=n)
    )
    weight = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
    priority = draw(
        st.one_of(st.none(), st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n))
    )
    usage = draw(st.one_of(st.none(), st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    limit = draw(
        st.one_of(st.none(), st.lists(st.sampled_from([INF, 4.0, 12.0]), min_size=n, max_size=n))
    )
    k = draw(st.sampled_from([0.0, 1.0, 2.0]))
    rounding = draw(st.booleans())
    return total, deserved, request, weight, priority, usage, k, limit, rounding


@settings(max_examples=300, deadline=None)
@given(divisions(), st.data())
def test_a_request_moved_above_its_bound_changes_no_share(case, data):
    total, deserved, request, weight, priority, usage, k, limit, rounding = case
    bounds: list[float] = []
    fair = divide(total, deserved, request, weight, priority, usage, k, limit, rounding, bounds)
    assert _same(
        fair, divide(total, deserved, request, weight, priority, usage, k, limit, rounding)
    )
    movable = [q for q, b in enumerate(bounds) if b < INF]
    if not movable:
        return
    q = data.draw(st.sampled_from(movable))
    above = data.draw(st.floats(1e-6, 1000.0))
    moved = list(request)
    moved[q] = bounds[q] + 1e-9 * max(1.0, abs(bounds[q])) + above
    again = divide(total, deserved, moved, weight, priority, usage, k, limit, rounding)
    assert _same(again, fair)


def test_bounds_by_hand():
    # 16 GPUs, deserved 0, weights 1:1:2, requests 2, 16, 16: queue 0 is met (2), the others
    # share 14 as 14/3 and 28/3 in the first round: 4 + 1 remainder... queue 2 gets 9 and the
    # unit of the largest remainder; neither is met, so both may ask more freely.
    bounds: list[float] = []
    fair = divide(16, [0, 0, 0], [2, 16, 16], [1, 1, 2], bounds=bounds)
    assert sum(fair) == 16 and fair[0] == 2
    assert bounds[0] == INF  # met: any change to it moves the others' shares
    assert bounds[1] < 16 and bounds[2] < 16


@st.composite
def trees_and_requests(draw):
    two_levels = draw(st.booleans())
    specs = []
    if two_levels:
        for p in ("a", "b"):
            specs.append(
                QueueSpec(
                    p,
                    deserved={"gpu": draw(st.sampled_from([0, 4, 8]))},
                    weight=draw(st.sampled_from([1, 2])),
                )
            )
            for c in ("x", "y"):
                specs.append(
                    QueueSpec(f"{p}/{c}", deserved={"gpu": draw(st.sampled_from([0, 2, 4]))})
                )
    else:
        for i in range(draw(st.integers(2, 6))):
            specs.append(
                QueueSpec(
                    f"q{i}",
                    deserved={"gpu": draw(st.sampled_from([0, 2, 4, 8])), "cpu": 4},
                    weight=draw(st.sampled_from([0.5, 1, 2])),
                    priority=draw(st.sampled_from([0, 0, 1])),
                    limit={"gpu": draw(st.sampled_from([-1, 6, 24]))},
                )
            )
    tree = build_tree(specs)
    steps = draw(
        st.lists(st.tuples(st.integers(0, 10**6), st.integers(-12, 12)), min_size=1, max_size=40)
    )
    usage = draw(st.booleans())
    return tree, steps, usage


@settings(max_examples=120, deadline=None)
@given(trees_and_requests())
def test_the_reused_division_is_the_fresh_one_at_every_step(case):
    tree, steps, with_usage = case
    leaves = tree.leaves
    r = len(tree.resources)
    capacity = np.full(r, 32.0)
    own = np.zeros((len(tree), r))
    divider = TreeDivider(tree, 1.0)
    rng = np.random.default_rng(len(steps))
    for pick, change in steps:
        leaf = int(leaves[pick % len(leaves)])
        own[leaf] = np.maximum(0.0, own[leaf] + change)
        request = own.copy()
        for node in reversed(tree.preorder()[1:]):
            request[tree.parent[node]] += request[node]
        request = np.minimum(request, capacity[None, :])
        usage = rng.random((len(tree), r)) if with_usage and change % 3 == 0 else None
        got = divider.divide(capacity, request, usage)
        assert got.tobytes() == divide_tree(tree, capacity, request, usage).tobytes()


# -- the running jobs, kept -------------------------------------------------------------------
class _Engine:
    """Just what the index reads from a snapshot: the running jobs in the order they started,
    their status and when their run began."""

    def __init__(self, jobs: int) -> None:
        self.running: dict[int, None] = {}
        self.status = np.full(jobs, PENDING, dtype=np.int8)
        self.began = np.zeros(jobs)

    def start(self, job: int, now: float) -> None:
        self.running[job] = None
        self.status[job] = RUNNING
        self.began[job] = now

    def stop(self, job: int) -> None:
        del self.running[job]
        self.status[job] = DONE

    def snapshot(self) -> SimpleNamespace:
        runtime = SimpleNamespace(status=self.status, run_started=self.began)
        return SimpleNamespace(running_set=self.running, runtime=runtime)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 39), st.integers(0, 3)), max_size=80))
def test_the_index_follows_starts_and_ends(events):
    jobs = 40
    leaf_of = np.arange(jobs) % 3 + 1  # leaves 1..3 of a four-node tree
    demand = np.column_stack([np.arange(jobs) % 4 + 1.0, np.full(jobs, 0.5)])
    index = RunningIndex(leaf_of, demand, 4)
    engine = _Engine(jobs)
    now = 0.0
    for starting, job, later in events:
        now += later  # several starts may share a time
        decided: list[int] = []
        if starting and job not in engine.running and engine.status[job] == PENDING:
            engine.start(job, now)
            decided.append(job)
        elif not starting and job in engine.running:
            engine.stop(job)  # an end the index is not told of
        index.sync(engine.snapshot(), decided)
        running = np.fromiter(engine.running, dtype=np.int64, count=len(engine.running))
        assert index.array().tolist() == running.tolist()
        held = np.zeros((4, 2))
        np.add.at(held, leaf_of[running], demand[running])
        assert np.array_equal(index.holdings(), held)
        for leaf in (1, 2, 3):
            mine = [j for j in running.tolist() if leaf_of[j] == leaf]
            expected = sorted((float(engine.began[j]), -j) for j in mine)
            assert index.oldest_first[leaf] == expected


def test_demands_that_do_not_sum_exactly_are_summed_afresh():
    assert sums_exactly(np.array([[8.0, 0.5, 1.25]]))
    assert not sums_exactly(np.array([[1.0, 0.1]]))  # 100 millicores: not a binary fraction
    leaf_of = np.array([1, 1, 1])
    demand = np.array([[0.1], [0.2], [0.3]])
    index = RunningIndex(leaf_of, demand, 2)
    engine = _Engine(3)
    for j in (0, 1, 2):
        engine.start(j, 0.0)
    index.sync(engine.snapshot(), [0, 1, 2])
    assert not index.exact
    assert index.holdings()[1, 0] == np.bincount([0, 0, 0], [0.1, 0.2, 0.3])[0]


# -- the planning state ----------------------------------------------------------------------
def test_planned_free_gpus_match_a_real_copy():
    cluster = parse_cluster_spec("3x8:V100")
    live = cluster.new_state()
    take(live, ((0, (0, 1, 2)),), 0, 0)
    plan = _Planning(live)
    jobs = SimpleNamespace(cpu_milli=np.zeros(5, int), memory_mib=np.zeros(5, int))
    plan.take(1, ((1, tuple(range(8))),), None, jobs)
    plan.take(2, ((2, (0, 1)),), None, jobs)
    plan.release(3, ((0, (0, 1, 2)),), jobs)
    quick = plan.room().tolist()
    assert quick == [8, 0, 6]
    assert plan.view().gpu_full_count.tolist() == quick  # the copy, made now, agrees
    assert live.gpu_full_count.tolist() == [5, 8, 8]  # the live state is left alone


# -- the quick reclaim tests -----------------------------------------------------------------
@st.composite
def busy_workloads(draw):
    n = draw(st.integers(8, 40))
    rows = [
        (
            f"j{i}",
            draw(st.sampled_from(["a", "b", "c"])),
            float(draw(st.integers(0, 400))),
            draw(st.sampled_from([1, 2, 4, 8])),
            float(draw(st.integers(20, 400))),
        )
        for i in range(n)
    ]
    return rows, draw(st.sampled_from(["kai", "drf", "yunikorn"]))


QUEUES = [
    QueueSpec("a", deserved={"gpu": 4}),
    QueueSpec("b", deserved={"gpu": 8}, weight=2),
    QueueSpec("c", deserved={"gpu": 4}),
]


def _outcome(rows, policy):
    record, recorder, _ = run(rows, QUEUES, policy, cluster="2x8:V100")
    reclaims = [(r.time, r.job, r.victim, r.reason) for r in recorder.reclaims]
    return record.first_start, record.end_time, record.preemptions, reclaims


def _random_rows(seed: int, n: int, span: int, lengths: tuple[int, int]) -> list[tuple]:
    """``n`` jobs of queues a, b, c submitted over ``span`` seconds, 1-8 GPUs."""
    rng = np.random.default_rng(seed)
    return [
        (
            f"j{i}",
            "abc"[int(rng.integers(0, 3))],
            float(rng.integers(0, span)),
            int(rng.choice([1, 2, 4, 8])),
            float(rng.integers(*lengths)),
        )
        for i in range(n)
    ]


def _long_way(monkeypatch, policy: str) -> None:
    """The policy without its shortcuts: no quick test, every victim candidate tried."""
    cls = type(__import__("schedlab.tenancy.registry", fromlist=["x"]).make_share_policy(policy))
    monkeypatch.setattr(cls, "cannot_make_room", SharePolicy.cannot_make_room)
    monkeypatch.setattr(TenantScheduler, "_idle_key", lambda self, snap, st, fair: None)
    if hasattr(cls, "_accepted"):
        monkeypatch.setattr(cls, "_accepted", lambda self, st, leaf, job: None)


@settings(max_examples=40, deadline=None)
@given(busy_workloads())
def test_ruling_reclaims_out_early_changes_no_decision(case):
    rows, policy = case
    quick = _outcome(rows, policy)
    with pytest.MonkeyPatch.context() as mp:
        _long_way(mp, policy)
        slow = _outcome(rows, policy)
    for a, b in zip(quick[:3], slow[:3], strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert quick[3] == slow[3]


@pytest.mark.parametrize("policy", ["kai", "drf", "yunikorn"])
def test_the_quick_reclaim_test_rules_some_out_and_lets_the_rest_through(policy, monkeypatch):
    rows = _random_rows(3, 120, 2000, (100, 900))
    cls = type(__import__("schedlab.tenancy.registry", fromlist=["x"]).make_share_policy(policy))
    answers: list[bool] = []
    quick = cls.cannot_make_room

    def counted(self, *args):
        answers.append(quick(self, *args))
        return answers[-1]

    monkeypatch.setattr(cls, "cannot_make_room", counted)
    record, recorder, _ = run(rows, QUEUES, policy, cluster="2x8:V100")
    assert (record.status == DONE).all()
    assert any(answers) and not all(answers)  # it rules reclaims out, and not every one
    assert recorder.reclaims  # the ones it let through still happen
    # ... and the run is the one the long way makes.
    quick_way = _outcome(rows, policy)
    _long_way(monkeypatch, policy)
    slow = _outcome(rows, policy)
    for a, b in zip(quick_way[:3], slow[:3], strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert quick_way[3] == slow[3]


def test_only_the_changed_queues_are_tried_while_nothing_else_moves(monkeypatch):
    """After a decision that started nothing, arrivals alone are judged by their own queues:
    the probe runs, often finds nothing, and the run is the one every queue tried makes."""
    rows = _random_rows(5, 150, 3000, (300, 1500))
    probes: list[bool] = []
    fill = TenantScheduler._fill

    def counted(self, snap, st, fair, probe=False):
        out = fill(self, snap, st, fair, probe)
        if probe:
            probes.append(bool(out))
        return out

    monkeypatch.setattr(TenantScheduler, "_fill", counted)
    quick = _outcome(rows, "kai")
    assert probes.count(False) > 10  # decisions settled by the changed queues alone
    assert any(probes)  # and some where a changed queue starts a job: decided in full
    _long_way(monkeypatch, "kai")
    slow = _outcome(rows, "kai")
    for a, b in zip(quick[:3], slow[:3], strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert quick[3] == slow[3]
