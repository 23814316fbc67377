"""Tenancy reproductions: KAI's time-aware fair-share CSVs and the exact targets of the
tenancy spec, each a table with the published value, ours and a verdict.

``kai_time_aware_table(data)`` runs :mod:`schedlab.tenancy.kai_sim` on KAI's three simulation
configs and scores it against the four CSVs KAI published (``shared/data/fairshare/kai``), with
the acceptance tolerances of the spec. ``exact_targets_table()`` recomputes the closed-form
targets (KAI division T2, H1–H4; Kueue K1–K3 and H7's shares; Slurm S1, S2; Volcano H1, H9;
Gavel H10; YuniKorn H11) with the policy code itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.tenancy.gavel import water_fill
from schedlab.tenancy.kai_division import divide
from schedlab.tenancy.kai_sim import (
    queue_holds,
    read_kai_csv,
    read_sim_config,
    simulate,
)
from schedlab.tenancy.kueue_quota import KueueQuota
from schedlab.tenancy.slurm_fairshare import classic_factors, fairtree_factors
from schedlab.tenancy.state import roll_up
from schedlab.tenancy.tree import QueueSpec, build_tree
from schedlab.tenancy.volcano import hdrf_shares, proportion

COLUMNS = ["target", "measure", "published", "ours", "tolerance", "verdict"]
#: (CSV, simulation config) under ``fairshare/kai``.
KAI_FILES = {
    "2-way": ("time-aware-simulator/2-way-oscillaiton.csv", "simulation_config_oscillating.yaml"),
    "oscillating": (
        "time-aware-simulator-pr639/oscillating.csv",
        "simulation_config_oscillating.yaml",
    ),
    "50+1": (
        "time-aware-simulator/50-plus-1-oscillation.csv",
        "simulation_config_50_plus_one.yaml",
    ),
    "3-way": (
        "time-aware-simulator/3-way-oscillation.csv",
        "simulation_config_3_way_oscillating.yaml",
    ),
}


def _row(target: str, measure: str, published: object, ours: object, tol: str, ok: bool) -> dict:
    return {
        "target": target,
        "measure": measure,
        "published": published,
        "ours": ours,
        "tolerance": tol,
        "verdict": "pass" if ok else "FAIL",
    }


def complete_holds(alloc: np.ndarray, queue: int) -> list[int]:
    """A queue's holds, without the one still running when the simulation ends."""
    runs = queue_holds(alloc, queue)
    if runs and alloc[-1, queue] > 0:
        runs = runs[:-1]
    return runs


def _alternating_holds(alloc: np.ndarray) -> list[int]:
    """Both queues' complete holds in time order (2-way files), after the first: the first
    queue's initial job (the simulation's starting state) and the second queue's first hold
    (which starts from no history) are left out."""
    out: list[tuple[int, int]] = []
    for q in range(alloc.shape[1]):
        start = None
        for t, v in enumerate(alloc[:, q]):
            if v > 0 and start is None:
                start = t
            elif v <= 0 and start is not None:
                out.append((start, t - start))
                start = None
    return [length for _, length in sorted(out)][2:]


