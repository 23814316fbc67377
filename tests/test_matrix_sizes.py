"""Policies that size jobs, on a throughput matrix that knows only some GPU counts.

A Gavel matrix gives a job type steps/s at the GPU counts it was measured at (1, 2, 4, 8) and on
the GPU types where it runs; anywhere else the rate is 0. Elastic policies pick only the counts
the model declares, placement never puts a job on GPUs where it makes no progress, and a job
that can make progress nowhere on the cluster is refused at the start with the policy, the job
and why — never a run that silently leaves jobs holding GPUs at 0 steps/s.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.engines.replay import ReplayRecord
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.model.gpu_models import model_index
from schedlab.model.jobs import JobTable
from schedlab.perf.throughput_matrix import MatrixPerf, read_throughput_matrix

#: A at 1 and 2 GPUs everywhere but 0 on K80s at 2; B only at 1 and only on V100s; C at 1 and 4.
MATRIX = {
    "k80": {
        "('A', 1)": {"null": 1.0},
        "('A', 2)": {"null": 0.0},
        "('B', 1)": {"null": 0.0},
        "('C', 1)": {"null": 0.5},
        "('C', 4)": {"null": 1.0},
    },
    "v100": {
        "('A', 1)": {"null": 4.0},
        "('A', 2)": {"null": 7.0},
        "('B', 1)": {"null": 2.5},
        "('C', 1)": {"null": 1.0},
        "('C', 4)": {"null": 3.0},
    },
}


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MATRIX))
    return path


def trace(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "jobs.csv"
    header = "job_id,submit_time,num_gpus,iterations,model_name,deadline\n"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def run(
    matrix: Path, trace_path: Path, cluster: str, policy: str
) -> tuple[ReplayRecord, dict[str, float]]:
    spec = ReplaySpec(
        cluster=cluster, trace=str(trace_path), policy=policy, throughputs=str(matrix)
    )
    record = run_replay(spec)
    ends = dict(zip(record.jobs.job_id.tolist(), record.end_time.tolist(), strict=True))
    return record, ends


def test_the_matrix_declares_its_counts_and_the_types_each_runs_on(matrix: Path) -> None:
    perf = MatrixPerf(read_throughput_matrix(matrix))
    t = JobTable.from_columns(
        job_id=["a", "b", "c", "x"],
        submit_time=[0, 0, 0, 0],
        num_gpus=[1, 1, 4, 1],
        iterations=[1.0, 1.0, 1.0, math.nan],
        duration=[math.nan, math.nan, math.nan, 5.0],
        model_name=["A", "B", "C", "not-in-it"],
    )
    k80, v100 = 1 << model_index("K80"), 1 << model_index("V100")
    assert perf.gpu_counts(t, 0) == (1, 2)
    assert perf.gpu_counts(t, 1) == (1,)
    assert perf.gpu_counts(t, 2) == (1, 4)
    assert perf.gpu_counts(t, 3) is None  # not covered: scales linearly, any count
    assert perf.runnable_models(t, 0, 1) == k80 | v100
    assert perf.runnable_models(t, 0, 2) == v100  # 0 steps/s on K80s at 2 GPUs
    assert perf.runnable_models(t, 0, 4) == 0  # no such job type
    assert perf.runnable_models(t, 1, 1) == v100
    assert perf.runnable_models(t, 3, 3) is None


def test_edf_greedy_sizes_jobs_only_to_counts_the_matrix_has(tmp_path: Path, matrix: Path) -> None:
    """One node of 4 V100s, EDF order a then b. Powers of two would give a 4 GPUs (0 steps/s:
    A has no 4-GPU figure) and nothing to b. With the matrix's counts a's cap is 2 (7 steps/s:
    700 steps end at 100 s) and b's is 1 (B exists only at 1: 500 steps at 2.5 steps/s end at
    200 s)."""
    path = trace(tmp_path, ["a,0,1,700,A,1000", "b,0,1,500,B,2000"])
    record, ends = run(matrix, path, "1x4:V100", "edf-greedy")
    assert ends == {"a": pytest.approx(100.0), "b": pytest.approx(200.0)}
    assert record.resizes.tolist() == [0, 0]


def test_short_of_gpus_a_job_takes_the_largest_count_it_has(tmp_path: Path, matrix: Path) -> None:
    """6 V100s, C known at 1 and 4. a (earlier deadline) takes 4 (3 steps/s); 2 GPUs are left
    and c wants 4: the largest of its counts that fits is 1 (not 2, where C has no figure), so c
    runs at 1 step/s. a's 300 steps end at 100 s; c has done 100 of its 300 by then and is
    resized to 4 GPUs: 200 steps at 3 steps/s, done at 100 + 200/3 s."""
    path = trace(tmp_path, ["a,0,4,300,C,100", "c,0,4,300,C,200"])
    record, ends = run(matrix, path, "1x6:V100", "edf-greedy")
    assert ends["a"] == pytest.approx(100.0)
    assert ends["c"] == pytest.approx(100.0 + 200.0 / 3.0)
    assert record.resizes.tolist() == [0, 1]


def test_placement_keeps_a_job_off_gpus_where_it_makes_no_progress(
    tmp_path: Path, matrix: Path
) -> None:
    """A at 2 GPUs runs at 0 on K80s: fifo places it on the V100 node (700 steps at 7 steps/s =
    100 s) even with the K80 node listed first and free."""
    path = trace(tmp_path, ["a,0,2,700,A,"])
    for seed_cluster in ("1x2:K80+1x2:V100", "2x2:K80+1x2:V100"):
        _, ends = run(matrix, path, seed_cluster, "fifo")
        assert ends == {"a": pytest.approx(100.0)}


def test_elastic_policy_runs_a_job_at_a_count_that_runs_on_the_cluster(
    tmp_path: Path, matrix: Path
) -> None:
    """Two K80s: A at its requested 2 GPUs runs at 0 steps/s there, but at 1 GPU at 1 step/s;
    edf-greedy gives it 1 GPU and its 400 steps end at 400 s."""
    path = trace(tmp_path, ["a,0,2,400,A,1000"])
    record, ends = run(matrix, path, "1x2:K80", "edf-greedy")
    assert ends == {"a": pytest.approx(400.0)}
    assert record.gpu_seconds.tolist() == pytest.approx([400.0])


@pytest.mark.parametrize(
    ("policy", "cluster", "rows", "message"),
    [
        (
            "fifo",
            "1x2:K80",
            ["a,0,2,400,A,"],
            "policy 'fifo' on cluster '1x2:K80': job 'a' (A, 2 GPU(s)) runs at 0 steps/s at 2 "
            "GPUs on every GPU model of the cluster",
        ),
        (
            "fifo",
            "1x2:K80+1x1:V100",
            ["a,0,2,400,A,"],
            "job 'a' (A, 2 GPU(s)) runs at 2 GPUs only on V100, of which the cluster has 1",
        ),
        (
            "edf-greedy",
            "1x4:K80",
            ["a,0,1,400,A,", "b,0,1,10,B,", "c,0,1,10,B,"],
            "policy 'edf-greedy' on cluster '1x4:K80': job 'b' (B, 1 GPU(s)) runs at 0 steps/s "
            "at every GPU count the matrix has for it (1)",
        ),
    ],
)
def test_a_job_that_can_run_nowhere_is_refused_at_the_start(
    tmp_path: Path, matrix: Path, policy: str, cluster: str, rows: list[str], message: str
) -> None:
    path = trace(tmp_path, rows)
    with pytest.raises(InputError) as err:
        run(matrix, path, cluster, policy)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_cli_elastic_run_on_a_matrix_completes_every_job(
    tmp_path: Path, matrix: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end as a user runs it: every elastic policy completes the three jobs (before, the
    ones sized to counts the matrix lacks stayed at 0 steps/s and never finished)."""
    path = trace(tmp_path, ["a,0,1,700,A,5000", "b,10,1,500,B,8000", "c,20,4,300,C,9000"])
    for policy in ("edf-greedy", "edf-ac", "edf-elastic", "elasticflow", "carbon-scaler"):
        out = tmp_path / policy
        code = main(
            [
                "replay",
                "--cluster",
                "1x4:V100+1x2:K80",
                "--trace",
                str(path),
                "--throughputs",
                str(matrix),
                "--policy",
                policy,
                "--out",
                str(out),
            ]
        )
        assert code == 0, policy
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["completed"], summary["unfinished"]) == (3, 0), policy


def test_cli_refusal_is_one_line_and_exit_2(
    tmp_path: Path, matrix: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = trace(tmp_path, ["a,0,2,400,A,"])
    out = tmp_path / "out"
    code = main(
        [
            "replay",
            "--cluster",
            "1x2:K80",
            "--trace",
            str(path),
            "--throughputs",
            str(matrix),
            "--policy",
            "gavel-fifo-perf",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "job 'a' (A, 2 GPU(s)) runs at 0 steps/s at 2 GPUs" in err
    assert not out.exists()  # nothing half-written
