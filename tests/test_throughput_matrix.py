"""Throughput matrices (Gavel's JSON) as a performance model, and their bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DIR
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.model.gpu_models import model_index
from schedlab.model.jobs import JobTable
from schedlab.perf.models import read_throughput_dir
from schedlab.perf.throughput_matrix import (
    MatrixPerf,
    convert_to_tables,
    matrix_gaps,
    read_throughput_matrix,
    split_batch,
)

GAVEL_JSON = SHARED_DIR / "data" / "goodput" / "gavel" / "simulation_throughputs.json"

#: A two-type toy matrix: A at 1 and 2 GPUs, B only at 1 (and not at all on k80).
TOY = {
    "k80": {
        "('A', 1)": {"null": 1.0, "('B', 1)": [0.5, 0.0]},
        "('A', 2)": {"null": 1.5},
        "('B', 1)": {"null": 0.0, "('A', 1)": [0.0, 0.5]},
    },
    "v100": {
        "('A', 1)": {"null": 4.0, "('B', 1)": [3.0, 2.0]},
        "('A', 2)": {"null": 7.0},
        "('B', 1)": {"null": 2.5, "('A', 1)": [2.0, 3.0]},
    },
    "v100_unconsolidated": {"('A', 1)": {"null": 99.0}},
}


def write(tmp_path: Path, data: object, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def jobs(**cols: object) -> JobTable:
    return JobTable.from_columns(**cols)


def test_toy_matrix_reads_types_sorted_and_skips_unconsolidated(tmp_path: Path) -> None:
    m = read_throughput_matrix(write(tmp_path, TOY))
    assert m.types == ("k80", "v100")
    assert m.job_types == (("A", 1), ("A", 2), ("B", 1))
    assert m.throughput(("A", 2), "v100") == 7.0
    assert m.throughput(("B", 1), "k80") == 0.0
    assert m.pair(("A", 1), ("B", 1), "v100") == (3.0, 2.0)
    assert m.pair(("B", 1), ("A", 1), "k80") == (0.0, 0.5)


def test_matrix_perf_rates_by_scale_and_type(tmp_path: Path) -> None:
    perf = MatrixPerf(read_throughput_matrix(write(tmp_path, TOY)))
    t = jobs(
        job_id=["a", "b", "c"],
        submit_time=[0, 0, 0],
        num_gpus=[1, 1, 2],
        iterations=[100.0, math.nan, 70.0],
        duration=[math.nan, 10.0, math.nan],
        model_name=["A", "B", "A"],
    )
    k80, v100 = model_index("K80"), model_index("V100")
    assert perf.rate(t, 0, 1, v100) == 4.0
    assert perf.rate(t, 0, 2, v100) == 7.0  # the same model at another scale
    assert perf.rate(t, 0, 4, v100) == 0.0  # no such scale in the matrix
    assert perf.rate(t, 1, 1, k80) == 0.0  # B cannot run on a K80
    assert perf.rate(t, 2, 2, -1) == 7.0  # the reference is v100
    assert perf.rate(t, 0, 1, model_index("A100")) == 0.0  # no column: never runs there
    # B gives a duration only: V100 seconds × V100 steps/s
    np.testing.assert_array_equal(perf.work(t), [100.0, 25.0, 70.0])


def test_gaps_name_the_job_type(tmp_path: Path) -> None:
    m = read_throughput_matrix(write(tmp_path, TOY))
    t = jobs(
        job_id=["x", "y", "z"],
        submit_time=[0, 0, 0],
        num_gpus=[1, 2, 1],
        iterations=[1.0, 1.0, 1.0],
        model_name=["C", "B", ""],
    )
    reasons = dict(matrix_gaps(t, m))
    assert "'C' is not in the throughput matrix" in reasons[0]
    assert "no column at scale 2" in reasons[1] and "it has: 1" in reasons[1]
    assert "names no model_name" in reasons[2]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "not valid JSON"),
        ([], "object of worker types"),
        ({"tpu9": {"('A', 1)": {"null": 1}}}, "'tpu9' is not a GPU model"),
        ({"v100": {"A": {"null": 1}}}, "job type 'A' under 'v100'"),
        ({"v100": {"('A', 0)": {"null": 1}}}, "scale factor ≥ 1"),
        ({"v100": {"('A', 1)": {"null": -1}}}, "must be ≥ 0 steps/s"),
        ({"v100": {"('A', 1)": {"null": "fast"}}}, "must be a number"),
        ({"v100": {"('A', 1)": {"x": 1}}}, "'null' (isolated)"),
        ({"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}}}, "[self steps/s, other steps/s]"),
        (
            {"k80": {"('A', 1)": {"null": 1}}, "v100": {"('B', 1)": {"null": 1}}},
            "job type \"('B', 1)\" is under 'v100' but not under 'k80'",
        ),
    ],
)
def test_bad_matrix_is_one_clear_error(tmp_path: Path, data: object, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(InputError) as err:
        read_throughput_matrix(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def _trace(tmp_path: Path, model: str = "A", gpus: int = 1) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(f"job_id,submit_time,num_gpus,iterations,model_name\nj1,0,{gpus},400,{model}\n")
    return path


def test_replay_with_a_matrix_runs_at_the_matrix_speed(tmp_path: Path) -> None:
    matrix = write(tmp_path, TOY)
    spec = ReplaySpec(
        cluster="1x1:V100", trace=str(_trace(tmp_path)), policy="fifo", throughputs=str(matrix)
    )
    record = run_replay(spec)
    assert record.end_time[0] == pytest.approx(100.0)  # 400 steps at 4 steps/s on the V100


def test_replay_refuses_a_job_type_missing_from_the_matrix(tmp_path: Path) -> None:
    spec = ReplaySpec(
        cluster="1x1:V100",
        trace=str(_trace(tmp_path, model="C")),
        policy="fifo",
        throughputs=str(write(tmp_path, TOY)),
    )
    with pytest.raises(InputError, match="job 'j1', which job type 'C' is not in the throughput"):
        run_replay(spec)


def test_replay_refuses_a_gpu_model_without_a_column(tmp_path: Path) -> None:
    spec = ReplaySpec(
        cluster="1x1:V100+1x1:A100",
        trace=str(_trace(tmp_path)),
        policy="fifo",
        throughputs=str(write(tmp_path, TOY)),
    )
    with pytest.raises(InputError, match="has A100 GPUs, but the throughput matrix has no column"):
        run_replay(spec)


def test_replay_refuses_speed_factors_with_a_matrix(tmp_path: Path) -> None:
    spec = ReplaySpec(
        cluster="1x1:V100",
        trace=str(_trace(tmp_path)),
        policy="fifo",
        throughputs=str(write(tmp_path, TOY)),
        speed={model_index("V100"): 2.0},
    )
    with pytest.raises(InputError, match="'--speed' does not apply to a throughput matrix"):
        run_replay(spec)


def test_split_batch() -> None:
    assert split_batch("ResNet-18 (batch size 64)") == ("ResNet-18", 64)
    assert split_batch("A3C") == ("A3C", 1)


def test_converted_tables_read_back_per_type(tmp_path: Path) -> None:
    matrix = read_throughput_matrix(
        write(
            tmp_path,
            {
                "v100": {
                    "('M (batch size 8)', 1)": {"null": 2.0},
                    "('M (batch size 8)', 2)": {"null": 3.5},
                    "('M (batch size 16)', 1)": {"null": 1.0},
                },
                "k80": {
                    "('M (batch size 8)', 1)": {"null": 0.5},
                    "('M (batch size 8)', 2)": {"null": 0.0},
                    "('M (batch size 16)', 1)": {"null": 0.25},
                },
            },
        )
    )
    files = convert_to_tables(matrix, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in files) == [
        "k80/M.csv",
        "v100/M.csv",
    ]
    v100 = read_throughput_dir(tmp_path / "out" / "v100")
    assert v100 == {("M", 8): {1: 2.0, 2: 3.5}, ("M", 16): {1: 1.0}}
    assert read_throughput_dir(tmp_path / "out" / "k80") == {
        ("M", 8): {1: 0.5},
        ("M", 16): {1: 0.25},
    }


@pytest.mark.shared
def test_gavel_simulation_matrix_shape() -> None:
    if not GAVEL_JSON.exists():
        pytest.skip(
            "../shared/data/goodput/gavel not found: Gavel's data is not beside this checkout"
        )
    m = read_throughput_matrix(GAVEL_JSON)
    assert m.types == ("k80", "p100", "v100")
    assert len(m.job_types) == 83
    assert sum(1 for _, s in m.job_types if s == 1) == 26
    assert m.throughput(("ResNet-50 (batch size 128)", 2), "k80") == 0.0
    # 26 partners at scale 1 on every type
    assert sum(1 for a, b in m.pairs[0] if a == ("A3C", 1)) == 26
