"""The tenancy study of ``schedlab reproduce``: the one-queue run judged on the tenants' queues
(by hand), the Philly table's gated properties, and the study in the catalog."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from conftest import SHARED_DIR
from schedlab.cli import main
from schedlab.experiments.tenancy_study import philly_checks
from schedlab.reproduce.catalog import BY_NAME, load
from schedlab.tenancy.metrics import fairness, observed_timeline
from schedlab.tenancy.tree import QueueSpec, build_tree


def test_a_run_without_tenancy_is_judged_on_the_queues_by_hand():
    # 8 GPUs. a's 8-GPU job runs 0–10 s while b's waits (both asked at 0); b's runs 10–20 s.
    # 0–10: e = (4, 4), held (8, 0): unfairness 8 / 16 = 0.5, Jain (2 + 0)² / (2 · 4) = 0.5.
    # 10–20: only b asks, e_b = 8 = held: 0 (Jain needs two queues entitled: not counted).
    tree = build_tree([QueueSpec("a", deserved={"gpu": 4}), QueueSpec("b", deserved={"gpu": 4})])
    leaves = np.array([tree.index["a"], tree.index["b"]])
    timeline = observed_timeline(
        tree,
        leaves,
        submit=np.array([0.0, 0.0]),
        start=np.array([0.0, 10.0]),
        end=np.array([10.0, 20.0]),
        gpus=np.array([8, 8]),
        capacity=8.0,
    )
    assert timeline.time.tolist() == [0.0, 10.0, 20.0]
    assert timeline.alloc[:, tree.index["a"], 0].tolist() == [8, 0, 0]
    assert timeline.demand[:, tree.index["b"], 0].tolist() == [8, 8, 0]
    assert timeline.alloc[:, 0, 0].tolist() == [8, 8, 0]  # rolled up to the root
    fair = fairness(timeline, 20.0, tree.leaves)
    assert fair["unfairness"] == pytest.approx(0.25)
    assert fair["jain"] == pytest.approx(0.5)
    # b waited 0–10 below its deserved 4: starved all the time it waited.
    assert fair["starved_share"]["b"] == pytest.approx(1.0)


def test_a_job_that_never_started_only_asks():
    tree = build_tree([QueueSpec("a"), QueueSpec("b")])
    timeline = observed_timeline(
        tree,
        np.array([tree.index["a"], tree.index["b"]]),
        submit=np.array([0.0, 5.0]),
        start=np.array([0.0, math.nan]),
        end=np.array([10.0, math.nan]),
        gpus=np.array([4, 4]),
        capacity=8.0,
    )
    b = tree.index["b"]
    assert timeline.alloc[:, b, 0].tolist() == [0, 0, 0]
    assert timeline.demand[:, b, 0].tolist() == [0, 4, 4]


def table(**changes: dict[str, float]) -> pd.DataFrame:
    rows = {
        "none": {"completed": 100, "rejected": 0, "reclaims": 0, "unfairness": 0.3, "jain": 0.5},
        "kai": {"completed": 98, "rejected": 2, "reclaims": 12, "unfairness": 0.1, "jain": 0.9},
        "kueue-fair": {"completed": 100, "rejected": 0, "reclaims": 3, "unfairness": 0.2},
        "slurm-classic": {"completed": 100, "rejected": 0, "reclaims": 0, "unfairness": 0.25},
    }
    for policy, values in changes.items():
        rows[policy].update(values)
    return pd.DataFrame([{"policy": p, **v} for p, v in rows.items()])


def test_philly_checks_pass_on_a_table_that_holds_its_properties():
    checks = philly_checks(table(), 100)
    gated = [c for c in checks if c.gated]
    assert len(gated) == 4 + 1 + 2  # completed ×4, Slurm never preempts, two reclaimers
    assert all(c.verdict == "pass" for c in gated)
    assert any(c.what == "Philly kai: Jain's index (held / entitled)" for c in checks)
    assert all(math.isnan(c.ours_value) for c in checks if "kueue-fair: Jain" in c.what)


@pytest.mark.parametrize(
    "changes",
    [
        {"kai": {"completed": 97}},  # a job lost
        {"slurm-classic": {"reclaims": 1}},  # Slurm's fair share preempted
        {"kueue-fair": {"unfairness": 0.35}},  # a reclaimer less fair than one queue
    ],
)
def test_philly_checks_fail_when_a_property_breaks(changes):
    failed = [c for c in philly_checks(table(**changes), 100) if c.gated and c.failed]
    assert len(failed) == 1


def test_the_study_is_in_the_catalog():
    study = BY_NAME["tenancy"]
    assert callable(load(study))
    assert set(study.needs) == {"data/fairshare", "traces/philly-adaptdl"}


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.skipif(
    not (SHARED_DIR / "data" / "fairshare").is_dir()
    or not (SHARED_DIR / "traces" / "philly-adaptdl").is_dir(),
    reason="../shared/data/fairshare or ../shared/traces/philly-adaptdl not found",
)
def test_quick_study_from_the_command_line(tmp_path):
    out = tmp_path / "repro"
    argv = ["reproduce", "tenancy", "--quick", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    checks = pd.read_csv(out / "tenancy" / "checks.csv")
    gated = checks[checks["gated"]]
    assert len(gated) >= 14 + 18 + 11 + 2 + 3
    assert (gated["verdict"] == "pass").all(), gated[gated["verdict"] != "pass"].to_string()
    philly = pd.read_csv(out / "tenancy" / "philly.csv")
    assert len(philly) == 11 and ((philly["completed"] + philly["rejected"]) == 1000).all()
    assert "Philly, 1,000 jobs" in (out / "tenancy" / "table.md").read_text()
