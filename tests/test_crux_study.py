"""The Crux study: its workload, the window average it uses, the calibration's model, and the
quick study through ``schedlab reproduce`` end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.experiments.crux_study import (
    GPT_ALONE,
    MIX,
    _calibration_footprints,
    _outcome,
    clos_workload,
)
from schedlab.network.metrics import machine_days, window_mean


def test_window_average_by_hand() -> None:
    t = np.array([0.0, 10.0, 30.0])
    v = np.array([1.0, 3.0, 0.0])
    # [5, 20]: 5 s at 1, 10 s at 3 → 35 / 15.
    assert window_mean(t, v, 5.0, 20.0) == pytest.approx(35 / 15)
    # Beyond the last point the last value holds.
    assert window_mean(t, v, 25.0, 40.0) == pytest.approx((5 * 3) / 15)
    assert np.isnan(window_mean(t, v, 3.0, 3.0))
    # The whole run to 30 s: 10 × 1 + 20 × 3 value-seconds, in days.
    assert machine_days(t, v, 30.0) == pytest.approx(70 / 86400)


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


def test_quick_run_writes_tables_and_figure(tmp_path: Path) -> None:
    out = tmp_path / "repro"
    assert main(["reproduce", "crux", "--quick", "--workers", "1", "--out", str(out)]) == 0
    table = pd.read_csv(out / "crux" / "table.csv")
    clos = table[table["part"] == "clos"]
    assert clos["config"].tolist()[0] == "crux" and len(clos) == 12  # 4 configs × 3 fabrics
    assert clos["fabric"].nunique() == 3
    assert (clos["completed"] == 40).all()
    assert ((clos["compute_util"] > 0) & (clos["compute_util"] <= 1)).all()
    calib = table[table["part"] == "calibration"].set_index("rule")
    assert not calib.loc["isolated", "hits_all_four"]  # nothing slows down without sharing
    assert not calib.loc["priority (GPT high)", "hits_all_four"]
    assert (out / "crux" / "figure.png").stat().st_size > 1000
    checks = pd.read_csv(out / "crux" / "checks.csv")
    assert checks["what"].str.contains("Crux's utilisation gain over fair").sum() == 3
    assert (
        "Compute utilisation over the saturated window" in (out / "crux" / "table.md").read_text()
    )
