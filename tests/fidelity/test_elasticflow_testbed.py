"""The ElasticFlow (ASPLOS '23) testbed comparison, rebuilt with the runs and the checks of
``schedlab reproduce elasticflow`` (:mod:`schedlab.experiments.elasticflow_study`).

These tests run the testbed and the 60 s-slot runs (the 195-job trace on 16 × 8 A100 and ITP
cluster 10 on 4 × 8 A100), require every gated check of the study to pass, and pin every
policy's exact count of deadlines met (and of rejections where the policy rejects). The counts
are regression pins: the runs are deterministic, so any change to a policy's decisions on these
traces moves them. Beside each pin, the public artifact simulator's figure and the paper's
testbed figure it is compared to.
"""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import SHARED_DIR
from schedlab.experiments.deadline_study import run_study
from schedlab.experiments.deadline_study import testbed_runs as make_testbed_runs
from schedlab.experiments.elasticflow_study import part_slot60, part_testbed, runs_at_60
from schedlab.reproduce.checks import Reproduction

pytestmark = [pytest.mark.slow, pytest.mark.shared]

ITP = SHARED_DIR / "traces" / "elasticflow-itp" / "simulation"
A100 = SHARED_DIR / "traces" / "elasticflow-artifact" / "throughputs_A100"
MISSING = (
    "../shared/traces/elasticflow-itp or elasticflow-artifact not found: the public traces are "
    "not beside this checkout"
)
TESTBED = ("edf-greedy", "gandiva", "tiresias", "themis", "chronus", "elasticflow")
AT_60 = ("edf-greedy", "gandiva", "tiresias", "elasticflow")


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, float, str], dict[str, object]]:
    """Every run once (2 workers), keyed by (trace, slot, policy)."""
    if not (ITP.is_dir() and A100.is_dir()):
        pytest.skip(MISSING)
    runs = [*make_testbed_runs(SHARED_DIR, TESTBED), *runs_at_60(SHARED_DIR)]
    table: pd.DataFrame = run_study(runs, 2)
    return {
        (run.label, run.slot, run.policy): row
        for run, row in zip(runs, table.to_dict("records"), strict=True)
    }


@pytest.mark.parametrize(
    ("policy", "met", "rejected"),
    [
        # artifact simulator 0.087 (17), paper testbed 0.087
        ("edf-greedy", 17, 0),
        # artifact 0.241 (47), paper 0.210
        ("gandiva", 47, 0),
        # artifact 0.462 (90), paper 0.456 (89)
        ("tiresias", 89, 0),
        # artifact 0.410 (80, judged at the lease end), paper 0.390
        ("themis", 81, 0),
        # no artifact figure (it needs a commercial solver), paper 0.410; the 104 rejected
        # cannot finish by their deadline even alone at their requested count
        ("chronus", 91, 104),
        # artifact 0.749 (146), paper 0.667
        ("elasticflow", 150, 39),
    ],
)
def test_testbed_trace_at_the_240s_slot(rows, policy: str, met: int, rejected: int) -> None:
    row = rows[("195job", 240.0, policy)]
    assert row["deadline_jobs"] == 195 and row["gpus"] == 128
    assert (row["met"], row["rejected"]) == (met, rejected)


def test_the_studys_gated_checks_pass(rows, tmp_path) -> None:
    """Each DSR within 0.03 (240 s) or 0.05 (60 s) of the artifact's, the published ranking."""
    result = Reproduction("elasticflow", "", "")
    part_testbed(result, pd.DataFrame([rows[("195job", 240.0, p)] for p in TESTBED]), tmp_path)
    part_slot60(result, pd.DataFrame([r for (_, slot, _), r in rows.items() if slot == 60.0]))
    assert len([c for c in result.checks if c.gated]) == 5 + 2 + 8
    assert [c.what for c in result.checks if c.gated and c.failed] == []


def test_testbed_ranking_at_the_240s_slot(rows) -> None:
    # As in the paper and the artifact: ElasticFlow far ahead, the fixed-size policies (Tiresias,
    # Chronus, Themis; the paper has Tiresias above Chronus, here Chronus leads by two jobs) in
    # the middle, then Gandiva, and EDF last.
    dsr = {p: rows[("195job", 240.0, p)]["dsr"] for p in TESTBED}
    middle = min(dsr[p] for p in ("tiresias", "chronus", "themis"))
    assert dsr["elasticflow"] > max(dsr[p] for p in ("tiresias", "chronus", "themis")) + 0.2
    assert middle > dsr["gandiva"] > dsr["edf-greedy"]


@pytest.mark.parametrize(
    ("trace", "policy", "met", "rejected"),
    [
        # 195-job trace, 16 × 8 A100: artifact 0.097 / 0.241 / 0.492 / 0.877
        ("195job", "edf-greedy", 17, 0),
        ("195job", "gandiva", 45, 0),
        ("195job", "tiresias", 94, 0),
        ("195job", "elasticflow", 162, 32),
        # ITP cluster 10 (260 jobs), 4 × 8 A100: artifact 0.269 / 0.300 / 0.419 / 0.908
        ("cluster10", "edf-greedy", 65, 0),
        ("cluster10", "gandiva", 78, 0),
        ("cluster10", "tiresias", 105, 0),
        ("cluster10", "elasticflow", 227, 27),
    ],
)
def test_60s_slot(rows, trace: str, policy: str, met: int, rejected: int) -> None:
    row = rows[(trace, 60.0, policy)]
    assert (row["met"], row["rejected"]) == (met, rejected)
