"""Job-trace readers (Philly, ElasticFlow ITP and artifact, Alibaba with times, Helios, generic):
hand-checked conversions on tiny fixtures, every error naming file, editor line and column, the
visible filters and their counts, format detection, and the real traces when ../shared is there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.model.gpu_models import ANY_MODEL_MASK, spec_mask
from schedlab.traces.alibaba_jobs import read_alibaba_jobs
from schedlab.traces.elasticflow import read_elasticflow, read_elasticflow_itp
from schedlab.traces.formats import TRACE_FORMATS, detect_format, get_format, read_jobs
from schedlab.traces.generic import read_generic
from schedlab.traces.helios import read_helios
from schedlab.traces.philly import read_philly

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRACES = SHARED / "traces"
NO_SHARED = f"{TRACES} not found: the public traces are not beside this checkout"

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
ITP_RAW_HEADER = "job_id,submission_time,duration,num_gpu"
ITP_SIM_HEADER = (
    "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
)
EF_HEADER = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration"
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time"
)
HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
)
GENERIC_HEADER = (
    "job_id,submit_time,num_gpus,duration,iterations,model_name,batch_size,deadline,gpu_model"
)


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_error(exc: pytest.ExceptionInfo[InputError], path: Path, row, column) -> None:
    """The error names the file, the editor line (header = 1) and the column, in its text too."""
    err = exc.value
    assert err.path == str(path)
    assert err.row == row
    assert err.column == column
    text = str(err)
    assert str(path) in text
    if row is not None:
        assert f"{path}:{row}" in text
    if column is not None:
        assert f"column '{column}'" in text


# -- Philly ---------------------------------------------------------------------------------------
def philly(tmp_path: Path, *rows: str) -> Path:
    return write(tmp_path, "philly.csv", PHILLY_HEADER, *rows)


def test_philly_conversions_hand_checked(tmp_path):
    path = philly(
        tmp_path,
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48",
        "2017-10-09 06:13:03,2951.0,2,5902.0,6214e9",
        "2017-10-10 06:13:03,10.5,4,42.0, 6214e9 ",
    )
    r = read_philly(path)
    j = r.jobs
    # Earliest submit 06:13:03; 07:01:55 is 48 min 52 s later; the next day is 86,400 s later.
    assert j.submit_time.tolist() == [2932.0, 0.0, 86400.0]
    assert j.duration.tolist() == [66.0, 2951.0, 10.5]
    assert j.num_gpus.tolist() == [1, 2, 4]
    assert j.user.tolist() == ["11cb48", "6214e9", "6214e9"]
    assert j.job_id.tolist() == ["0", "1", "2"]
    assert not j.has_deadlines
    assert np.isnan(j.iterations).all()
    assert (j.gpu_model_mask == ANY_MODEL_MASK).all()
    assert r.format == "philly" and r.rows == 3
    assert r.dropped == {"zero_gpus": 0, "zero_duration": 0}
    assert j.source == str(path)


def test_philly_zero_jobs_dropped_and_counted_unless_kept(tmp_path):
    path = philly(
        tmp_path,
        "2017-10-09 00:00:00,0,1,0,a",  # zero run time
        "2017-10-09 00:00:10,100,0,0,a",  # zero GPUs
        "2017-10-09 00:00:20,0,0,0,a",  # both: counted once, as zero_gpus (checked first)
        "2017-10-09 00:00:30,5,1,5,a",
        "2017-10-09 00:00:40,500,1,500,b",
    )
    r = read_philly(path)
    assert r.dropped == {"zero_gpus": 2, "zero_duration": 1}
    assert r.dropped_total == 3
    assert r.jobs.job_id.tolist() == ["3", "4"]  # ids still name the file's rows
    # Submit times stay relative to the earliest row of the file, dropped or not.
    assert r.jobs.submit_time.tolist() == [30.0, 40.0]

    kept = read_philly(path, drop_zero=False)
    assert len(kept.jobs) == 5 and kept.dropped == {}

    short = read_philly(path, min_duration=10)
    assert short.dropped == {"zero_gpus": 2, "zero_duration": 1, "below_min_duration": 1}
    assert short.jobs.job_id.tolist() == ["4"]


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        ("2017-13-45 00:00:00,66,1,66,a", "timestamp", "not a date-time"),
        ("yesterday,66,1,66,a", "timestamp", "'yesterday'"),
        (",66,1,66,a", "timestamp", "blank"),
        ("2017-10-09 07:01:55,-5,1,-5,a", "duration", "≥ 0"),
        ("2017-10-09 07:01:55,abc,1,0,a", "duration", "'abc'"),
        ("2017-10-09 07:01:55,nan,1,0,a", "duration", "'nan'"),
        ("2017-10-09 07:01:55,,1,0,a", "duration", "blank"),
        ("2017-10-09 07:01:55,66,two,66,a", "num_gpus", "'two'"),
        ("2017-10-09 07:01:55,66,1.5,66,a", "num_gpus", "whole number"),
        ("2017-10-09 07:01:55,66,-1,66,a", "num_gpus", "in 0.."),
    ],
)
def test_philly_bad_values_name_line_and_column(tmp_path, row, column, needle):
    path = philly(tmp_path, "2017-10-09 07:01:55,66,1,66,a", "", row)  # blank line 3
    with pytest.raises(InputError) as exc:
        read_philly(path)
    assert_error(exc, path, 4, column)
    assert needle in str(exc.value)


def test_philly_missing_column_and_short_row(tmp_path):
    path = write(tmp_path, "p.csv", "timestamp,duration,num_gpus", "2017-10-09 07:01:55,66,1")
    with pytest.raises(InputError) as exc:
        read_philly(path)
    assert_error(exc, path, 1, None)
    assert "'cluster'" in str(exc.value)

    path = philly(tmp_path, "2017-10-09 07:01:55,66,1,66,a", "2017-10-09 07:01:55,66,1")
    with pytest.raises(InputError) as exc:
        read_philly(path)
    assert_error(exc, path, 3, None)


# -- ElasticFlow ITP ------------------------------------------------------------------------------
def test_itp_raw_reads_as_written(tmp_path):
    path = write(
        tmp_path,
        "cluster99.csv",
        ITP_RAW_HEADER,
        "965d744f-aaaa,1932025,2429,64",
        "fb10987f-bbbb,2000581,1532,1",
    )
    r = read_elasticflow_itp(path)
    j = r.jobs
    assert j.job_id.tolist() == ["965d744f-aaaa", "fb10987f-bbbb"]
    assert j.submit_time.tolist() == [1932025.0, 2000581.0]  # trace clock kept
    assert j.duration.tolist() == [2429.0, 1532.0]
    assert j.num_gpus.tolist() == [64, 1]
    assert not j.has_deadlines
    assert np.isnan(j.iterations).all()
    assert j.model_name.tolist() == ["", ""]


def test_itp_enriched_reads_iterations_models_deadlines(tmp_path):
    path = write(
        tmp_path,
        "sim.csv",
        ITP_SIM_HEADER,
        "a,1932025,45775,resnet50,1933904,256,64,2429",
        "b,2000581,11197,gpt2,2002204,128,1,1532",
    )
    j = read_elasticflow_itp(path).jobs
    assert j.iterations.tolist() == [45775.0, 11197.0]
    assert j.model_name.tolist() == ["resnet50", "gpt2"]
    assert j.batch_size.tolist() == [256, 128]
    assert j.deadline.tolist() == [1933904.0, 2002204.0]
    assert j.duration.tolist() == [2429.0, 1532.0]


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        ("b,2000581,11197,gpt2,2000000,128,1,1532", "deadline", "before"),
        ("b,2000581,11197,gpt2,2002204,128,x,1532", "num_gpu", "'x'"),
        ("b,2000581,-3,gpt2,2002204,128,1,1532", "num_iteration", "≥ 0"),
        ("b,2000581,11197,gpt2,2002204,big,1,1532", "batch_size", "'big'"),
        ("b,soon,11197,gpt2,2002204,128,1,1532", "submission_time", "'soon'"),
        ("a,2000581,11197,gpt2,2002204,128,1,1532", "job_id", "twice"),
    ],
)
def test_itp_bad_values(tmp_path, row, column, needle):
    path = write(tmp_path, "sim.csv", ITP_SIM_HEADER, "a,1,10,bert,20,64,1,10", row)
    with pytest.raises(InputError) as exc:
        read_elasticflow_itp(path)
    assert_error(exc, path, 3, column)
    assert needle in str(exc.value)


# -- ElasticFlow artifact -------------------------------------------------------------------------
def test_artifact_best_effort_means_no_deadline(tmp_path):
    path = write(
        tmp_path,
        "demo.csv",
        EF_HEADER + ",best_effort",
        "0,0,77215,resnet50_cifar10,4426,256,1,3930,0",
        "1,2811,94898,resnet50_cifar10,0,256,1,4830,1",  # ddl before submit, but best effort
    )
    j = read_elasticflow(path).jobs
    assert j.deadline[0] == 4426.0
    assert np.isnan(j.deadline[1])
    assert j.iterations.tolist() == [77215.0, 94898.0]
    assert j.duration.tolist() == [3930.0, 4830.0]
    assert j.job_id.tolist() == ["0", "1"]


def test_artifact_real_columns_only_when_asked(tmp_path):
    path = write(
        tmp_path,
        "p.csv",
        "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,"
        "duration,iteration",
        "0,0,2000,vgg16,771220,256,1,2000,1000,1000",
    )
    assert read_elasticflow(path).jobs.duration.tolist() == [1000.0]
    real = read_elasticflow(path, use_real=True).jobs
    assert real.duration.tolist() == [2000.0]
    assert real.iterations.tolist() == [2000.0]


def test_artifact_iteration_only_file_reads(tmp_path):
    path = write(tmp_path, "it.csv", "job_id,submit_time,num_gpu,iteration", "x,5,2,300")
    j = read_elasticflow(path).jobs
    assert np.isnan(j.duration).all() and j.iterations.tolist() == [300.0]


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        ("1,100,10,bert,50,64,1,10,0", "ddl", "before"),
        ("1,100,10,bert,500,64,1,10,2", "best_effort", "0..1"),
        ("1,100,10,bert,500,64,1,-10,0", "duration", "≥ 0"),
    ],
)
def test_artifact_bad_values(tmp_path, row, column, needle):
    path = write(tmp_path, "e.csv", EF_HEADER + ",best_effort", "0,0,10,bert,20,64,1,10,0", row)
    with pytest.raises(InputError) as exc:
        read_elasticflow(path)
    assert_error(exc, path, 3, column)
    assert needle in str(exc.value)


def test_artifact_without_any_work_column(tmp_path):
    path = write(tmp_path, "e.csv", "job_id,submit_time,num_gpu,ddl", "0,0,1,10")
    with pytest.raises(InputError) as exc:
        read_elasticflow(path)
    assert_error(exc, path, 1, None)
    assert "'duration'" in str(exc.value)


# -- Alibaba pod lists with times -----------------------------------------------------------------
def pod(name, num_gpu=1, gpu_milli=1000, spec="", created=0, deleted=100, scheduled="0"):
    return (
        f"{name},4000,8192,{num_gpu},{gpu_milli},{spec},LS,Running,{created},{deleted},{scheduled}"
    )


def test_alibaba_times_and_filters(tmp_path):
    path = write(
        tmp_path,
        "pods.csv",
        POD_HEADER,
        pod("p0", created=10, scheduled="15", deleted=115),
        pod("p1", gpu_milli=250, spec="T4|P100", created=20, scheduled="20", deleted=50),
        pod("p2", num_gpu=0, gpu_milli=0, created=30, scheduled="31", deleted=90),  # CPU-only
        pod("p3", created=40, scheduled="", deleted=400),  # Pending
        pod("p4", num_gpu=8, created=50, scheduled="60", deleted=60),  # 0 s
    )
    r = read_alibaba_jobs(path)
    assert r.dropped == {"cpu_only": 1, "unscheduled": 1, "zero_duration": 1}
    j = r.jobs
    assert j.job_id.tolist() == ["p0", "p1"]
    assert j.submit_time.tolist() == [10.0, 20.0]  # creation_time
    assert j.duration.tolist() == [100.0, 30.0]  # deletion − scheduled
    assert j.num_gpus.tolist() == [1, 1]  # a 250-milli share replays as one whole GPU
    assert j.gpu_model_mask.tolist() == [ANY_MODEL_MASK, spec_mask(["T4", "P100"])]
    assert j.cpu_milli.tolist() == [4000, 4000] and j.memory_mib.tolist() == [8192, 8192]

    kept = read_alibaba_jobs(path, keep_cpu_only=True, keep_unscheduled=True)
    assert kept.dropped == {"zero_duration": 1}
    k = kept.jobs
    assert k.job_id.tolist() == ["p0", "p1", "p2", "p3"]  # CPU-only kept despite drop_zero
    assert k.num_gpus[2] == 0
    assert k.duration[3] == 360.0  # a Pending pod's span: deletion − creation

    everything = read_alibaba_jobs(path, keep_cpu_only=True, keep_unscheduled=True, drop_zero=False)
    assert len(everything.jobs) == 5 and everything.dropped == {}


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        (pod("p1", created=50, scheduled="60", deleted=55), "deletion_time", "negative"),
        (pod("p1", created=50, scheduled="40", deleted=90), "scheduled_time", "before"),
        (pod("p1", created="later"), "creation_time", "'later'"),
        (pod("p1", spec="V100|B200"), "gpu_spec", "'B200'"),
        (pod("p1", num_gpu=2, gpu_milli=500), "gpu_milli", "whole GPUs"),
        (pod("p0"), "name", "twice"),
    ],
)
def test_alibaba_bad_values(tmp_path, row, column, needle):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod("p0"), row)
    with pytest.raises(InputError) as exc:
        read_alibaba_jobs(path)
    assert_error(exc, path, 3, column)
    assert needle in str(exc.value)


def test_alibaba_file_without_times_says_which_columns(tmp_path):
    path = write(
        tmp_path, "multigpu.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli", "a,1,1,1,1000"
    )
    assert detect_format(path) == "alibaba"
    with pytest.raises(InputError) as exc:
        read_jobs(path)
    assert_error(exc, path, 1, None)
    assert "'creation_time'" in str(exc.value)


# -- Helios ---------------------------------------------------------------------------------------
def helios(tmp_path: Path, *rows: str, header: str = HELIOS_HEADER) -> Path:
    return write(tmp_path, "cluster_log.csv", header, *rows)


HELIOS_ROWS = (
    # start − end = 1 h; the duration column is ignored when both times are there
    "j1,u1,vcA,8,32,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:20:00,2020-04-01 01:20:00,1,600",
    # no start/end: the duration column is used
    "j2,u2,vcA,1,4,1,FAILED,2020-04-01 00:00:00,,,45,",
    # never started, no duration: 0 s, dropped
    "j3,u1,vcB,2,8,1,CANCELLED,2020-04-01 00:05:00,,,,",
    "j4,u3,vcB,0,4,1,COMPLETED,2020-04-02 00:00:00,2020-04-02 00:00:00,2020-04-02 00:00:30,30,0",
)


def test_helios_conversions_hand_checked(tmp_path):
    path = helios(tmp_path, *HELIOS_ROWS)
    r = read_helios(path)
    assert r.dropped == {"zero_gpus": 1, "zero_duration": 1}
    j = r.jobs
    assert j.job_id.tolist() == ["j1", "j2"]
    assert j.submit_time.tolist() == [600.0, 0.0]  # from the earliest submit (00:00:00)
    assert j.duration.tolist() == [3600.0, 45.0]
    assert j.num_gpus.tolist() == [8, 1]
    assert j.user.tolist() == ["u1", "u2"]
    assert j.cpu_milli.tolist() == [32000, 4000]

    all_rows = read_helios(path, drop_zero=False).jobs
    assert all_rows.duration.tolist() == [3600.0, 45.0, 0.0, 30.0]
    assert all_rows.submit_time[3] == 86400.0


def test_helios_state_filter_is_visible(tmp_path):
    path = helios(tmp_path, *HELIOS_ROWS)
    r = read_helios(path, states=["completed"])
    assert r.dropped == {"state": 2, "zero_gpus": 1, "zero_duration": 0}
    assert r.jobs.job_id.tolist() == ["j1"]
    with pytest.raises(InputError, match="'states' is empty"):
        read_helios(path, states=[])
    no_state = helios(
        tmp_path, "j1,2020-04-01 00:00:00,1,5", header="job_id,submit_time,gpu_num,duration"
    )
    assert read_helios(no_state).jobs.duration.tolist() == [5.0]
    with pytest.raises(InputError, match="no 'state' column"):
        read_helios(no_state, states=["COMPLETED"])


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        (
            "j9,u,v,1,1,1,COMPLETED,2020-04-01 02:00:00,2020-04-01 03:00:00,2020-04-01 02:00:00,,",
            "end_time",
            "negative",
        ),
        (
            "j9,u,v,1,1,1,COMPLETED,April 1st,2020-04-01 03:00:00,2020-04-01 04:00:00,,",
            "submit_time",
            "'April 1st'",
        ),
        (
            "j9,u,v,1,1,1,COMPLETED,2020-04-01 02:00:00,2020-04-01 03:00:00,2020-04-31 04:00:00,,",
            "end_time",
            "'2020-04-31 04:00:00'",
        ),
        ("j9,u,v,-2,1,1,COMPLETED,2020-04-01 02:00:00,,,60,", "gpu_num", "got -2"),
        ("j9,u,v,1,1,1,COMPLETED,2020-04-01 02:00:00,,,-60,", "duration", "≥ 0"),
    ],
)
def test_helios_bad_values(tmp_path, row, column, needle):
    path = helios(tmp_path, HELIOS_ROWS[0], row)
    with pytest.raises(InputError) as exc:
        read_helios(path)
    assert_error(exc, path, 3, column)
    assert needle in str(exc.value)


def test_helios_needs_a_run_time(tmp_path):
    path = helios(tmp_path, "j1,2020-04-01 00:00:00,1", header="job_id,submit_time,gpu_num")
    with pytest.raises(InputError) as exc:
        read_helios(path)
    assert_error(exc, path, 1, None)


# -- generic --------------------------------------------------------------------------------------
def test_generic_docstring_example(tmp_path):
    path = write(
        tmp_path,
        "jobs.csv",
        GENERIC_HEADER,
        "a,0,1,3600,,,,,",
        "b,30.5,4,,120000,resnet50,256,9000,V100|A100",
    )
    r = read_generic(path)
    j = r.jobs
    assert j.job_id.tolist() == ["a", "b"]
    assert j.submit_time.tolist() == [0.0, 30.5]
    assert j.num_gpus.tolist() == [1, 4]
    assert j.duration[0] == 3600.0 and np.isnan(j.duration[1])
    assert np.isnan(j.iterations[0]) and j.iterations[1] == 120000.0
    assert j.model_name.tolist() == ["", "resnet50"]
    assert j.batch_size.tolist() == [0, 256]
    assert np.isnan(j.deadline[0]) and j.deadline[1] == 9000.0
    assert j.gpu_model_mask.tolist() == [ANY_MODEL_MASK, spec_mask(["V100", "A100"])]
    assert r.format == "generic"


def test_generic_optional_columns(tmp_path):
    path = write(
        tmp_path,
        "jobs.csv",
        "num_gpus,job_id,submit_time,iterations,model_name,user,cpu_milli,memory_mib,extra",
        "2,x,1,0,bert,alice,,2048,ignored",
        "2,y,2,50,bert,bob,8000,,ignored",
    )
    r = read_generic(path)
    assert r.dropped == {"zero_gpus": 0, "zero_duration": 1}  # 0 iterations = no work
    j = r.jobs
    assert j.job_id.tolist() == ["y"]
    assert j.user.tolist() == ["bob"]
    assert j.cpu_milli.tolist() == [8000] and j.memory_mib.tolist() == [0]
    # Jobs given only as iterations cannot be compared with min_duration, so they pass it.
    assert len(read_generic(path, min_duration=100).jobs) == 1


@pytest.mark.parametrize(
    ("row", "column", "needle"),
    [
        ("b,5,1,,,,,,", "duration", "'duration' or an 'iterations'"),
        ("b,5,1,,100,,,,", "model_name", "model_name"),
        ("b,5,1,10,,,,,V100|TPU", "gpu_model", "'TPU'"),
        ("b,5,1,10,,,,4,", "deadline", "before"),
        ("b,5,1,10,,,-64,,", "batch_size", "≥ 0"),
        ("b,-5,1,10,,,,,", "submit_time", "≥ 0"),
        ("b,5,1,inf,,,,,", "duration", "'inf'"),
        (" ,5,1,10,,,,,", "job_id", "blank"),
    ],
)
def test_generic_bad_values(tmp_path, row, column, needle):
    path = write(tmp_path, "jobs.csv", GENERIC_HEADER, "a,0,1,3600,,,,,", row)
    with pytest.raises(InputError) as exc:
        read_generic(path)
    assert_error(exc, path, 3, column)
    assert needle in str(exc.value)


def test_generic_needs_a_work_column(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,submit_time,num_gpus", "a,0,1")
    with pytest.raises(InputError) as exc:
        read_generic(path)
    assert_error(exc, path, 1, None)


def test_bad_min_duration_is_an_input_error(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,submit_time,num_gpus,duration", "a,0,1,5")
    for bad in (-1, float("nan"), "ten"):
        with pytest.raises(InputError, match="'min_duration'"):
            read_generic(path, min_duration=bad)


# -- detection and dispatch -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        (PHILLY_HEADER, "2017-10-09 07:01:55,66.0,1,66.0,a", "philly"),
        (ITP_RAW_HEADER, "a,1,2,1", "elasticflow-itp"),
        (ITP_SIM_HEADER, "a,1,2,bert,5,64,1,2", "elasticflow-itp"),
        (EF_HEADER, "0,1,2,bert,5,64,1,2", "elasticflow"),
        (POD_HEADER, pod("p0"), "alibaba"),
        (HELIOS_HEADER, HELIOS_ROWS[0], "helios"),
        (GENERIC_HEADER, "a,0,1,3600,,,,,", "generic"),
    ],
)
def test_detect_and_read_every_format(tmp_path, header, row, expected):
    path = write(tmp_path, "t.csv", header, row)
    assert detect_format(path) == expected
    r = read_jobs(path)
    assert r.format == expected and len(r.jobs) == 1
    assert read_jobs(path, expected.upper()).format == expected  # names are case-insensitive


def test_undetectable_header(tmp_path):
    path = write(tmp_path, "t.csv", "when,what", "1,2")
    with pytest.raises(InputError) as exc:
        detect_format(path)
    assert_error(exc, path, 1, None)
    for name in TRACE_FORMATS:
        assert name in str(exc.value)


def test_unknown_format_name_suggests(tmp_path):
    with pytest.raises(InputError) as exc:
        read_jobs(tmp_path / "whatever.csv", "phily")
    msg = str(exc.value)
    assert "did you mean 'philly'?" in msg
    assert "elasticflow-itp" in msg and "generic" in msg
    with pytest.raises(InputError, match="known formats") as exc:
        get_format("zzzz")
    assert "did you mean" not in str(exc.value)


def test_unknown_option_lists_the_formats_options(tmp_path):
    path = write(tmp_path, "t.csv", PHILLY_HEADER, "2017-10-09 07:01:55,66.0,1,66.0,a")
    with pytest.raises(InputError, match="keep_cpu_only") as exc:
        read_jobs(path, keep_cpu_only=True)
    assert "drop_zero" in str(exc.value) and "min_duration" in str(exc.value)
    assert read_jobs(path, drop_zero=False).dropped == {}


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_jobs(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="file not found"):
        read_jobs(tmp_path / "nope.csv", "generic")
    empty = write(tmp_path, "empty.csv", "")
    with pytest.raises(InputError, match="empty"):
        read_jobs(empty)
    header_only = write(tmp_path, "h.csv", GENERIC_HEADER)
    with pytest.raises(InputError, match="no data rows"):
        read_jobs(header_only)


# -- the real traces ------------------------------------------------------------------------------
@pytest.fixture
def traces() -> Path:
    if not TRACES.is_dir():
        pytest.skip(NO_SHARED)
    return TRACES


@pytest.mark.shared
def test_real_philly(traces):
    r = read_jobs(traces / "philly-adaptdl" / "philly.csv")
    assert r.format == "philly"
    j = r.jobs
    assert len(j) == 82_247 and r.dropped_total == 0
    counts = dict(zip(*np.unique(j.num_gpus, return_counts=True), strict=True))
    assert counts == {
        1: 76_627,
        2: 1_818,
        4: 1_870,
        8: 1_643,
        16: 199,
        32: 67,
        64: 6,
        128: 3,
        12: 7,
        24: 7,
    }
    assert j.submit_time.min() == 0.0
    users, per_user = np.unique(j.user, return_counts=True)
    assert len(users) == 15
    assert dict(zip(users, per_user, strict=True))["6214e9"] == 41_226
    gpu_hours = float((j.duration * j.num_gpus).sum() / 3600)
    assert gpu_hours == pytest.approx(978_078, rel=1e-4)


ITP_JOBS = {
    "cluster01": 1_595,
    "cluster02": 5_778,
    "cluster03": 3_011,
    "cluster04": 15_802,
    "cluster05": 3_629,
    "cluster06": 2_396,
    "cluster07": 12_699,
    "cluster08": 13_047,
    "cluster09": 11_134,
    "cluster10": 260,
}


@pytest.mark.shared
def test_real_itp_raw_and_simulation(traces):
    gpu_hours = 0.0
    for name, jobs in ITP_JOBS.items():
        raw = read_jobs(traces / "elasticflow-itp" / "raw" / f"{name}.csv")
        sim = read_jobs(traces / "elasticflow-itp" / "simulation" / f"{name}.csv")
        assert raw.format == sim.format == "elasticflow-itp"
        assert len(raw.jobs) == len(sim.jobs) == jobs
        assert not raw.jobs.has_deadlines
        assert np.isfinite(sim.jobs.deadline).all() and np.isfinite(sim.jobs.iterations).all()
        assert (raw.jobs.job_id == sim.jobs.job_id).all()
        ratio = (sim.jobs.deadline - sim.jobs.submit_time) / sim.jobs.duration
        assert ratio.min() >= 0.49 and ratio.max() <= 1.51  # U(0.5, 1.5) · duration
        gpu_hours += float((raw.jobs.duration * raw.jobs.num_gpus).sum() / 3600)
    assert gpu_hours == pytest.approx(1_632_719.74, abs=0.01)


@pytest.mark.shared
def test_real_itp_195job(traces):
    j = read_jobs(traces / "elasticflow-itp" / "simulation" / "195job.csv").jobs
    assert len(j) == 195
    assert j.submit_time.min() == 3_715_485 and j.submit_time.max() == 3_887_530
    assert np.isfinite(j.deadline).all() and (j.deadline >= j.submit_time).all()
    assert j.num_gpus.max() == 16


@pytest.mark.shared
def test_real_elasticflow_artifact(traces):
    folder = traces / "elasticflow-artifact"
    philly_vc = read_jobs(folder / "philly_103959.csv")
    assert philly_vc.format == "elasticflow"
    j = philly_vc.jobs
    assert len(j) == 876
    assert set(np.unique(j.num_gpus).tolist()) <= {1, 2, 4}
    assert j.has_deadlines and np.isfinite(j.iterations).all()
    assert j.submit_time.max() / 86400 == pytest.approx(91.6, abs=0.1)

    pollux = read_jobs(folder / "elasticVpollux_e.csv").jobs
    testbed = read_jobs(traces / "elasticflow-itp" / "simulation" / "195job.csv").jobs
    assert len(pollux) == 195
    assert (pollux.submit_time == testbed.submit_time).all()

    demo = read_jobs(folder / "resnet_cifar_trace.csv").jobs
    assert len(demo) == 5 and set(demo.model_name) == {"resnet50_cifar10"}


@pytest.mark.shared
def test_real_alibaba_pod_list_with_times(traces):
    path = traces / "alibaba-gpu-2023" / "openb_pod_list_default.csv"
    r = read_jobs(path)
    assert r.format == "alibaba" and r.rows == 8_152
    assert r.dropped["cpu_only"] == 1_088
    everything = read_jobs(path, keep_unscheduled=True, drop_zero=False)
    assert everything.dropped == {"cpu_only": 1_088}
    counts = dict(zip(*np.unique(everything.jobs.num_gpus, return_counts=True), strict=True))
    assert counts == {1: 6_989, 2: 16, 4: 15, 8: 44}  # the README's GPU pods
    # Of the 7,064 GPU pods, the Pending ones (blank scheduled_time) are dropped as unscheduled.
    assert r.dropped["unscheduled"] + r.dropped["zero_duration"] + len(r.jobs) == 7_064
    assert 0 < r.dropped["unscheduled"] <= 897
