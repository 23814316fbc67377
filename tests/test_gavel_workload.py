"""Gavel's workload generator: the artifact's traces come out bit for bit."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_DIR
from schedlab.errors import InputError
from schedlab.perf.throughput_matrix import read_throughput_matrix
from schedlab.traces.gavel_workload import (
    GavelWorkloadSpec,
    arrival_draws,
    arrival_times,
    gavel_job_table,
    generate_gavel_jobs,
    job_csv_lines,
)
from schedlab.traces.generic import read_generic

GAVEL = SHARED_DIR / "data" / "goodput" / "gavel"
pytestmark = pytest.mark.skipif(
    not GAVEL.exists(), reason="../shared/data/goodput/gavel not found beside this checkout"
)


@pytest.fixture(scope="module")
def matrix():
    return read_throughput_matrix(GAVEL / "simulation_throughputs.json")


@pytest.mark.shared
@pytest.mark.parametrize("kind", ["single", "multi"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generator_reproduces_the_artifacts_traces_bit_for_bit(matrix, kind: str, seed: int):
    path = GAVEL / "generated_traces" / f"continuous_{kind}_gpu_seed{seed}.csv"
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    spec = GavelWorkloadSpec(seed=seed, lam=1200, num_jobs=len(rows), multi_gpu=kind == "multi")
    jobs = generate_gavel_jobs(matrix, spec)
    times = arrival_times(seed, 1200, len(rows))
    draws = list(arrival_draws(seed, len(rows)))
    ours = [
        [
            str(i),
            repr(times[i]),
            repr(draws[i]),
            j.job_type,
            str(j.scale_factor),
            repr(j.duration),
            repr(j.total_steps),
            repr(j.priority_weight),
        ]
        for i, j in enumerate(jobs)
    ]
    theirs = [list(r.values()) for r in rows]
    assert ours == theirs


@pytest.mark.shared
def test_other_lambda_scales_the_same_draws(matrix):
    times = arrival_times(0, 2000, 4)
    draws = list(arrival_draws(0, 3))
    expected = [0.0]
    for d in draws:
        expected.append(d / (1.0 / 2000) + expected[-1])
    assert times == expected


def test_static_trace_puts_every_job_at_zero():
    assert arrival_times(5, 0.0, 4) == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.shared
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), multi=st.booleans())
def test_same_seed_same_jobs_and_steps_are_duration_times_v100(matrix, seed, n, multi):
    spec = GavelWorkloadSpec(seed=seed, num_jobs=n, multi_gpu=multi, multi_priority=True)
    a, b = gavel_job_table(matrix, spec), gavel_job_table(matrix, spec)
    for col in ("submit_time", "iterations", "duration", "num_gpus", "priority_weight"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    for i in range(n):
        key = (str(a.model_name[i]), int(a.num_gpus[i]))
        assert a.iterations[i] == a.duration[i] * matrix.throughput(key, "v100")
        assert 60 * 10**1.5 <= a.duration[i] <= 60 * 10**4
    assert set(np.unique(a.priority_weight)) <= {1.0, 5.0}
    assert np.all(np.diff(a.submit_time) >= 0)


@pytest.mark.shared
def test_written_csv_reads_back_bit_for_bit(matrix, tmp_path: Path):
    jobs = gavel_job_table(
        matrix, GavelWorkloadSpec(seed=3, num_jobs=40, multi_gpu=True, slos=True)
    )
    path = tmp_path / "g.csv"
    path.write_text("\n".join(job_csv_lines(jobs)) + "\n")
    back = read_generic(path).jobs
    for col in ("submit_time", "iterations", "duration", "num_gpus", "deadline"):
        np.testing.assert_array_equal(getattr(back, col), getattr(jobs, col))
    assert list(back.model_name) == list(jobs.model_name)


def test_bad_spec_is_refused():
    with pytest.raises(InputError, match="'lam' must be ≥ 0"):
        GavelWorkloadSpec(lam=-1)
    with pytest.raises(InputError, match="number of jobs must be ≥ 1"):
        GavelWorkloadSpec(num_jobs=0)
    with pytest.raises(InputError, match="'lam' 1e\\+308 s puts arrivals past"):
        arrival_times(0, 1e308, 5)


@pytest.mark.shared
def test_gen_cli_writes_the_trace_and_refuses_a_bad_matrix(tmp_path: Path):
    out = tmp_path / "t.csv"
    cmd = [sys.executable, "-m", "schedlab", "gen", "gavel", "--seed", "0", "-n", "3"]
    ok = subprocess.run(
        [*cmd, "--throughputs", str(GAVEL / "simulation_throughputs.json"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert out.read_text().splitlines()[1].startswith("0,0.0,1,68344.35010595087,1646636.2758419,")
    bad = tmp_path / "bad.json"
    bad.write_text('{"v100": 3}')
    fail = subprocess.run(
        [*cmd, "--throughputs", str(bad), "--out", str(tmp_path / "u.csv")],
        capture_output=True,
        text=True,
    )
    assert fail.returncode == 2
    assert fail.stderr.strip().splitlines() == [
        f"schedlab: error: worker type 'v100' must map job types to throughputs at {bad}"
    ]
    assert not (tmp_path / "u.csv").exists()
