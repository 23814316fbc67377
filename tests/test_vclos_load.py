"""The vClos load study: its workload rules (both size mixes), the 4,096-GPU reference logs, and
the quick study through ``schedlab reproduce`` end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import SHARED_MISSING_REASON
from schedlab.cli import main
from schedlab.experiments.vclos_load import (
    QUICK,
    comm_shares,
    job_kind,
    lumos_reference,
    share_of,
    workload,
)
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import parse_topology
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
pytestmark = pytest.mark.skipif(
    not (SHARED / "data" / "lumoscore").is_dir(), reason=SHARED_MISSING_REASON
)


def test_shares_at_the_largest_listed_size_not_above() -> None:
    shares = comm_shares(SHARED)
    assert share_of(shares, "VGG16", "all_reduce", 4) == 0.25
    assert share_of(shares, "VGG16", "all_reduce", 48) == 0.10
    assert share_of(shares, "VGG16", "all_reduce", 512) == 0.04
    assert share_of(shares, "ResNet50", "all_reduce", 8) == 0.04  # below the first: the first
    assert share_of(shares, "Pangu", "all_to_all", 512) == 0.258


def test_models_by_size() -> None:
    assert job_kind(64, 0.1, 0.2)[:2] == ("vgg16", "hd")
    assert job_kind(64, 0.1, 0.7)[:2] == ("bert", "hd")
    assert job_kind(64, 0.6, 0.0)[:2] == ("resnet50", "ring")
    assert job_kind(64, 0.9, 0.0)[:2] == ("pangu", "a2a")
    assert job_kind(192, 0.9, 0.0)[:2] == ("vgg16", "ring")


def test_workload_is_calibrated_to_the_communication_share() -> None:
    """Each job's collective alone on its packed placement takes s·T^ref, its compute (1 − s),
    and its trace duration is the isolated run time (what replay reads a duration as)."""
    topo = parse_topology(QUICK.vclos)
    frame = workload(SHARED, 60, 600.0, 3, topo, size_cap=64)
    assert frame["num_gpus"].max() <= 64
    assert (frame["isolated_duration"] % 100 == 0).all()
    assert frame["isolated_duration"].between(1000, 100_000).all()
    np.testing.assert_allclose(frame["compute_time"], 1 - frame["comm_share"])
    np.testing.assert_allclose(frame["duration"], frame["isolated_duration"])
    for _, job in frame.head(8).iterrows():
        n = int(job["num_gpus"])
        placement = tuple((h, (0, 1, 2, 3)) for h in range(n // 4))
        spec = CommSpec(str(job["collective"]), float(job["gradient_bytes"]), 0.5)
        fp = footprint(spec, placement, topo, Routing("spray"), 0)
        assert fp.comm_time(DEFAULT_ALPHA) == pytest.approx(job["comm_share"], rel=1e-9)


def test_the_groups_logs_read_as_published() -> None:
    ref = lumos_reference(SHARED).set_index("variant")
    assert ref.loc["best", "jobs"] == 1000
    assert ref.loc["best", "avg_jct"] == pytest.approx(33_288, abs=1)
    assert ref.loc["ele", "avg_jwt"] == pytest.approx(13_315, abs=1)


def test_profiled_mix_draws_the_profiled_sizes_and_their_shares() -> None:
    topo = parse_topology(QUICK.vclos)
    frame = workload(SHARED, 200, 600.0, 1, topo, mix="profiled")
    assert set(frame["num_gpus"]) <= {4, 8, 16, 32, 64, 96, 128}
    assert 96 in set(frame["num_gpus"])  # 1.5 leaves of 64 GPUs: a spine set is needed
    assert set(frame[frame["num_gpus"] == 96]["collective"]) == {"ring"}
    assert set(frame[frame["num_gpus"] == 64]["collective"]) == {"hd"}
    rows = comm_shares(SHARED)
    for _, job in frame.head(20).iterrows():
        listed = rows[(rows["gpus"] == job["num_gpus"])]["share_of_runtime"].tolist()
        assert job["comm_share"] in listed


def test_quick_study_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "study"
    argv = ["reproduce", "vclos", "--quick", "--workers", "1", "--out", str(out)]
    assert main([*argv, "--shared", str(SHARED)]) == 0
    study = out / "vclos"
    for name in ("table.csv", "table.md", "figure.png", "relative.csv", "checks.csv"):
        assert (study / name).is_file()
    table = pd.read_csv(study / "table.csv")
    assert set(table["run"]) == {"electrical", "vclos", "ocs-vclos", "ideal"}
    assert set(table["mix"]) == {"tpuv4", "profiled"}
    assert (table["completed"] == table["jobs"]).all()
    by = table.set_index(["mix", "beta", "run"])["avg_jrt"]
    for mix, beta in {(m, b) for m, b, _ in by.index}:
        # Run times: nothing beats the ideal's isolated, evenly spread runs; the electrical
        # fabric's contention makes it the slowest.
        assert by[(mix, beta, "ideal")] <= by[(mix, beta, "vclos")] * (1 + 1e-4)
        assert by[(mix, beta, "ideal")] <= by[(mix, beta, "electrical")] * (1 + 1e-4)
    # The profiled sizes make vClos wait for spine sets where the ideal does not.
    wait = table[table["mix"] == "profiled"].groupby("run")["avg_jwt"].sum()
    assert wait["vclos"] > wait["ideal"]
