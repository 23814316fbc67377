"""The three-site study's set-up, and its headline direction on a short window of Philly."""

from __future__ import annotations

import pytest

from conftest import SHARED_DIR
from schedlab.experiments import federation_study as study
from schedlab.federation.config import read_federation

PHILLY = SHARED_DIR / "traces" / "philly-adaptdl" / "philly.csv"
CARBON = SHARED_DIR / "data" / "carbon" / "hourly"


def case(tmp_path, dispatcher: str, days: float = 0.5, data: str = "0") -> study.Case:
    return study.Case(str(tmp_path), str(PHILLY), str(CARBON), dispatcher, "07-01", 1.0, data, days)


def test_the_study_federation_has_640_gpus_and_the_measured_round_trips(tmp_path) -> None:
    path = tmp_path / "fed.toml"
    path.write_text(study.federation_text(case(tmp_path, "joint (1,0,1)")))
    fed = read_federation(path)
    assert [s.name for s in fed.sites] == ["us", "es", "no"]
    assert fed.weights == (1.0, 0.0, 1.0) and fed.ci_offset_s == 181 * 86400
    assert fed.link("no", "us").rtt_ms == 167 and fed.link("es", "no").rtt_ms == 52
    assert sum(int(s.cluster.split("x")[0]) * 8 for s in fed.sites) == 640
    assert pytest.approx(181.7, abs=0.05) == study.CAPACITY_WEIGHTED_CI
    assert pytest.approx(128.7, abs=0.05) == study.GREENEST_BOUND_60


@pytest.mark.skipif(not PHILLY.exists() or not CARBON.exists(), reason="../shared data absent")
def test_greenest_cuts_the_carbon_intensity_of_least_loaded_dispatch(tmp_path) -> None:
    green = study.run_case(case(tmp_path, "greenest"))
    spread = study.run_case(case(tmp_path, "least-loaded"))
    assert green["jobs"] == spread["jobs"] > 100
    assert green["share_no"] > 0.9 > spread["share_no"]
    assert green["carbon_g_per_kwh"] < 0.5 * spread["carbon_g_per_kwh"]
