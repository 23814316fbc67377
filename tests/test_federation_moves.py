"""Moving jobs between sites (``reconsider``, ``move_running``): hand-computed cases, the
invariants under random federations, and the command as a user runs it.

Set-up of the hand cases (as tests/test_federation_cases.py): sites A and B, one node of 8 V100
each, fifo; A $2/GPU-h, B $1/GPU-h; egress $0.09/GB at A, $0.05 at B; WAN A↔B 1 GB/s, rtt 0,
no sharing; binary power (300 W per V100), PUE 1; CI A 400 g/kWh, B 100 g/kWh. Re-scoring every
100 s. With ``user-factor:2`` queued jobs are estimated at twice their run time while running
ones are estimated from their true progress, so a site whose queue drains faster than estimated
becomes better than it looked at dispatch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import _energy_data_found
from schedlab.cli import main
from schedlab.federation.run import FederationOptions, federation_jobs, run_federation
from schedlab.model.snapshot import DONE
from test_federation_cases import site

REL = 1e-9

pytestmark = pytest.mark.skipif(
    not _energy_data_found(), reason="the power tables in ../shared/data are not found"
)


def federation(tmp_path: Path, settings_: str, store: str = "") -> Path:
    text = f'[federation]\nwan_sharing = "none"\nreconsider = "periodic:100"\n{settings_}\n'
    text += site("A", 2.0, 0.09, "const:400", wan="wan = { B = { gbps = 8, rtt_ms = 0 } }")
    text += site("B", 1.0, 0.05, "const:100")
    path = tmp_path / "fed.toml"
    path.write_text(text + store)
    return path


def replay(
    tmp_path: Path, fed: Path, rows: list[str], columns: str = "", **options
) -> pd.DataFrame:
    trace = tmp_path / "jobs.csv"
    header = "job_id,submit_time,num_gpus,duration,data_site,data_gb,site" + columns
    trace.write_text(header + "\n" + "\n".join(rows) + "\n")
    result = run_federation(fed, FederationOptions(trace=str(trace), **options))
    return federation_jobs(result).set_index("job_id")


#: a1 keeps A busy to 1000 s; at B b1 runs to 400 s and b2 (estimated 800 s, true 400) after it.
#: x (t = 10, true 300 s, estimated 600 s) goes to A: A 1000 + 600 = 1600 against B
#: 400 + 800 + 600 = 1800. At 400 b2 starts and B's estimate drops to 800 + 600: 1000 s from
#: now against 1200 at A, below 0.9 × 1200 = 1080, so x moves at 400.
BUSY = ["a1,0,8,1000,,0,A", "b1,0,8,400,,0,B", "b2,0,8,400,,0,B"]
EF = 'dispatcher = "earliest-finish"\nruntime_estimate = "user-factor:2"'


def test_r1_a_queued_job_moves_when_another_site_beats_its_own_by_the_margin(tmp_path) -> None:
    j = replay(tmp_path, federation(tmp_path, EF), [*BUSY, "x,10,8,300,,0,"]).loc["x"]
    assert (j.site, j.moves, j.start_time, j.end_time, j.jct) == ("B", 1, 800.0, 1100.0, 1090.0)
    assert j.queue_s == pytest.approx((400 - 10) + (800 - 400), rel=REL)
    assert j.compute_usd == pytest.approx(8 * 300 * 1.0 / 3600, rel=REL)
    assert j.egress_usd == 0 and j.transfer_s == 0
    # with a margin of 50 % B never wins by enough: x waits for A (1000–1300)
    stay = federation(tmp_path, EF + "\nmove_margin = 0.5")
    j = replay(tmp_path, stay, [*BUSY, "x,10,8,300,,0,"]).loc["x"]
    assert (j.site, j.moves, j.start_time, j.jct) == ("A", 0, 1000.0, 1290.0)
    # joint with the time term only ranks as earliest-finish does
    joint = 'dispatcher = "joint"\nweights = { time = 1, cost = 0, carbon = 0 }\n'
    joint += 'runtime_estimate = "user-factor:2"'
    j = replay(tmp_path, federation(tmp_path, joint), [*BUSY, "x,10,8,300,,0,"]).loc["x"]
    assert (j.site, j.moves, j.jct) == ("B", 1, 1090.0)


def test_r1_without_reconsider_nothing_moves(tmp_path) -> None:
    fed = federation(tmp_path, EF)
    fed.write_text(fed.read_text().replace('reconsider = "periodic:100"', ""))
    j = replay(tmp_path, fed, [*BUSY, "x,10,8,300,,0,"])
    assert (j.moves == 0).all() and j.loc["x"].site == "A" and j.loc["x"].jct == 1290.0


def test_r2_the_move_stages_the_input_again_and_pays_its_egress(tmp_path) -> None:
    """x's 100 GB at A: the move at 400 sends it A→B (400–500), $9; x waits for b2 at B."""
    j = replay(tmp_path, federation(tmp_path, EF), [*BUSY, "x,10,8,300,A,100,"]).loc["x"]
    assert (j.site, j.moves, j.start_time, j.jct) == ("B", 1, 800.0, 1090.0)
    assert j.transfer_s == pytest.approx(100.0, rel=REL)
    assert (j.egress_gb, j.egress_usd) == (100.0, pytest.approx(9.0, rel=REL))
    assert j.queue_s == pytest.approx((400 - 10) + (800 - 500), rel=REL)


