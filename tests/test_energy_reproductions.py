"""The spec's exact energy and carbon figures, recomputed from the shipped data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.energy.carbon import PRESETS, parse_ci
from schedlab.energy.reproductions import (
    median_saving,
    peak_to_trough_saving,
    pwr_cluster_power,
    spatial_kg_per_mwh,
    tradeoff,
    zeus_cost_limit,
    zeus_curve,
)
from schedlab.traces.cluster_spec import parse_cluster_spec

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATA = SHARED / "data"
OPENB = SHARED / "traces" / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv"
pytestmark = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")


def test_zeus_v100_resnet50_tradeoff() -> None:
    curve = zeus_curve(DATA, "v100")
    energy_kj = curve.energy_per_epoch() / 1000
    assert np.round(energy_kj, 1).tolist() == [667.1, 617.8, 599.9, 640.9, 684.5, 736.4, 774.2]
    t = tradeoff(curve)
    assert (t.best_w, round(t.best_energy_kj, 1), round(t.top_energy_kj, 1)) == (150, 599.9, 774.2)
    assert round(100 * t.energy_saving, 1) == 22.5
    assert round(100 * t.time_increase, 1) == 18.0
    assert zeus_cost_limit(curve, eta=0.5, max_power_w=250) == 175


def test_zeus_a40_optimum() -> None:
    t = tradeoff(zeus_curve(DATA, "a40"))
    assert (t.top_w, round(t.top_time_s, 1), round(t.top_power_w, 1)) == (300, 3847.5, 235.2)
    assert round(t.top_energy_kj, 1) == 904.9
    assert (t.best_w, round(t.best_time_s, 1), round(t.best_energy_kj, 1)) == (200, 4123.5, 732.3)
    assert (round(100 * t.energy_saving, 1), round(100 * t.time_increase, 1)) == (19.1, 7.2)


@pytest.mark.parametrize(
    ("gpu", "groups", "saving", "stretch"),
    [
        ("v100", 68, 22.6, 19.7),
        ("a40", 53, 19.0, 7.2),
        ("rtx6000", 52, 22.6, 19.7),
        ("p100", 45, 12.0, 5.7),
    ],
)
def test_median_saving_over_all_groups(
    gpu: str, groups: int, saving: float, stretch: float
) -> None:
    n, s, t = median_saving(DATA, gpu)
    assert (n, round(100 * s, 1), round(100 * t, 1)) == (groups, saving, stretch)


@pytest.mark.skipif(not OPENB.is_file(), reason="no openb node list")
def test_pwr_power_of_the_openb_cluster() -> None:
    cluster = parse_cluster_spec(str(OPENB))
    assert cluster.size == 1213
    kw = {k: round(v, 1) for k, v in pwr_cluster_power(cluster, DATA).items()}
    assert (kw["empty"], kw["empty_gpu"], kw["empty_cpu"]) == (227.2, 174.4, 52.7)
    assert (kw["busy"], kw["busy_gpu"], kw["busy_cpu"]) == (1590.1, 1028.8, 561.3)


@pytest.mark.parametrize(("preset", "saving"), [("gb2020", 30.4), ("de2020", 21.4)])
def test_closed_form_carbon_shifting(preset: str, saving: float) -> None:
    a = PRESETS[preset].a
    got = peak_to_trough_saving(preset)
    assert got == pytest.approx(a / (1 + a / 2), rel=1e-12)
    assert round(100 * got, 1) == saving
    # against a uniformly random start the saving is a/2 of the mean
    series = parse_ci(f"synth:{preset},s=0,days=1")
    mean = float(np.mean(series.values))
    assert mean == pytest.approx(PRESETS[preset].mu)
    assert 1 - series.at(6 * 3600) / mean == pytest.approx(a / 2)


def test_spatial_check() -> None:
    chn, fra = spatial_kg_per_mwh(DATA, "CHN"), spatial_kg_per_mwh(DATA, "FRA")
    assert (round(chn, 1), round(fra, 1)) == (582.3, 56.0)
    assert round(100 * (1 - fra / chn), 1) == 90.4