def kai_time_aware_table(data: Path) -> pd.DataFrame:
    """KAI's CSVs against ``kai-sim`` (``data`` = ``shared/data/fairshare``)."""
    base = Path(data) / "kai"
    rows: list[dict] = []
    sims: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for name, (csv_name, cfg_name) in KAI_FILES.items():
        cfg = read_sim_config(base / "time-aware-simulator" / cfg_name)
        alloc, fair = simulate(cfg)
        k_alloc, k_fair = read_kai_csv(base / csv_name, cfg.queues)
        n = min(len(alloc), len(k_alloc))
        sims[name] = (alloc[:n], fair[:n], k_alloc[:n], k_fair[:n])
    a, f, ka, kf = sims["2-way"]
    within = float((np.abs(f - kf) <= 1).mean())
    equal = float((f == kf).mean())
    same = float((a == ka).mean())
    rows += [
        _row(
            "2-way", "fair share within ±1 GPU", "100 %", f"{within:.1%}", "≥ 99 %", within >= 0.99
        ),
        _row("2-way", "fair share equal", "100 %", f"{equal:.1%}", "≥ 80 %", equal >= 0.80),
        _row("2-way", "allocation equal", "100 %", f"{same:.1%}", "≥ 97 %", same >= 0.97),
    ]
    holds = _alternating_holds(a)
    k_holds = _alternating_holds(ka)
    rows.append(
        _row(
            "2-way",
            "complete holds after the first",
            k_holds,
            holds,
            "[237, 245]",
            bool(holds) and all(237 <= h <= 245 for h in holds),
        )
    )
    for q, want in enumerate((7.58, 8.36)):
        mean = float(a[:, q].mean())
        rows.append(
            _row(
                "2-way",
                f"mean allocation q{q + 1}",
                want,
                round(mean, 3),
                "±0.3",
                abs(mean - want) <= 0.3,
            )
        )
    a, f, ka, kf = sims["oscillating"]
    holds = _alternating_holds(a)
    rows.append(
        _row(
            "oscillating.csv",
            "complete holds after the first",
            _alternating_holds(ka),
            holds,
            "[237, 245]",
            bool(holds) and all(237 <= h <= 245 for h in holds),
        )
    )
    a, f, ka, kf = sims["50+1"]
    within = float((np.abs(f - kf) <= 1).mean())
    rows.append(
        _row("50+1", "fair share within ±1 GPU", "100 %", f"{within:.1%}", "≥ 99 %", within >= 0.99)
    )
    published = {0: [1, 3, 7, 12, 21, 31], 1: [2, 5, 9, 16, 26, 37]}
    for q in (0, 1):
        mine = complete_holds(a, q)
        first = mine[:6]
        ok = len(first) == 6 and all(
            abs(x - y) <= 2 for x, y in zip(first, published[q], strict=True)
        )
        rows.append(_row("50+1", f"first six holds q{q + 1}", published[q], first, "±2", ok))
        later = mine[7:]
        rows.append(
            _row(
                "50+1",
                f"holds from the 8th q{q + 1}",
                complete_holds(ka, q)[7:],
                later,
                "[42, 51]",
                bool(later) and all(42 <= h <= 51 for h in later),
            )
        )
    for q, want in enumerate((4.32, 4.48)):
        mean = float(a[:, q].mean())
        rows.append(
            _row(
                "50+1",
                f"mean allocation q{q + 1}",
                want,
                round(mean, 3),
                "±0.3",
                abs(mean - want) <= 0.3,
            )
        )
    a, f, ka, kf = sims["3-way"]
    rows += [
        _row(
            "3-way",
            "q1 holds 16 in every cycle",
            "yes",
            "yes" if (a[:, 0] == 16).all() else "no",
            "exact",
            bool((a[:, 0] == 16).all()),
        ),
        _row(
            "3-way",
            "shares at cycle 0",
            [6, 5, 5],
            f[0].tolist(),
            "exact",
            f[0].tolist() == [6, 5, 5],
        ),
        _row(
            "3-way",
            "shares from cycle 2",
            [0, 8, 8],
            sorted({tuple(r) for r in f[2:].tolist()}),
            "exact",
            bool((f[2:] == [0, 8, 8]).all()),
        ),
    ]
    exact = float(((a == ka) & (f == kf)).all(axis=1).mean())
    rows.append(_row("3-way", "rows exact", "100 %", f"{exact:.1%}", "≥ 99 %", exact >= 0.99))
    return pd.DataFrame(rows, columns=COLUMNS)


def _close(ours: object, want: object, tol: float) -> bool:
    return bool(np.allclose(np.asarray(ours, dtype=float), np.asarray(want, dtype=float), atol=tol))


def _kueue_avail(first: dict, second: dict, first_alloc: float = 0.0) -> tuple[float, float]:
    tree = build_tree([QueueSpec("cq1", **first), QueueSpec("cq2", **second)])
    quota = KueueQuota(tree, np.array([21.0]))  # the cluster holds exactly the two quotas
    alloc = np.zeros((3, 1))
    alloc[1, 0] = first_alloc
    avail = quota.avail(quota.usage(alloc))
    return float(avail[1, 0]), float(avail[2, 0])


def _slurm_example() -> tuple[object, np.ndarray]:
    tree = build_tree(
        [
            QueueSpec("A", weight=40),
            QueueSpec("A/B", weight=30),
            QueueSpec("A/B/user1"),
            QueueSpec("A/C", weight=10),
            QueueSpec("A/C/user2"),
            QueueSpec("A/C/user3"),
            QueueSpec("D", weight=60),
            QueueSpec("D/E", weight=25),
            QueueSpec("D/E/user4"),
            QueueSpec("D/F", weight=35),
            QueueSpec("D/F/user5"),
        ]
    )
    own = np.zeros((len(tree), 1))
    for path, used in (("A/B/user1", 0.2), ("A/C/user2", 0.25), ("D/E/user4", 0.25)):
        own[tree.index[path], 0] = used
    return tree, roll_up(tree, own)[:, 0]


