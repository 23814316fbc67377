"""The federation's hand-computed cases C1–C8 (docs/federation.md), exact to 1e-9.

Common set-up: sites A and B, each one node of 8 V100, fifo; A $2/GPU-h, B $1/GPU-h; egress
$0.09/GB at A and $0.05 at B; WAN A↔B 8 Gbps (1 GB/s), rtt 0, no sharing; binary power (V100
300 W), PUE 1; CI A 400 g/kWh, B 100 g/kWh; oracle run times. Jobs that keep a site busy are
pinned to it with the trace's ``site`` column.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from conftest import _energy_data_found
from schedlab.federation.egress import Egress
from schedlab.federation.run import FederationOptions, federation_jobs, run_federation

REL = 1e-9

# Every site meters its power from the public power tables (V100 300 W).
pytestmark = pytest.mark.skipif(
    not _energy_data_found(), reason="the power tables in ../shared/data are not found"
)


def site(name: str, price: float, egress: float, ci: str, gpus: int = 8, wan: str = "") -> str:
    return f"""
[[site]]
name = "{name}"
cluster = "1x{gpus}:V100"
ci = "{ci}"
price_gpu_hour = {{ V100 = {price} }}
egress = {{ flat = {egress} }}
{wan}
"""


def two_sites(tmp_path: Path, dispatcher: str, extra: str = "", ci_a: str = "const:400",
              ci_b: str = "const:100") -> Path:  # fmt: skip
    text = f'[federation]\ndispatcher = "{dispatcher}"\nwan_sharing = "none"\n{extra}\n'
    text += site("A", 2.0, 0.09, ci_a, wan="wan = { B = { gbps = 8, rtt_ms = 0 } }")
    text += site("B", 1.0, 0.05, ci_b)
    path = tmp_path / "fed.toml"
    path.write_text(text)
    return path


def replay(tmp_path: Path, fed: Path, rows: list[str]) -> pd.DataFrame:
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,data_site,data_gb,site\n" + "\n".join(rows) + "\n"
    )
    result = run_federation(fed, FederationOptions(trace=str(trace)))
    return federation_jobs(result).set_index("job_id")


def test_c1_cheapest_goes_where_compute_plus_egress_is_least(tmp_path) -> None:
    fed = two_sites(tmp_path, "cheapest")
    j = replay(tmp_path, fed, ["x,0,8,3600,A,50,"]).loc["x"]
    assert j.site == "B"
    assert j.transfer_s == pytest.approx(50.0, rel=REL)
    assert j.jct == pytest.approx(3650.0, rel=REL)
    assert j.egress_usd == pytest.approx(4.5, rel=REL)
    assert j.compute_usd == pytest.approx(8.0, rel=REL)
    # 100 GB: B costs $8 + $9 = $17 > $16 at A (break-even 88.9 GB)
    j = replay(tmp_path, fed, ["x,0,8,3600,A,100,"]).loc["x"]
    assert (j.site, j.egress_usd, j.compute_usd, j.jct) == ("A", 0.0, 16.0, 3600.0)
    assert replay(tmp_path, fed, ["x,0,8,3600,A,88.8,"]).loc["x"].site == "B"
    assert replay(tmp_path, fed, ["x,0,8,3600,A,89,"]).loc["x"].site == "A"


def test_c2_greenest_integrates_the_carbon_series(tmp_path) -> None:
    j = replay(tmp_path, two_sites(tmp_path, "greenest"), ["x,0,8,3600,A,50,"]).loc["x"]
    assert j.site == "B"
    assert j.carbon_kg == pytest.approx(0.240, rel=REL)  # 2.4 kW × 1 h × 100 g/kWh
    assert j.energy_kwh == pytest.approx(2.4, rel=REL)
    # A at 100 g/kWh for half an hour then 500: 0.720 kg; B at 250: 0.600 kg → B
    ci_a = tmp_path / "a.csv"
    ci_a.write_text("time,ci_g_per_kwh\n0,100\n1800,500\n3600,500\n7200,500\n")
    fed = two_sites(tmp_path, "greenest", ci_a=str(ci_a), ci_b="const:250")
    j = replay(tmp_path, fed, ["x,0,8,3600,A,50,"]).loc["x"]
    assert j.site == "B" and j.carbon_kg == pytest.approx(0.600, rel=REL)
    from schedlab.federation import dispatch
    from schedlab.federation.config import read_federation
    from schedlab.federation.site import carbon_series

    place = read_federation(fed).sites[0]
    series = carbon_series(place, 0.0, "A")
    assert 2400 * series.integral(0, 3600) / 3.6e6 / 1000 == pytest.approx(0.720, rel=REL)
    assert dispatch.argmin([0.72, 0.6]) == 1 and dispatch.argmin([0.6, 0.6]) == 0


def test_c3_earliest_finish_weighs_the_queue_against_the_transfer(tmp_path) -> None:
    fed = two_sites(tmp_path, "earliest-finish")
    busy = "busy,0,8,2000,A,0,A"
    j = replay(tmp_path, fed, [busy, "x,0,8,1000,A,500,"]).loc["x"]
    assert j.site == "B" and j.jct == pytest.approx(1500.0, rel=REL)
    assert j.egress_usd == pytest.approx(45.0, rel=REL)
    j = replay(tmp_path, fed, [busy, "x,0,8,1000,A,2500,"]).loc["x"]
    assert j.site == "A" and j.jct == pytest.approx(3000.0, rel=REL) and j.egress_usd == 0


C4_JOBS = ["busyA,0,8,1000,,0,A", "busyB,0,8,600,,0,B", "x,0,8,300,,0,", "y,10,8,100,,0,"]


def test_c4_multikueue_all_at_once_first_admission_wins(tmp_path) -> None:
    j = replay(tmp_path, two_sites(tmp_path, "multikueue-allatonce"), C4_JOBS)
    assert (j.loc["x"].site, j.loc["x"].start_time, j.loc["x"].jct) == ("B", 600.0, 900.0)
    assert (j.loc["y"].site, j.loc["y"].start_time, j.loc["y"].jct) == ("B", 900.0, 990.0)
    assert j.loc["x"].nominated == 2


def test_c4_multikueue_incremental_nominates_one_site_per_round(tmp_path) -> None:
    extra = "[federation.incremental]\nstep = 1\nround_s = 700"
    j = replay(tmp_path, two_sites(tmp_path, "multikueue-incremental", extra), C4_JOBS)
    assert (j.loc["x"].site, j.loc["x"].start_time, j.loc["x"].jct) == ("B", 700.0, 1000.0)
    # A and B both free at 1000: the tie goes to A, listed first
    assert (j.loc["y"].site, j.loc["y"].start_time, j.loc["y"].jct) == ("A", 1000.0, 1090.0)
    assert j.loc["y"].nominated == 2


def test_incremental_with_a_step_of_every_site_is_all_at_once(tmp_path) -> None:
    rows = [*C4_JOBS, "z,5,4,50,,0,", "w,20,8,400,,0,", "v,30,2,10,,0,"]
    a = replay(tmp_path, two_sites(tmp_path, "multikueue-allatonce"), rows)
    extra = "[federation.incremental]\nstep = 2\nround_s = 1"
    b = replay(tmp_path, two_sites(tmp_path, "multikueue-incremental", extra), rows)
    pd.testing.assert_frame_equal(a, b)


def three_sites(tmp_path: Path, dispatcher: str) -> Path:
    text = f'[federation]\ndispatcher = "{dispatcher}"\n'
    for name, gpus in (("A", 8), ("B", 16), ("C", 8)):
        text += f'[[site]]\nname = "{name}"\ncluster = "1x{gpus}:V100"\n'
        text += "price_gpu_hour = { V100 = 1 }\n"
    path = tmp_path / "fed3.toml"
    path.write_text(text)
    return path


C5_JOBS = [f"j{t},{t},4,1000,,0," for t in range(4)]


@pytest.mark.parametrize(
    ("dispatcher", "sites"),
    [("round-robin", ["A", "B", "C", "A"]), ("least-loaded", ["A", "B", "C", "B"])],
)
def test_c5_round_robin_and_least_loaded(tmp_path, dispatcher, sites) -> None:
    j = replay(tmp_path, three_sites(tmp_path, dispatcher), C5_JOBS)
    assert j.site.tolist() == sites
    assert j.jct.tolist() == [1000.0] * 4


def test_c6_joint_objective(tmp_path) -> None:
    from schedlab.federation.dispatch import Estimate, joint_scores

    j = replay(tmp_path, two_sites(tmp_path, "joint"), ["x,0,8,3600,A,50,"]).loc["x"]
    assert j.site == "B"
    est = [Estimate(0, 3600, 16.0, 960.0), Estimate(50, 3650, 12.5, 240.0)]
    a, b = joint_scores(est, 0.0, (1.0, 1.0, 1.0))
    assert a == pytest.approx(6.28, rel=REL)
    assert b == pytest.approx(3650 / 3600 + 2, rel=REL)
    only_time = two_sites(tmp_path, "joint", "weights = { time = 1, cost = 0, carbon = 0 }")
    assert replay(tmp_path, only_time, ["x,0,8,3600,A,50,"]).loc["x"].site == "A"


def test_c7_egress_presets() -> None:
    aws, gcp = Egress(preset="skypilot-aws"), Egress(preset="skypilot-gcp")
    assert aws.cost(200) == pytest.approx(17.91, rel=REL)
    assert aws.cost(20480) == pytest.approx(10239 * 0.09 + 10240 * 0.085, rel=REL)
    assert aws.cost(20480) == pytest.approx(1791.91, rel=REL)
    assert gcp.cost(200) == pytest.approx(24.0, rel=REL)
    assert aws.cost(1.0) == 0.0 and aws.cost(200 * 1024) == pytest.approx(0.05 * 200 * 1024)
    assert gcp.cost(2048) == pytest.approx(0.11 * 2048) and Egress(flat=0.09).cost(50) == 4.5


def test_c8_fair_wan_sharing() -> None:
    from schedlab.federation.config import Link
    from schedlab.federation.wan import Wan

    link = Link(8.0, 0.0)
    wan = Wan("fair")
    wan.start(1, "A", "B", 100, link, 0.0)
    wan.start(2, "A", "B", 100, link, 0.0)
    assert [(t.key, wan.last) for t in wan.advance(200.0)] == [(1, 200.0), (2, 200.0)]
    wan = Wan("fair")
    wan.start(1, "A", "B", 100, link, 0.0)
    wan.advance(50.0)
    wan.start(2, "A", "B", 100, link, 50.0)
    assert wan.next_time() == pytest.approx(150.0, rel=REL)
    assert [t.key for t in wan.advance(150.0)] == [1]
    assert wan.next_time() == pytest.approx(200.0, rel=REL)
    # a transfer on another pair does not share
    wan = Wan("fair")
    wan.start(1, "A", "B", 100, link, 0.0)
    wan.start(2, "B", "A", 100, link, 0.0)
    assert wan.next_time() == pytest.approx(100.0, rel=REL)


def test_c8_fair_sharing_in_a_replay(tmp_path) -> None:
    fed = two_sites(tmp_path, "cheapest").read_text().replace('"none"', '"fair"')
    path = tmp_path / "fair.toml"
    path.write_text(fed)
    j = replay(tmp_path, path, ["x,0,4,3600,A,100,B", "y,50,4,3600,A,100,B"])
    assert j.loc["x"].transfer_s == pytest.approx(150.0, rel=REL)
    assert j.loc["y"].transfer_s == pytest.approx(150.0, rel=REL)  # 50 → 200
    assert j.loc["y"].start_time == pytest.approx(200.0, rel=REL)


def test_wan_energy_counts_in_the_totals_and_in_greenest(tmp_path) -> None:
    """0.1 kWh/GB: C1's 50 GB into B (at B's 100 g/kWh) is 5 kWh, 0.5 kg; 10 GB of output back
    to A from B 1 kWh, 0.1 kg; the job's own 2.4 kWh, 0.24 kg."""
    fed = two_sites(tmp_path, "cheapest", "wan_kwh_per_gb = 0.1")
    result = run_federation(fed, FederationOptions(trace=str(_trace(tmp_path))))
    j = federation_jobs(result).set_index("job_id").loc["x"]
    assert j.site == "B"
    assert j.wan_kwh == pytest.approx(6.0, rel=REL)
    assert j.wan_carbon_kg == pytest.approx(0.6, rel=REL)
    assert j.energy_kwh == pytest.approx(2.4, rel=REL)  # the GPUs' own
    from schedlab.federation.run import federation_summary

    g = federation_summary(result, federation_jobs(result))["global"]
    assert g["energy_kwh"] == pytest.approx(8.4, rel=REL)
    assert g["carbon_kg"] == pytest.approx(0.84, rel=REL)
    assert g["wan_kwh"] == pytest.approx(6.0, rel=REL)
    assert g["carbon_g_per_kwh"] == pytest.approx(100.0, rel=REL)
    # greenest weighs the WAN's carbon: B's 0.24 kg + 50 GB × k × 0.1 kg/kWh against A's 0.96
    # kg (no output this time) — break-even at k = 0.144 kWh/GB
    for k, where in ((0.14, "B"), (0.15, "A")):
        fed = two_sites(tmp_path, "greenest", f"wan_kwh_per_gb = {k}")
        assert replay(tmp_path, fed, ["x,0,8,3600,A,50,"]).loc["x"].site == where


def _trace(tmp_path: Path) -> Path:
    trace = tmp_path / "out.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,data_site,data_gb,output_gb\nx,0,8,3600,A,50,10\n"
    )
    return trace
