"""The Alibaba GPU v2025 (Prism DLRM serving) reader: a hand-written file, bad rows, the real file.

The hand-written file has one instance of each case: already running when the window opened (no
creation time), still running when it closed (no deletion time), both, and neither.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError
from schedlab.model.instances import NO_LIMIT, ROLE_CN, ROLE_HN, ServingInstances
from schedlab.traces.alibaba_2025 import read_alibaba_2025
from test_fuzz_readers import AWKWARD_CELLS

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PRISM = SHARED / "traces" / "alibaba-gpu-2025" / "disaggregated_DLRM_trace.csv"
PRISM_MISSING = (
    "../shared/traces/alibaba-gpu-2025/disaggregated_DLRM_trace.csv not found: the public trace "
    "is not beside this checkout"
)

HEADER = (
    "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
    "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
    "creation_time,scheduled_time,deletion_time"
)
ROWS = [
    "i0,HN,app_b,8,8,1,1,25,25,40.0,40.0,85.0,100.0,4,,,300.0",
    "i1,CN,app_b,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,,,",
    "i2,CN,app_a,96,96,0,0,100,100,937.5,937.5,680.0,800.0,2,100.0,130.0,",
    "i3,HN,app_a,12,12,1,1,50,50,120.0,120.0,640.0,800.0,8,200.0,200.0,900.5",
]


def write(tmp_path: Path, rows: list[str], header: str = HEADER) -> Path:
    path = tmp_path / "prism.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_small_file_reads_every_field(tmp_path):
    x = read_alibaba_2025(write(tmp_path, ROWS))
    assert len(x) == 4
    assert x.app_names == ("app_a", "app_b")
    assert x.app.tolist() == [1, 1, 0, 0]
    assert x.role.tolist() == [ROLE_HN, ROLE_CN, ROLE_CN, ROLE_HN]
    assert x.cpu_milli.tolist() == [8000, 64000, 96000, 12000]
    assert x.memory_mib.tolist() == [40 * 1024, 320 * 1024, 960_000, 120 * 1024]
    assert x.num_gpu.tolist() == [1, 0, 0, 1]
    assert x.rdma.tolist() == [25, 1, 100, 50]
    assert x.max_per_node.tolist() == [4, NO_LIMIT, 2, 8]
    # The window ends at the largest time in the file; blanks arrive at 0 or end there.
    assert x.window_end == 900.5
    assert x.preexisting.tolist() == [True, True, False, False]
    assert x.censored.tolist() == [False, True, True, False]
    assert x.arrival.tolist() == [0.0, 0.0, 100.0, 200.0]
    assert x.start.tolist() == [0.0, 0.0, 130.0, 200.0]
    assert x.end.tolist() == [300.0, 900.5, 900.5, 900.5]


def test_window_end_override_and_its_check(tmp_path):
    path = write(tmp_path, ROWS)
    assert read_alibaba_2025(path, window_end=1000.0).end.tolist() == [300, 1000, 1000, 900.5]
    with pytest.raises(InputError, match="'window_end' must be a number ≥ the last time"):
        read_alibaba_2025(path, window_end=500.0)


def test_stats_by_hand(tmp_path):
    s = read_alibaba_2025(write(tmp_path, ROWS)).stats()
    assert s["instances"] == 4 and s["apps"] == 2 and s["apps_with_both_roles"] == 2
    assert s["without_creation_time"] == 2 and s["without_deletion_time"] == 2
    assert s["first_creation_seconds"] == 100.0
    hn = s["by_role"]["HN"]
    assert hn["instances"] == 2
    assert hn["requests"]["vcpu"] == {"p50": 10.0, "p90": 11.6, "p99": 11.96, "max": 12.0}
    aa = s["anti_affinity"]
    assert aa["instances_without_limit"] == 1 and aa["apps_with_limit"] == 2
    assert aa["by_limit"] == {"2": 1, "4": 1, "8": 1}
    # Running: i0 [0, 300), i1 [0, 900.5), i2 [130, 900.5), i3 [200, 900.5) → 4 at t = 200.
    peak = s["concurrency_peak"]
    assert peak["instances"] == 4 and peak["at_seconds"] == 200.0
    assert peak["vcpu"] == 180.0 and peak["gpus"] == 2 and peak["rdma_nics"] == 1.76


BAD = [
    (0, "role", "HN", "XN", "'role' must be CN or HN (got 'XN') at {p}:2, column 'role'"),
    (1, "gpu_request", "0", "1", "a CN instance runs on a CPU node and asks for no GPU"),
    (0, "gpu_request", "1", "0", "an HN instance asks for at least one GPU (got 0) at {p}:2"),
    (0, "rdma_request", "25", "101", "'rdma_request' must be in 0..100 (got 101)"),
    (0, "cpu_request", "8", "8.5", "'cpu_request' must be a whole number (got '8.5')"),
    (0, "cpu_limit", "8", "4", "'cpu_limit' is below 'cpu_request' (got 4 < 8)"),
    (0, "memory_request", "40.0", "-1", "'memory_request' must be ≥ 0 (got -1)"),
    (0, "memory_request", "40.0", "70000", "'memory_request' must be ≤ 65536 GiB (got 70000)"),
    (0, "max_instance_per_node", "4", "0", "must be -1 (no limit) or ≥ 1 (got 0)"),
    (0, "max_instance_per_node", "4", "-2", "'max_instance_per_node' must be ≥ -1 (got -2)"),
    (3, "scheduled_time", "200.0", "150.0", "scheduled before it was created (got 150 < 200)"),
    (3, "scheduled_time", "200.0", "", "must be blank together"),
    (3, "deletion_time", "900.5", "10", "'deletion_time' is before the instance started"),
    (3, "deletion_time", "900.5", "nan", "'deletion_time' must be a number (got 'nan')"),
    (3, "creation_time", "200.0", "4e12", "beyond 100 years of seconds (got 4e+12)"),
    (1, "instance_sn", "i1", "i0", "'instance_sn' 'i0' appears twice"),
    (1, "app_name", "app_b", " ", "'app_name' is blank"),
]


@pytest.mark.parametrize(("row", "column", "old", "new", "message"), BAD)
def test_bad_cell_names_file_line_column(tmp_path, row, column, old, new, message):
    columns = HEADER.split(",")
    rows = [r.split(",") for r in ROWS]
    k = columns.index(column)
    assert rows[row][k] == old
    rows[row][k] = new
    path = write(tmp_path, [",".join(r) for r in rows])
    with pytest.raises(InputError) as err:
        read_alibaba_2025(path)
    text = str(err.value)
    assert message.format(p=path) in text
    assert text.endswith(f"at {path}:{row + 2}, column '{column}'")


def test_missing_column_and_short_row(tmp_path):
    header = HEADER.replace(",max_instance_per_node", "")
    rows = [",".join(r.split(",")[:13] + r.split(",")[14:]) for r in ROWS]
    with pytest.raises(InputError, match=r"missing column.*'max_instance_per_node'"):
        read_alibaba_2025(write(tmp_path, rows, header))
    with pytest.raises(InputError, match=r"row has 16 fields but the header has 17 at .*:3"):
        read_alibaba_2025(write(tmp_path, [ROWS[0], ROWS[1][: ROWS[1].rindex(",")]]))


def _instances(spans: list[tuple[float, float]]) -> ServingInstances:
    n = len(spans)
    start = np.array([s for s, _ in spans], dtype=np.float64)
    end = np.array([e for _, e in spans], dtype=np.float64)
    zeros = np.zeros(n, dtype=np.int64)
    return ServingInstances(
        name=np.array([f"i{k}" for k in range(n)], dtype=object),
        role=np.zeros(n, dtype=np.int8),
        app=zeros,
        app_names=("a",),
        cpu_milli=zeros,
        memory_mib=zeros,
        num_gpu=zeros,
        rdma=zeros,
        disk_gib=np.zeros(n),
        max_per_node=zeros - 1,
        arrival=start,
        start=start,
        end=end,
        preexisting=np.zeros(n, dtype=bool),
        censored=np.zeros(n, dtype=bool),
        window_end=float(end.max()) if n else 0.0,
    )


def test_back_to_back_instances_do_not_overlap():
    x = _instances([(0, 10), (10, 20), (5, 10)])
    assert x.concurrency_peak() == (2, 5.0)


spans = st.lists(
    st.tuples(st.integers(0, 50), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1,
    max_size=30,
)


@given(spans)
def test_concurrency_peak_is_the_most_running_at_any_start(items):
    """Brute force: the count only rises at start times, so the maximum over them is the peak."""
    x = _instances(items)
    peak, when = x.concurrency_peak()
    best = max(int(x.running_at(float(s)).sum()) for s, _ in items)
    assert peak == best
    if peak:
        assert int(x.running_at(when).sum()) == peak
        assert all(int(x.running_at(float(s)).sum()) < peak for s, _ in items if s < when)


@pytest.mark.skipif(not PRISM.is_file(), reason=PRISM_MISSING)
def test_real_file_matches_the_spec_facts():
    x = read_alibaba_2025(PRISM)
    assert len(x) == 23_871
    assert int((x.role == ROLE_CN).sum()) == 16_485
    assert int((x.role == ROLE_HN).sum()) == 7_386
    assert len(x.app_names) == 156
    assert int((x.max_per_node == NO_LIMIT).sum()) == 12_248
    assert int(x.preexisting.sum()) == 7_280
    assert int(x.censored.sum()) == 8_878
    assert x.window_end == 2_677_541.0
    assert int(x.num_gpu.sum()) == 7_386
    assert (x.end[x.censored] == 2_677_541.0).all()
    assert (x.arrival[x.preexisting] == 0).all() and (x.start[x.preexisting] == 0).all()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(ROWS) - 1),
            st.integers(0, 16),
            st.one_of(st.sampled_from(AWKWARD_CELLS), st.text(max_size=6)),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_mutated_cells_read_or_fail_with_one_input_error(edits):
    """Whatever lands in a cell, the reader returns sane instances or raises InputError."""
    rows = [r.split(",") for r in ROWS]
    for row, column, cell in edits:
        rows[row][column] = cell
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_text("\n".join([HEADER, *(",".join(r) for r in rows)]) + "\n")
        try:
            x = read_alibaba_2025(path)
        except InputError:
            return
    assert np.isfinite(x.start).all() and np.isfinite(x.end).all()
    assert (x.start >= 0).all() and (x.end >= x.start).all()
    assert (x.num_gpu[x.role == ROLE_HN] >= 1).all() and (x.num_gpu[x.role == ROLE_CN] == 0).all()
    assert ((x.rdma >= 0) & (x.rdma <= 100)).all() and (x.max_per_node != 0).all()