STORE = """
[[data_store]]
name = "S"
egress = { flat = 0.02 }
wan = { A = { gbps = 8, rtt_ms = 0 }, B = { gbps = 0.8, rtt_ms = 0 } }
"""


def test_r3_a_staged_copy_is_moved_when_it_scores_better_than_the_data_site(tmp_path) -> None:
    """x's 100 GB at store S: 100 s to A, 1000 s to B. Dispatch: A 110→1000 + 600 = 1600, B
    max(1010, 1200) + 600 = 1800 → A (staged 10–110). At 400: from S B would start at
    max(1400, 800) = 1400 (1000 + 600 → 1600 s from now), from A's copy at max(500, 800) = 800
    (1000 s) → moves with A's copy: egress $2 (S→A) + $9 (A→B), 200 GB, 200 s of transfer."""
    fed = federation(tmp_path, EF, STORE)
    j = replay(tmp_path, fed, [*BUSY, "x,10,8,300,S,100,"]).loc["x"]
    assert (j.site, j.moves, j.start_time, j.jct) == ("B", 1, 800.0, 1090.0)
    assert j.transfer_s == pytest.approx(200.0, rel=REL)
    assert j.egress_gb == pytest.approx(200.0, rel=REL)
    assert j.egress_usd == pytest.approx(100 * 0.02 + 100 * 0.09, rel=REL)
    assert j.queue_s == pytest.approx((400 - 110) + (800 - 500), rel=REL)


def test_r4_on_admit_the_moved_job_stages_in_on_its_new_sites_gpus(tmp_path) -> None:
    """As R2 under on-admit: x moves at 400 with nothing staged; B admits it at 800, holds its
    8 GPUs for the 100 s transfer, and it runs 900–1200."""
    fed = federation(tmp_path, EF + '\nstage_in = "on-admit"')
    j = replay(tmp_path, fed, [*BUSY, "x,10,8,300,A,100,"]).loc["x"]
    assert (j.site, j.moves, j.start_time, j.end_time) == ("B", 1, 800.0, 1200.0)
    assert j.hold_gpu_s == pytest.approx(800.0, rel=REL)
    assert j.transfer_s == pytest.approx(100.0, rel=REL)
    assert j.egress_usd == pytest.approx(9.0, rel=REL)


#: least-loaded, running jobs move: x (8 GPUs, 1000 s) starts at A at 0 (tie → A); b keeps B
#: busy to 150; y (pinned, 500 s) queues at A at 50. At 200 A's load is (8 + 8)/8 = 2 and B's
#: with x (0 + 8)/8 = 1 < 0.9 × 2: x stops at 200 with 800 s left, its 50 GB checkpoint crosses
#: to B (200–250), it restarts there (30 s overhead) and ends at 280 + 800 = 1080.
RUNNING = ["x,0,8,1000,,0,", "b,0,8,150,,0,B", "y,50,8,500,,0,A"]
LL = 'dispatcher = "least-loaded"\nmove_running = true'


