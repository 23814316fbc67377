"""``ocs-vclos migrate=true`` (network spec §4.3 step 5): running jobs' circuits repacked onto
other spines so a whole-leaf job fits; the moved jobs pay the OCS delay. And the buddy groups
GPUs are taken in inside a host."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netplace import busy, hold, request, started
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.network.plan import NetLedger, NetPlan, ocs_port_limits
from schedlab.policies.placement.network.buddy import buddy_pick, free_groups

#: 12 leaves of one 2-GPU host (2 uplink ports each), 3 spines of 8 OCS ports.
TOPO = "ocs:leaves=12,spines=3,hosts_per_leaf=1,g=2,m=2,nic_gbps=100,delay=5"


def _mask(bits: str) -> np.ndarray:
    return np.array([b == "1" for b in bits])


def test_free_groups_are_maximal_aligned_blocks() -> None:
    assert free_groups(_mask("11111111")) == [(0, 8)]
    assert free_groups(_mask("01111111")) == [(1, 1), (2, 2), (4, 4)]
    assert free_groups(_mask("111111")) == [(0, 4), (4, 2)]
    assert free_groups(_mask("01101100")) == [(1, 1), (2, 1), (4, 2)]


def test_buddy_pick_splits_the_smallest_group_and_halves_when_none_holds_a_block() -> None:
    free = _mask("01111111")  # groups {1}, {2,3}, {4..7}
    assert buddy_pick(free, 1) == (1,)
    assert buddy_pick(free, 2) == (2, 3)
    assert buddy_pick(free, 3) == (1, 2, 3)  # 2 from {2,3}, then 1 from {1}
    assert buddy_pick(free, 4) == (4, 5, 6, 7)
    assert buddy_pick(free, 5) == (1, 4, 5, 6, 7)
    # No free aligned 4-block: halves; the second 2 finds no aligned pair either: ones.
    assert buddy_pick(_mask("01101100"), 4) == (1, 2, 4, 5)
    with pytest.raises(ValueError):
        buddy_pick(_mask("0110"), 3)


def test_ocs_vclos_takes_buddy_groups_inside_a_host() -> None:
    policy, state = started("ocs-vclos", "ocs:leaves=2,spines=1,hosts_per_leaf=1,g=8,m=8")
    state.allocate(0, [0, 4], 0, 0, GPU_MILLI, 2)  # leaf 0: groups {1}, {2,3}, {5}, {6,7}
    state.allocate(1, [0, 1, 2], 0, 0, GPU_MILLI, 3)  # leaf 1: 5 free
    # 6 GPUs: leaf 0 (6 free) holds it; 4 → halves 2 + 2 from {2,3} and {6,7}, then 2 ones.
    assert policy.place_job(request(6), state) == ((0, (1, 2, 3, 5, 6, 7)),)
    # 2 GPUs: leaf 1 has the fewest free (5), groups {3} and {4..7}: the pair comes from
    # splitting {4..7}, GPU 3 stays free for a 1-GPU job.
    assert policy.place_job(request(2), state) == ((1, (4, 5)),)


def _fragmented(migrate: bool) -> tuple[object, object, list[int], list[int]]:
    """Jobs 1, 2 hold 3 circuits each to spine 0 (leaves 0-2), jobs 3, 4 3 each to spine 1
    (leaves 3-5): free spine ports 2, 2, 8 (12 in all); leaves 6-11 are empty."""
    params = {"migrate": "true"} if migrate else {}
    policy, state = started("ocs-vclos", TOPO, params)
    leaf = [int(x) for x in policy.leaf_switch]
    spine = [int(x) for x in policy.spine_switch]
    held = ((1, (0, 1, 2), 0), (2, (0, 1, 2), 0), (3, (3, 4, 5), 1), (4, (3, 4, 5), 1))
    for job, leaves, s in held:
        for node in leaves:
            busy(state, node, 1)
        hold(state, job, NetPlan(circuits=tuple((leaf[x], spine[s]) for x in leaves)))
    return policy, state, leaf, spine


def test_a_whole_leaf_job_is_placed_only_after_moving_a_job_off_a_spine() -> None:
    """10 GPUs = 5 whole leaves. No spine has 10 ports (8); k = 2 spines of 5 free ports: only
    spine 2 has them, so steps 1-4 fail. Ports free in all: 12 ≥ 10. Migration, k = 2: the
    targets are the spines with most free ports, spine 2 (8) and spine 0 (2, before spine 1 by
    index). Spine 0 needs 3 more: job 1's 3 circuits (largest unit, lowest job) go where 3
    spare ports are: spine 1 has 2; spine 2 has 8 − 5 = 3. Then spines 0 and 2 have 5 free
    each; the job takes leaves 6-10 with one circuit from each to each."""
    policy, state, _, _ = _fragmented(migrate=False)
    assert policy.place_job(request(10, job=5), state) is None

    policy, state, leaf, spine = _fragmented(migrate=True)
    alloc = policy.place_job(request(10, job=5), state)
    assert alloc == tuple((node, (0, 1)) for node in range(6, 11))
    plan = policy.plan_for(5, alloc)
    assert plan.circuits == tuple((leaf[x], spine[s]) for x in range(6, 11) for s in (0, 2))
    moved = NetPlan(circuits=tuple((leaf[x], spine[2]) for x in (0, 1, 2)))
    assert plan.moves == ((1, moved),)
    # Held with its moves in one step, every spine is within its 8 ports.
    state.net.port_limits = ocs_port_limits(policy.ctx.topology)
    state.net.hold(5, plan)
    assert state.net.plans[1] == moved and state.net.plans[5].moves == ()
    assert [state.net.ports_used[s] for s in spine] == [8, 6, 8]


def test_no_migration_when_the_free_ports_do_not_add_up() -> None:
    """Spines with 2, 2 and 5 free ports (9 < 10): nothing is moved, the job waits."""
    policy, state, leaf, spine = _fragmented(migrate=True)
    hold(state, 9, NetPlan(circuits=((leaf[11], spine[2]),) * 2 + ((leaf[5], spine[2]),)))
    assert policy.place_job(request(10, job=5), state) is None


def test_the_ledger_refuses_ports_beyond_a_switch_and_moves_of_jobs_without_plans() -> None:
    ledger = NetLedger({1: 2, 2: 2})
    ledger.hold(7, NetPlan(circuits=((1, 2),)))
    why = ledger.conflict(8, NetPlan(circuits=((1, 2),) * 2))
    assert why == "switch 1 would use 3 OCS ports of its 2"
    assert "holds no network plan" in (
        ledger.conflict(8, NetPlan(moves=((6, NetPlan(circuits=((1, 2),))),))) or ""
    )
    # A move frees the moved job's old ports before the new plan's are counted.
    ledger.hold(8, NetPlan(circuits=((1, 2),), moves=((7, NetPlan(circuits=((1, 2),))),)))
    assert ledger.ports_used == Counter({1: 2, 2: 2})


def _replay(tmp_path: Path, migrate: bool) -> dict[str, dict[str, float]]:
    trace = tmp_path / "jobs.csv"
    rows = ["job_id,submit_time,num_gpus,duration"]
    rows += [f"p{i},0,3,{100 if i == 1 else 1000}" for i in range(1, 5)]
    rows += ["w,10,10,50"]
    trace.write_text("\n".join(rows) + "\n")
    out = tmp_path / f"out-{migrate}"
    args = ["replay", "--trace", str(trace), "--topology", TOPO, "--policy", "fifo"]
    args += ["--placement", "ocs-vclos", "--out", str(out)]
    if migrate:
        args += ["--param", "migrate=true"]
    assert main(args) == 0
    header, *lines = (out / "jobs.csv").read_text().splitlines()
    cols = header.split(",")
    table = {}
    for line in lines:
        cells = dict(zip(cols, line.split(","), strict=True))
        table[cells["job_id"]] = {k: float(cells[k]) for k in ("start_time", "end_time")}
    return table


def test_replay_the_moved_job_pays_the_ocs_delay(tmp_path: Path) -> None:
    """The set-up above, built by fifo itself: p1, p2 go to spine 0 and p3, p4 to spine 1
    (fewest free ports that hold 3), leaves 0-5. w (10 GPUs) arrives at 10 s: without
    migration it waits for p1 to end; with it, it starts at 10 s and p1, moved to spine 2 at
    10 s, ends exactly one OCS delay (5 s) later; the others are untouched."""
    still = _replay(tmp_path, migrate=False)
    moved = _replay(tmp_path, migrate=True)
    assert still["w"]["start_time"] == pytest.approx(still["p1"]["end_time"])
    assert moved["w"]["start_time"] == pytest.approx(10.0)
    assert moved["p1"]["end_time"] - still["p1"]["end_time"] == pytest.approx(5.0)
    for job in ("p2", "p3", "p4"):
        assert moved[job]["end_time"] == pytest.approx(still[job]["end_time"])
    summary = (tmp_path / "out-True" / "summary.json").read_text()
    assert '"circuit_moves": 1' in summary


def test_migrate_must_be_a_boolean() -> None:
    with pytest.raises(InputError, match="migrate"):
        started("ocs-vclos", TOPO, {"migrate": "maybe"})


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3, 3, 5, 6, 8, 10, 12, 16]), st.integers(0, 1000)),
        min_size=1,
        max_size=25,
    )
)
def test_circuits_never_exceed_ports_and_moves_keep_jobs_whole(
    ops: list[tuple[int, int]],
) -> None:
    """Four 3-GPU jobs (they spread over spines, as in the hand case), then jobs of random
    sizes, ending a random running job whenever one does not fit (about a third of the runs
    move circuits); after every change each switch uses at most its ports (so no port, and no
    circuit, serves two jobs), the whole set installs on the OCS, and a moved job keeps its
    GPUs, as many circuits from each of its leaves, and no more spines than it had."""
    policy, state = started("ocs-vclos", TOPO, {"migrate": "true"})
    topo = policy.ctx.topology
    limits = ocs_port_limits(topo)
    state.net = NetLedger(limits)
    gpus: dict[int, tuple] = {}
    for job, (size, pick) in enumerate([(3, 0)] * 4 + ops):
        alloc = policy.place_job(request(size, job=job), state)
        if alloc is None:
            if gpus:  # end one running job instead
                done = sorted(gpus)[pick % len(gpus)]
                for node, g in gpus.pop(done):
                    state.release(node, g, 0, 0, GPU_MILLI, len(g))
                state.net.release(done)
            continue
        plan = policy.plan_for(job, alloc)
        before = {other: state.net.plans[other] for other, _ in plan.moves}
        for node, g in alloc:
            state.allocate(node, g, 0, 0, GPU_MILLI, len(g))
        state.net.hold(job, plan)
        gpus[job] = alloc
        for other, new in plan.moves:
            assert other in gpus
            old = before[other]
            assert Counter(a for a, _ in old.circuits) == Counter(a for a, _ in new.circuits)
            assert len({b for _, b in new.circuits}) <= len({b for _, b in old.circuits})
        used: Counter[int] = Counter()
        every = []
        for held in state.net.plans.values():
            for a, b in held.circuits:
                used[a] += 1
                used[b] += 1
                every.append((a, b))
        assert all(used[s] <= limits[s] for s in used)
        topo.with_circuits(every)  # raises if any switch had too many
        assert set(state.net.plans) <= set(gpus)
