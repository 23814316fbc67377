"""The spec's exact targets for Kueue (K1–K3, H7), Slurm (S1, S2), YuniKorn (Y1–Y3, H11),
Volcano (H1, H8, H9) and Gavel (H10), as pure functions and in tiny replays."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_cluster
from schedlab.tenancy.gavel import water_fill
from schedlab.tenancy.kueue_quota import KueueQuota
from schedlab.tenancy.slurm_fairshare import classic_factors, fairtree_factors, level_fairshare
from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tree import QueueSpec, build_tree
from schedlab.tenancy.volcano import hdrf_shares, proportion
from schedlab.tenancy.yunikorn import YuniKorn
from tenancy_cases import held_at, run


# -- Kueue -------------------------------------------------------------------------------------
def _kueue(first: dict, second: dict, gpus: float = 21.0) -> tuple[KueueQuota, int, int]:
    tree = build_tree([QueueSpec("cq1", **first), QueueSpec("cq2", **second)])
    quota = KueueQuota(tree, np.array([gpus]))  # the cluster: exactly the two quotas
    return quota, tree.index["cq1"], tree.index["cq2"]


def test_k1_a_queue_borrows_the_whole_cohort():
    quota, a, _ = _kueue({"deserved": {"gpu": 9}}, {"deserved": {"gpu": 12}})
    usage = quota.usage(np.zeros((3, 1)))
    assert quota.avail(usage)[a, 0] == 21


def test_k2_borrowing_limit_caps_it():
    quota, a, _ = _kueue(
        {"deserved": {"gpu": 9}, "borrowing_limit": {"gpu": 1}}, {"deserved": {"gpu": 12}}
    )
    assert quota.avail(quota.usage(np.zeros((3, 1))))[a, 0] == 10


def test_k3_lending_limit_keeps_the_rest_for_the_lender():
    quota, a, b = _kueue(
        {"deserved": {"gpu": 9}}, {"deserved": {"gpu": 12}, "lending_limit": {"gpu": 1}}
    )
    empty = np.zeros((3, 1))
    assert quota.avail(quota.usage(empty))[a, 0] == 10
    full = empty.copy()
    full[a, 0] = 10
    assert quota.avail(quota.usage(full))[b, 0] == 11  # the lender can still use 11


def test_h7_drs_values():
    quota, a, b = _kueue({"deserved": {"gpu": 6}}, {"deserved": {"gpu": 6}}, gpus=12.0)
    alloc = np.zeros((3, 1))
    alloc[a, 0] = 12
    usage = quota.usage(alloc)
    assert quota.drs(a, usage) == pytest.approx(500)
    asks = quota.usage_with(usage, b, np.array([8.0]))
    assert quota.drs(b, asks) == pytest.approx(1000 * 2 / 12)


H7_QUEUES = [
    QueueSpec("A", deserved={"gpu": 6}, preemption={"reclaim_within_cohort": "Any"}),
    QueueSpec("B", deserved={"gpu": 6}, preemption={"reclaim_within_cohort": "Any"}),
]


@pytest.mark.parametrize(
    ("strategies", "preempted"), [(["S2a"], 0), (["S2b"], 1), (["S2a", "S2b"], 1)]
)
def test_h7_a_12_gpu_borrower_is_preempted_only_under_s2b(strategies, preempted):
    rows = [("a", "A", 0.0, 12, 1000.0), ("b", "B", 10.0, 8, 100.0)]
    record, recorder, _ = run(
        rows,
        H7_QUEUES,
        "kueue-fair",
        cluster="3x4:V100",
        settings={"preemption_strategies": strategies},
    )
    assert int(record.preemptions[0]) == preempted
    if preempted:
        assert held_at(recorder, 10.0, "B") == 8 and recorder.reclaims[0].reason == "borrow"


def test_h7_reverse_never_preempts():
    rows = [("b", "B", 0.0, 8, 1000.0), ("a", "A", 10.0, 12, 100.0)]
    record, _, _ = run(rows, H7_QUEUES, "kueue-fair", cluster="3x4:V100")
    assert int(record.preemptions.sum()) == 0
    assert record.first_start[1] == pytest.approx(1000.0)  # A waits for B to finish


@pytest.mark.parametrize(
    ("policy", "settings"),
    [("kueue-fair", None), ("kueue-classic", {"reclaim_within_cohort": "Any"})],
)
def test_h7_variant_within_nominal_takes_the_two_most_recent(policy, settings):
    rows = [(f"a{i}", "A", float(i), 2, 1000.0) for i in range(5)]
    rows += [("b0", "B", 0.5, 2, 1000.0), ("b1", "B", 10.0, 4, 100.0)]
    queues = (
        H7_QUEUES
        if policy == "kueue-fair"
        else [QueueSpec(q.path, deserved=q.deserved) for q in H7_QUEUES]
    )
    record, recorder, _ = run(rows, queues, policy, cluster="12x1:V100", settings=settings)
    preempted = {str(j) for j, n in zip(record.jobs.job_id, record.preemptions, strict=True) if n}
    assert preempted == {"a3", "a4"}  # the latest admitted
    assert held_at(recorder, 10.0, "B") == 6


def test_kueue_never_preempts_without_a_preemption_policy():
    rows = [(f"a{i}", "A", 0.0, 2, 1000.0) for i in range(6)] + [("b", "B", 10.0, 4, 100.0)]
    queues = [QueueSpec("A", deserved={"gpu": 6}), QueueSpec("B", deserved={"gpu": 6})]
    for policy in ("kueue-classic", "kueue-fair"):
        record, _, _ = run(rows, queues, policy, cluster="3x4:V100")
        assert int(record.preemptions.sum()) == 0


def test_kueue_gate_keeps_a_queue_within_nominal_plus_borrowable():
    rows = [(f"a{i}", "A", 0.0, 1, 100.0) for i in range(8)]
    queues = [
        QueueSpec("A", deserved={"gpu": 2}, borrowing_limit={"gpu": 1}),
        QueueSpec("B", deserved={"gpu": 6}),
    ]
    _, recorder, _ = run(rows, queues, "kueue-classic")
    assert held_at(recorder, 0.0, "A") == 3


# -- Slurm -------------------------------------------------------------------------------------
def _slurm_tree():
    specs = [
        QueueSpec("A", weight=40),
        QueueSpec("A/B", weight=30),
        QueueSpec("A/B/user1", weight=1),
        QueueSpec("A/C", weight=10),
        QueueSpec("A/C/user2", weight=1),
        QueueSpec("A/C/user3", weight=1),
        QueueSpec("D", weight=60),
        QueueSpec("D/E", weight=25),
        QueueSpec("D/E/user4", weight=1),
        QueueSpec("D/F", weight=35),
        QueueSpec("D/F/user5", weight=1),
    ]
    tree = build_tree(specs)
    own = np.zeros((len(tree), 1))
    for user, used in (
        ("user1", 0.2),
        ("user2", 0.25),
        ("user3", 0.0),
        ("user4", 0.25),
        ("user5", 0.0),
    ):
        leaf = next(i for i, n in enumerate(tree.names) if n.endswith(user))
        own[leaf, 0] = used
    return tree, roll_up(tree, own)[:, 0]


def _at(tree, values, name):
    return values[next(i for i, n in enumerate(tree.names) if n.split("/")[-1] == name)]


def test_s1_classic_effective_usage_and_factors():
    tree, usage = _slurm_tree()
    # The example gives each user's usage as a fraction of the cluster's (U), so total = 1.
    ue, f = classic_factors(tree, usage, total=1.0)
    for name, want in (("B", 0.3875), ("C", 0.3), ("E", 0.25), ("F", 0.1458)):
        assert _at(tree, ue, name) == pytest.approx(want, abs=1e-4)
    want_ue = (0.3875, 0.275, 0.15, 0.25, 0.1458)
    want_f = (0.408479, 0.022097, 0.125000, 0.500000, 0.749154)
    for i, user in enumerate(("user1", "user2", "user3", "user4", "user5")):
        assert _at(tree, ue, user) == pytest.approx(want_ue[i], abs=1e-4)
        assert _at(tree, f, user) == pytest.approx(want_f[i], abs=1e-6)


def test_s2_fair_tree_level_fairshare_and_ranks():
    tree, usage = _slurm_tree()
    lf = level_fairshare(tree, usage)
    for name, want in (
        ("A", 0.6222),
        ("D", 1.68),
        ("B", 1.6875),
        ("C", 0.45),
        ("E", 0.4167),
        ("user2", 0.5),
    ):
        assert _at(tree, lf, name) == pytest.approx(want, abs=1e-4)
    assert np.isinf(_at(tree, lf, "F")) and np.isinf(_at(tree, lf, "user3"))
    fs = fairtree_factors(tree, usage)
    got = {u: _at(tree, fs, u) for u in ("user5", "user4", "user1", "user3", "user2")}
    assert got == {"user5": 1.0, "user4": 0.8, "user1": 0.6, "user3": 0.4, "user2": 0.2}


def test_slurm_policies_order_queues_by_their_factor_in_a_replay():
    # Queue a used the cluster first; when both wait, b (no usage) goes first.
    rows = [("a0", "a", 0.0, 8, 3600.0)]
    rows += [(f"a{i}", "a", 100.0, 8, 100.0) for i in range(1, 3)]
    rows += [("b0", "b", 200.0, 8, 100.0)]
    queues = [QueueSpec("a"), QueueSpec("b")]
    for policy in ("slurm-classic", "slurm-fairtree"):
        record, _, _ = run(rows, queues, policy)
        assert record.first_start[3] == pytest.approx(3600.0)  # b0 before a1 and a2
        assert record.first_start[1] > record.first_start[3]
        assert int(record.preemptions.sum()) == 0


# -- YuniKorn ----------------------------------------------------------------------------------
def test_y1_preemption_up_to_the_guarantee():
    queues = [
        QueueSpec("p", limit={"gpu": 12}),
        QueueSpec("p/c1", deserved={"gpu": 5}, limit={"gpu": 10}),
        QueueSpec("p/c2", deserved={"gpu": 5}, limit={"gpu": 10}),
    ]
    rows = [(f"x{i}", "p/c1", 0.0, 1, 1000.0) for i in range(10)]
    rows += [(f"y{i}", "p/c2", 0.0, 1, 1000.0) for i in range(2)]
    rows += [(f"z{i}", "p/c2", 10.0, 1, 1000.0) for i in range(5)]
    _, recorder, _ = run(rows, queues, "yunikorn", cluster="3x4:V100")
    assert (held_at(recorder, 0.0, "p/c1"), held_at(recorder, 0.0, "p/c2")) == (10, 2)
    assert (held_at(recorder, 10.0, "p/c1"), held_at(recorder, 10.0, "p/c2")) == (7, 5)


def test_y2_a_queue_that_allows_no_preemption_is_left_alone():
    queues = [QueueSpec("p", limit={"gpu": 16})] + [
        QueueSpec(
            f"p/c{i}",
            deserved={"gpu": 3},
            limit={"gpu": 8},
            preemption={"allow_preemption": False} if i == 2 else {},
        )
        for i in (1, 2, 3)
    ]
    rows = [(f"x{i}", "p/c1", 0.0, 1, 1000.0) for i in range(8)]
    rows += [(f"y{i}", "p/c2", 0.0, 1, 1000.0) for i in range(8)]
    rows += [(f"z{i}", "p/c3", 10.0, 1, 1000.0) for i in range(5)]
    _, recorder, _ = run(rows, queues, "yunikorn", cluster="4x4:V100")
    got = tuple(held_at(recorder, 10.0, f"p/c{i}") for i in (1, 2, 3))
    assert got == (5, 8, 3)


def test_y3_priority_offsets_decide_who_may_preempt():
    queues = [QueueSpec("p", limit={"gpu": 18})] + [
        QueueSpec(f"p/c{i}", deserved={"gpu": 6}, priority=prio)
        for i, prio in ((1, 100), (2, 0), (3, -100))
    ]
    rows = [(f"y{i}", "p/c2", 0.0, 1, 1000.0) for i in range(18)]
    rows += [(f"x{i}", "p/c1", 10.0, 1, 1000.0) for i in range(8)]
    rows += [(f"z{i}", "p/c3", 10.0, 1, 1000.0) for i in range(8)]
    _, recorder, _ = run(rows, queues, "yunikorn", cluster="3x6:V100")
    got = tuple(held_at(recorder, 10.0, f"p/c{i}") for i in (1, 2, 3))
    assert got == (6, 12, 0)


def test_h11_yunikorn_sort_values_and_order():
    tree = build_tree(
        [
            QueueSpec("p", limit={"gpu": 12}),
            QueueSpec("p/q1", deserved={"gpu": 5}),
            QueueSpec("p/q2", deserved={"gpu": 5}),
            QueueSpec("p/q3"),
        ]
    )
    own = np.zeros((len(tree), 1))
    for name, a in (("p/q1", 4), ("p/q2", 3), ("p/q3", 2)):
        own[tree.index[name], 0] = a
    st = TenantState(
        tree=tree,
        now=0.0,
        capacity=np.array([100.0]),
        alloc=roll_up(tree, own),
        pending=np.ones((len(tree), 1)),
        alloc_np=np.zeros((len(tree), 1)),
        demand=np.ones((1, 1)),
        leaf_of=np.zeros(1, dtype=np.int64),
    )
    yk = YuniKorn()
    values = [yk.sort_value(st, tree.index[q]) for q in ("p/q1", "p/q2", "p/q3")]
    assert values == pytest.approx([0.8, 0.6, 2 / 12])
    keys = {
        q: yk.node_key(st, np.zeros((len(tree), 1)), tree.index[q], np.ones(1))
        for q in ("p/q1", "p/q2", "p/q3")
    }
    assert sorted(keys, key=keys.get) == ["p/q3", "p/q2", "p/q1"]


# -- Volcano -----------------------------------------------------------------------------------
def test_h1_volcano_proportion():
    out = proportion(np.array([12.0]), np.array([[1.0], [12.0], [12.0]]), np.array([1.0, 2.0, 3.0]))
    assert out[:, 0] == pytest.approx([1, 4.4, 6.6])


def test_volcano_proportion_guarantee_and_capability():
    out = proportion(
        np.array([12.0]),
        np.array([[12.0], [12.0]]),
        np.array([1.0, 1.0]),
        guarantee=np.array([[8.0], [0.0]]),
        capability=np.array([[np.inf], [3.0]]),
    )
    assert out[:, 0] == pytest.approx([9, 3])


def test_h8_drf_gives_a_three_tasks_and_b_two():
    queues = [QueueSpec("A", deserved={"cpu": 0, "memory": 0}), QueueSpec("B")]
    rows = [(f"a{i}", "A", 0.0, 0, 1000.0) for i in range(6)]
    rows += [(f"b{i}", "B", 0.0, 0, 1000.0) for i in range(6)]
    cpu = [1000] * 6 + [3000] * 6
    mem = [4 * 1024] * 6 + [1024] * 6
    cluster = make_cluster([("n", 9000, 18 * 1024, 0, None)])  # 9 CPUs, 18 GiB
    record, _, _ = run(rows, queues, "drf", cluster=cluster, cpu_milli=cpu, memory_mib=mem)
    ran = record.first_start == 0.0
    assert int(ran[:6].sum()) == 3 and int(ran[6:].sum()) == 2


def test_h9_hdrf_scales_unsaturated_children():
    tree = build_tree(
        [QueueSpec("n1"), QueueSpec("n2/n21"), QueueSpec("n2/n22")], extra_resources=["cpu"]
    )
    ix = tree.index
    cpu, gpu = tree.resource("cpu"), tree.resource("gpu")
    alloc = np.zeros((len(tree), 2))
    demand = np.zeros((len(tree), 2))
    alloc[ix["n1"], gpu], demand[ix["n1"], gpu] = 3, 10
    alloc[ix["n2/n21"], cpu], demand[ix["n2/n21"], cpu] = 4, 10
    alloc[ix["n2/n22"], gpu], demand[ix["n2/n22"], gpu] = 2, 10
    total = np.zeros(2)
    total[cpu], total[gpu] = 10, 10
    share, saturated = hdrf_shares(tree, alloc, demand, total)
    assert share[ix["n2"]] == pytest.approx(0.2) and share[ix["n1"]] == pytest.approx(0.3)
    assert not saturated.any()
    assert share[ix["n2/n22"]] < share[ix["n2/n21"]]  # n2, then n22, first


# -- Gavel -------------------------------------------------------------------------------------
def test_h10_gavel_water_filling():
    x = water_fill(np.array([1, 1, 4, 4]), np.array([0, 0, 1, 1]), np.array([1.0, 1.0]), 8.0)
    assert x == pytest.approx([1, 1, 0.75, 0.75])


def test_gavel_fifo_mode_gives_the_entity_weight_to_its_oldest_job():
    x = water_fill(np.array([4, 4]), np.array([0, 0]), np.array([1.0]), 6.0, mode="fifo")
    assert x == pytest.approx([1.0, 0.5])