def exact_targets_table() -> pd.DataFrame:
    """The closed-form targets of the spec, recomputed by the policy code."""
    tree, usage = _slurm_example()
    users = ("A/B/user1", "A/C/user2", "A/C/user3", "D/E/user4", "D/F/user5")
    _, classic = classic_factors(tree, usage, total=1.0)
    fairtree = fairtree_factors(tree, usage)
    hdrf = build_tree(
        [QueueSpec("n1"), QueueSpec("n2/n21"), QueueSpec("n2/n22")], extra_resources=["cpu"]
    )
    hx, cpu, gpu = hdrf.index, hdrf.resource("cpu"), hdrf.resource("gpu")
    h_alloc = np.zeros((len(hdrf), 2))
    h_demand = np.zeros((len(hdrf), 2))
    h_alloc[hx["n1"], gpu], h_demand[hx["n1"], gpu] = 3, 10
    h_alloc[hx["n2/n21"], cpu], h_demand[hx["n2/n21"], cpu] = 4, 10
    h_alloc[hx["n2/n22"], gpu], h_demand[hx["n2/n22"], gpu] = 2, 10
    h_total = np.array([10.0, 10.0])
    h_share, _ = hdrf_shares(hdrf, h_alloc, h_demand, h_total)
    cases: list[tuple[str, str, object, Callable[[], object], float]] = [
        (
            "T2",
            "KAI 3 equal queues, 16 GPUs",
            [6, 5, 5],
            lambda: divide(16, [0, 0, 0], [16, 16, 16], [1, 1, 1]),
            0,
        ),
        (
            "H1",
            "KAI weights 1/2/3, requests 1/12/12",
            [1, 4, 7],
            lambda: divide(12, [0, 0, 0], [1, 12, 12], [1, 2, 3]),
            0,
        ),
        (
            "H1",
            "Volcano proportion",
            [1, 4.4, 6.6],
            lambda: proportion(
                np.array([12.0]), np.array([[1.0], [12.0], [12.0]]), np.array([1.0, 2.0, 3.0])
            )[:, 0].tolist(),
            1e-9,
        ),
        (
            "H2",
            "KAI priorities",
            [40, 30, 30],
            lambda: divide(100, [10, 20, 0], [40, 100, 100], [1, 1, 3], [1, 0, 0]),
            0,
        ),
        (
            "H4",
            "KAI u=(0.75,0.25), k=1",
            [4, 12],
            lambda: divide(16, [0, 0], [16, 16], [1, 1], usage=[0.75, 0.25]),
            0,
        ),
        (
            "H4",
            "KAI u=(0.75,0.25), k=2",
            [0, 16],
            lambda: divide(16, [0, 0], [16, 16], [1, 1], usage=[0.75, 0.25], k=2),
            0,
        ),
        (
            "H4",
            "KAI u=(0.6,0.3)",
            [6, 10],
            lambda: divide(16, [0, 0], [16, 16], [1, 1], usage=[0.6, 0.3]),
            0,
        ),
        (
            "K1",
            "Kueue 9 + 12: the first reaches",
            21,
            lambda: _kueue_avail({"deserved": {"gpu": 9}}, {"deserved": {"gpu": 12}})[0],
            0,
        ),
        (
            "K2",
            "borrowingLimit 1",
            10,
            lambda: _kueue_avail(
                {"deserved": {"gpu": 9}, "borrowing_limit": {"gpu": 1}}, {"deserved": {"gpu": 12}}
            )[0],
            0,
        ),
        (
            "K3",
            "lendingLimit 1 on the 12: first / lender",
            [10, 11],
            lambda: [
                _kueue_avail(
                    {"deserved": {"gpu": 9}}, {"deserved": {"gpu": 12}, "lending_limit": {"gpu": 1}}
                )[0],
                _kueue_avail(
                    {"deserved": {"gpu": 9}},
                    {"deserved": {"gpu": 12}, "lending_limit": {"gpu": 1}},
                    10,
                )[1],
            ],
            0,
        ),
        (
            "S1",
            "classic fair-share factors user1..5",
            [0.408479, 0.022097, 0.125000, 0.500000, 0.749154],
            lambda: [float(classic[tree.index[u]]) for u in users],
            1e-6,
        ),
        (
            "S2",
            "Fair Tree factors user1..5",
            [0.6, 0.2, 0.4, 0.8, 1.0],
            lambda: [float(fairtree[tree.index[u]]) for u in users],
            1e-12,
        ),
        (
            "H9",
            "HDRF shares n1, n2",
            [0.3, 0.2],
            lambda: [float(h_share[hx["n1"]]), float(h_share[hx["n2"]])],
            1e-9,
        ),
        (
            "H10",
            "Gavel water-filling x",
            [1, 1, 0.75, 0.75],
            lambda: water_fill(
                np.array([1, 1, 4, 4]), np.array([0, 0, 1, 1]), np.array([1.0, 1.0]), 8.0
            ).tolist(),
            1e-9,
        ),
    ]
    rows = []
    for target, measure, want, compute, tol in cases:
        ours = compute()
        rows.append(_row(target, measure, want, ours, f"±{tol:g}", _close(ours, want, tol)))
    return pd.DataFrame(rows, columns=COLUMNS)
