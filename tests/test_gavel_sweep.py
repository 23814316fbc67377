"""A sweep over Gavel's generated trace, end to end as a user runs it: ``gen gavel`` for two
seeds, then ``sweep`` of schedlab's and Gavel's policies over both traces on a heterogeneous
cluster with Gavel's throughput matrix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import SHARED_DIR
from schedlab.cli import main

pytestmark = pytest.mark.shared

MATRIX = SHARED_DIR / "data" / "goodput" / "gavel" / "simulation_throughputs.json"
CLUSTER = "1x1:V100+1x1:P100+1x1:K80"
POLICIES = [
    "fifo",
    "tiresias",
    "gavel-fifo-perf",
    "gavel-max-min-fairness",
    "gavel-max-min-fairness-perf",
    "gavel-finish-time-fairness-perf",
]
JOBS = 8


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    if not MATRIX.is_file():
        pytest.skip("../shared/data/goodput/gavel not found beside this checkout")
    root = tmp_path_factory.mktemp("gavel-sweep")
    traces = []
    for seed in (0, 1):
        trace = root / f"gavel-seed{seed}.csv"
        gen = ["gen", "gavel", "--throughputs", str(MATRIX), "--seed", str(seed)]
        assert main([*gen, "--lam", "600", "-n", str(JOBS), "--out", str(trace)]) == 0
        traces.append(trace)
    out = root / "sweep"
    argv = ["sweep", "--cluster", CLUSTER, "--traces", *map(str, traces), "--throughputs"]
    argv += [str(MATRIX), "--policies", *POLICIES, "--seeds", "0", "--workers", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    return out, traces


def test_every_policy_runs_every_trace_to_the_end(sweep: tuple[Path, list[Path]]) -> None:
    out, traces = sweep
    results = pd.read_csv(out / "results.csv")
    assert len(results) == len(POLICIES) * len(traces)
    assert sorted(results["policy"].unique()) == sorted(POLICIES)
    assert results.groupby("policy")["trace"].nunique().eq(len(traces)).all()
    assert (results["jobs"] == JOBS).all() and (results["completed"] == JOBS).all()
    rho = results["ftf_rho_mean"].to_numpy(dtype=float)
    assert np.isfinite(rho).all() and (rho > 0).all()
    # The two seeds' traces differ, so the same policy sees different JCTs on them.
    fifo = results[results["policy"] == "gavel-fifo-perf"]["avg_jct"]
    assert fifo.nunique() == 2


def test_a_swept_run_is_the_run_replay_makes(
    sweep: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The sweep's gavel-max-min-fairness-perf on seed 0's trace equals a plain replay."""
    out, traces = sweep
    results = pd.read_csv(out / "results.csv")
    row = results[
        (results["policy"] == "gavel-max-min-fairness-perf")
        & results["trace"].astype(str).str.contains("seed0")
    ]
    assert len(row) == 1
    argv = ["replay", "--cluster", CLUSTER, "--trace", str(traces[0]), "--throughputs"]
    argv += [str(MATRIX), "--policy", "gavel-max-min-fairness-perf"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert row["avg_jct"].iloc[0] == pytest.approx(summary["avg_jct"], abs=1e-6)
    assert row["ftf_rho_mean"].iloc[0] == pytest.approx(summary["ftf_rho_mean"], abs=1e-6)
