"""The Crux study: its workload, its window average, the calibration's model, and the script's
--quick run end to end."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.experiments.crux_study import (
    GPT_ALONE,
    MIX,
    _calibration_footprints,
    _outcome,
    clos_workload,
    window_average,
)

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "crux_clos.py"


def test_window_average_by_hand() -> None:
    t = np.array([0.0, 10.0, 30.0])
    v = np.array([1.0, 3.0, 0.0])
    # [5, 20]: 5 s at 1, 10 s at 3 → 35 / 15.
    assert window_average(t, v, 5.0, 20.0) == pytest.approx(35 / 15)
    # Beyond the last point the last value holds.
    assert window_average(t, v, 25.0, 40.0) == pytest.approx((5 * 3) / 15)
    with pytest.raises(ValueError):
        window_average(t, v, 3.0, 3.0)


def test_workload_is_seeded_and_follows_the_mix() -> None:
    a, b = clos_workload(400, 2768, 1), clos_workload(400, 2768, 1)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(clos_workload(400, 2768, 2))
    assert (np.diff(a["submit_time"]) >= 0).all() and a["submit_time"].iloc[0] == 0
    assert (a["num_gpus"] == a["gpus_per_node"] * a["num_nodes"]).all()
    shares = a["job_id"].str.rsplit("-", n=1).str[0].value_counts(normalize=True)
    for kind in MIX:
        assert shares[kind.name] == pytest.approx(kind.share, abs=0.08)


def test_calibration_model_keeps_gpt_at_its_published_alone_time() -> None:
    unit = _calibration_footprints()
    x = np.array([np.log(20e9), np.log(5e9), np.log(0.5), 0.2])
    got = _outcome("random-phase", x, unit)
    assert got is not None
    assert got["gpt_alone_s"] == pytest.approx(GPT_ALONE)
    assert got["gpt_shared_s"] > GPT_ALONE  # they share the ToR uplinks
    assert got["gpt_throughput"] < 0 and got["bert_throughput"] < 0
    # Isolated links: nobody slows down.
    iso = _outcome("isolated", x, unit)
    assert iso is not None and iso["gpt_throughput"] == iso["bert_throughput"] == 0


def test_quick_run_writes_tables_and_figure(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "crux"
    monkeypatch.setattr(sys, "argv", ["crux_clos.py", "--out", str(out), "--quick"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    table = pd.read_csv(out / "table.csv")
    clos = table[table["part"] == "clos"]
    assert clos["config"].tolist()[0] == "crux" and len(clos) == 8  # 4 configs × 2 fabrics
    assert clos["fabric"].nunique() == 2
    assert (clos["completed"] == 40).all()
    assert ((clos["compute_util"] > 0) & (clos["compute_util"] <= 1)).all()
    calib = table[table["part"] == "calibration"].set_index("rule")
    assert not calib.loc["isolated", "hits_all_four"]  # nothing slows down without sharing
    assert not calib.loc["priority (GPT high)", "hits_all_four"]
    assert (out / "figure.png").stat().st_size > 1000
    assert "Crux on crux-clos" in (out / "table.md").read_text()
