"""The spec's exact energy and carbon figures, recomputed from the shipped data by the studies
``schedlab reproduce zeus pwr carbon`` runs (the same code writes the README's tables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DIR
from schedlab.energy.carbon import PRESETS, parse_ci
from schedlab.energy.reproductions import peak_to_trough_saving
from schedlab.experiments import energy_study
from schedlab.reproduce.context import StudyContext

DATA = SHARED_DIR / "data"
OPENB = SHARED_DIR / "traces" / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv"
pytestmark = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")


@pytest.mark.parametrize("study", ["zeus", "pwr", "carbon"])
def test_every_exact_figure_holds(study: str, tmp_path: Path) -> None:
    if study == "pwr" and not OPENB.is_file():
        pytest.skip("no openb node list")
    result = getattr(energy_study, study)(StudyContext(SHARED_DIR, tmp_path))
    assert len(result.checks) >= 5
    assert all(c.gated and c.kind == "exact" for c in result.checks)
    assert [c.what for c in result.checks if c.verdict != "pass"] == []


def test_zeus_table_holds_the_v100_optimum() -> None:
    result = energy_study.zeus(StudyContext(SHARED_DIR, Path(".")))
    by = {c.what: c.ours for c in result.checks}
    assert by["V100: energy-optimal limit (W)"] == "150"
    assert by["V100: energy/epoch at the optimum (kJ)"] == "599.9"


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