def test_r5_a_running_job_moves_with_its_checkpoint_and_restarts(tmp_path) -> None:
    fed = federation(tmp_path, LL)
    rows = [r + ",50" for r in RUNNING]
    frame = replay(tmp_path, fed, rows, ",ckpt_gb", restart_overhead=30.0)
    x, y = frame.loc["x"], frame.loc["y"]
    assert (x.site, x.moves, x.start_time, x.end_time) == ("B", 1, 0.0, 1080.0)
    assert (y.site, y.start_time, y.end_time) == ("A", 200.0, 700.0)
    assert x.transfer_s == pytest.approx(50.0, rel=REL)
    assert (x.egress_gb, x.egress_usd) == (50.0, pytest.approx(4.5, rel=REL))
    assert x.queue_s == 0.0 and x.preemptions == 0
    assert x.gpu_seconds == pytest.approx(8 * 200 + 8 * (1080 - 250), rel=REL)
    assert x.compute_usd == pytest.approx((8 * 200 * 2 + 8 * 830 * 1) / 3600, rel=REL)
    assert x.energy_kwh == pytest.approx(2.4 * (200 + 830) / 3600, rel=REL)
    assert x.carbon_kg == pytest.approx(2.4 * (200 * 400 + 830 * 100) / 3600 / 1000, rel=REL)


def test_r5_without_a_checkpoint_the_work_starts_over(tmp_path) -> None:
    fed = federation(tmp_path, LL)
    rows = [r + ",50,0" for r in RUNNING]
    x = replay(tmp_path, fed, rows, ",ckpt_gb,checkpoint", restart_overhead=30.0).loc["x"]
    assert (x.site, x.moves, x.end_time) == ("B", 1, 280.0 + 1000.0)


def test_static_scores_never_move_a_job(tmp_path) -> None:
    """cheapest (and greenest on constant series) score a job the same at every instant: what
    dispatch chose stays best."""
    for dispatcher in ("cheapest", "greenest"):
        fed = federation(tmp_path, f'dispatcher = "{dispatcher}"')
        frame = replay(tmp_path, fed, [*BUSY, "x,10,8,300,A,50,", "z,20,4,900,B,10,"])
        assert (frame.moves == 0).all()


# -- invariants ------------------------------------------------------------------------------
FED3 = """[federation]
dispatcher = "{dispatcher}"
reconsider = "periodic:{period}"
move_running = {running}
stage_in = "{stage_in}"
runtime_estimate = "{estimate}"
wan_sharing = "fair"
[[site]]
name = "A"
cluster = "2x8:V100"
ci = "const:300"
price_gpu_hour = {{ V100 = 2 }}
egress = {{ flat = 0.09 }}
wan = {{ B = {{ gbps = 4, rtt_ms = 20 }}, C = {{ gbps = 8, rtt_ms = 5 }} }}
[[site]]
name = "B"
cluster = "1x8:V100"
ci = "const:50"
price_gpu_hour = {{ V100 = 1 }}
egress = {{ flat = 0.05 }}
wan = {{ C = {{ gbps = 2, rtt_ms = 0 }} }}
[[site]]
name = "C"
cluster = "3x4:V100"
ci = "const:200"
ordering = "{ordering}"
price_gpu_hour = {{ V100 = 1.5 }}
"""

jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 300),  # submit
        st.sampled_from([1, 2, 4, 8]),  # GPUs
        st.integers(10, 900),  # duration
        st.sampled_from(["A", "B", "C"]),  # data site
        st.sampled_from([0, 5, 40]),  # GB
        st.sampled_from(["", "", "", "A", "B"]),  # pin
        st.sampled_from([0, 10]),  # checkpoint GB
        st.booleans(),  # checkpoint
    ),
    min_size=1,
    max_size=16,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=jobs_strategy,
    dispatcher=st.sampled_from(
        ["least-loaded", "cheapest", "greenest", "earliest-finish", "joint"]
    ),
    period=st.sampled_from([30, 120]),
    running=st.booleans(),
    stage_in=st.sampled_from(["before-queue", "on-admit"]),
    estimate=st.sampled_from(["oracle", "user-factor:2", "user-factor:0.5"]),
    ordering=st.sampled_from(["fifo", "sjf"]),
)
def test_every_job_is_accounted_for_once_and_no_site_is_over_allocated(
    tmp_path, rows, dispatcher, period, running, stage_in, estimate, ordering
) -> None:
    fed = tmp_path / "fed3.toml"
    fed.write_text(
        FED3.format(
            dispatcher=dispatcher, period=period, running=str(running).lower(),
            stage_in=stage_in, estimate=estimate, ordering=ordering,
        )
    )  # fmt: skip
    trace = tmp_path / "jobs.csv"
    lines = ["job_id,submit_time,num_gpus,duration,data_site,data_gb,site,ckpt_gb,checkpoint"]
    for i, (t, n, d, src, gb, pin, ckpt, cp) in enumerate(rows):
        lines.append(f"j{i},{t},{n},{d},{src},{gb},{pin},{ckpt},{int(cp)}")
    trace.write_text("\n".join(lines) + "\n")
    result = run_federation(fed, FederationOptions(trace=str(trace), restart_overhead=15.0))
    frame = federation_jobs(result)  # in the engines' order (by submit time)
    out = result.outcome
    # every job ends exactly once, at the site the manager says it is at
    done_at = np.stack([r.status == DONE for r in result.records])
    assert (done_at.sum(axis=0) == 1).all()  # every job fits somewhere: each completes once
    assert (np.argmax(done_at, axis=0) == out.site).all()
    assert (frame.status == "completed").all() and len(frame) == len(rows)
    # no site ever holds more GPUs than it has, and all are free at the end
    for s, r in zip(result.sites, result.records, strict=True):
        assert (r.ts_busy <= s.cluster.total_gpus).all() and (r.ts_busy >= 0).all()
        assert s.run.free_gpus == s.cluster.total_gpus
    # a job's GPU time is the sum of what each site recorded for it
    per_site = np.stack([r.gpu_seconds for r in result.records]).sum(axis=0)
    assert np.allclose(frame.gpu_seconds.to_numpy(), per_site, rtol=1e-9)
    assert (frame.end_time >= frame.start_time).all()
    assert (frame.start_time >= frame.submit_time).all()
    assert (frame.queue_s >= -1e-9).all() and (frame.transfer_s >= -1e-9).all()
    # pinned jobs stay where they are pinned
    by_id = frame.set_index("job_id")
    for i, row in enumerate(rows):
        if row[5]:
            assert by_id.loc[f"j{i}", "site"] == row[5] and by_id.loc[f"j{i}", "moves"] == 0
    if not running:  # only queued jobs move: each job runs at one site, start to end
        assert (by_id[by_id.moves > 0].preemptions == 0).all()
    # the same input gives the same run
    again = federation_jobs(
        run_federation(fed, FederationOptions(trace=str(trace), restart_overhead=15.0))
    )
    pd.testing.assert_frame_equal(frame, again)


# -- as a user runs it -----------------------------------------------------------------------
def test_replay_federation_with_moves_end_to_end(tmp_path, capsys) -> None:
    fed = federation(tmp_path, LL)
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,site,ckpt_gb\n"
        "x,0,8,1000,,50\nb,0,8,150,B,0\ny,50,8,500,A,0\n"
    )
    out = tmp_path / "out"
    argv = ["replay", "--federation", str(fed), "--trace", str(trace)]
    assert main([*argv, "--restart-overhead", "30", "--out", str(out)]) == 0
    frame = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert frame.loc["x", "moves"] == 1 and frame.loc["x", "end_time"] == 1080.0
    fed_block = json.loads((out / "summary.json").read_text())["federation"]
    assert fed_block["reconsider"] == "periodic:100" and fed_block["move_running"] is True
    assert fed_block["global"]["moves"] == 1
    assert fed_block["global"]["running_moves"] == 1
    assert fed_block["sites"]["B"]["moves_in"] == 1 and fed_block["sites"]["A"]["moves_out"] == 1
    assert fed_block["sites"]["A"]["moves_in"] == 0
    assert "1 move" in capsys.readouterr().out
    sites = pd.read_csv(out / "sites.csv").set_index("site")
    assert sites.loc["B", "moves_in"] == 1 and sites.loc["A", "moves_out"] == 1
