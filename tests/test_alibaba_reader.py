"""Reader for the Alibaba GPU-2023 ("openb") node and pod lists: errors name the file, the editor
line (header = line 1) and the column; the real trace (when beside the checkout) reads with the
counts its README publishes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.engines.pack import PackConfig, run_pack
from schedlab.errors import InputError
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.metrics.pack_curves import value_at
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index, spec_mask
from schedlab.traces.alibaba import read_node_list, read_pod_list

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time"
)


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def pod_line(name, cpu=1000, mem=1024, num_gpu=1, gpu_milli=500, spec=""):
    return f"{name},{cpu},{mem},{num_gpu},{gpu_milli},{spec},LS,Running,0,100,0"


def assert_input_error(exc: InputError, path: Path, row: int | None, column: str | None):
    msg = str(exc)
    assert exc.path == str(path)
    assert exc.row == row
    assert exc.column == column
    assert str(path) in msg
    if row is not None:
        assert f"{path}:{row}" in msg
    if column is not None:
        assert f"column '{column}'" in msg


# -- good files ---------------------------------------------------------------------------------
def test_node_list_reads(tmp_path):
    path = write(
        tmp_path,
        "nodes.csv",
        NODE_HEADER,
        "node-a,64000,262144,2,P100",
        "node-b, 96000 ,393216,8,g2",  # spaces and lower case are tolerated
        "node-c,32000,131072,0,",
    )
    c = read_node_list(path)
    assert c.names.tolist() == ["node-a", "node-b", "node-c"]
    assert c.cpu_milli.tolist() == [64000, 96000, 32000]
    assert c.memory_mib.tolist() == [262144, 393216, 131072]
    assert c.num_gpus.tolist() == [2, 8, 0]
    assert c.model.tolist() == [model_index("P100"), model_index("G2"), -1]
    assert c.source == str(path)
    gpu_only = read_node_list(path, gpu_only=True)
    assert gpu_only.names.tolist() == ["node-a", "node-b"]
    assert gpu_only.total_gpus == 10


def test_pod_list_reads(tmp_path):
    path = write(
        tmp_path,
        "pods.csv",
        POD_HEADER,
        pod_line("p0", 12000, 16384, 1, 1000),
        pod_line("p1", 6000, 12288, 1, 460, "V100M16|V100M32"),
        pod_line("p2", 88000, 1024, 0, 0),
        pod_line("p3", 4000, 2048, 8, 1000, "G2"),
    )
    p = read_pod_list(path)
    assert p.name.tolist() == ["p0", "p1", "p2", "p3"]
    assert p.cpu_milli.tolist() == [12000, 6000, 88000, 4000]
    assert p.memory_mib.tolist() == [16384, 12288, 1024, 2048]
    assert p.num_gpu.tolist() == [1, 1, 0, 8]
    assert p.gpu_milli.tolist() == [1000, 460, 0, 1000]
    assert p.model_mask.tolist() == [
        ANY_MODEL_MASK,
        spec_mask(["V100M16", "V100M32"]),
        ANY_MODEL_MASK,
        spec_mask(["G2"]),
    ]
    assert p.models_of(1) == ["V100M16", "V100M32"]


def test_five_column_multigpu_style_pod_list(tmp_path):
    path = write(
        tmp_path,
        "openb_pod_list_multigpu20.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
        "openb-pod-0000,12000,16384,1,1000",
        "openb-pod-0001,6000,12288,1,460",
        "openb-pod-0002,2000,1024,0,0",
        "openb-pod-0003,32000,65536,4,1000",
    )
    p = read_pod_list(path)
    assert len(p) == 4
    assert (p.model_mask == ANY_MODEL_MASK).all()
    assert p.stats()["by_num_gpu"] == {"0": 1, "1": 2, "4": 1}
    assert p.stats()["gpu_request"] == pytest.approx(5.46)


# -- errors: file, line, column -----------------------------------------------------------------
def test_missing_column(tmp_path):
    path = write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu", "p0,1000,100,1")
    with pytest.raises(InputError) as info:
        read_pod_list(path)
    assert "missing column(s) 'gpu_milli'" in str(info.value)
    assert_input_error(info.value, path, 1, None)  # the header line
    path = write(tmp_path, "nodes.csv", "sn,cpu_milli,gpu,model", "n,1000,1,T4")
    with pytest.raises(InputError, match="'memory_mib'") as info:
        read_node_list(path)
    assert_input_error(info.value, path, 1, None)


def test_non_numeric_value(tmp_path):
    path = write(
        tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line("p1"), pod_line("p2", mem="lots")
    )
    with pytest.raises(InputError, match=r"whole number.*'lots'") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 4, "memory_mib")  # header 1, p0 2, p1 3, p2 4
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,1024,2.5,T4")
    with pytest.raises(InputError, match=r"'2\.5'") as info:
        read_node_list(path)
    assert_input_error(info.value, path, 2, "gpu")


def test_negative_value(tmp_path):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line("p1", cpu=-5))
    with pytest.raises(InputError, match=r"'cpu_milli' must be ≥ 0 \(got -5\)") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 3, "cpu_milli")
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,-1,2,T4")
    with pytest.raises(InputError, match="got -1") as info:
        read_node_list(path)
    assert_input_error(info.value, path, 2, "memory_mib")


@pytest.mark.parametrize("bad", [1001, 1200, -1])
def test_gpu_milli_outside_0_to_1000(tmp_path, bad):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line("p1", gpu_milli=bad))
    with pytest.raises(InputError, match=rf"'gpu_milli' must be in 0\.\.1000 \(got {bad}\)") as e:
        read_pod_list(path)
    assert_input_error(e.value, path, 3, "gpu_milli")


def test_gpu_milli_1000_is_allowed(tmp_path):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod_line("p0", gpu_milli=1000))
    assert read_pod_list(path).gpu_milli.tolist() == [1000]


def test_multi_gpu_pod_with_partial_share(tmp_path):
    path = write(
        tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line("p1", num_gpu=2, gpu_milli=500)
    )
    with pytest.raises(InputError, match=r"num_gpu > 1 must take whole GPUs.*num_gpu=2") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 3, "gpu_milli")


@pytest.mark.parametrize(
    ("num_gpu", "gpu_milli", "message"),
    [(1, 0, "share above 0"), (0, 300, "CPU-only pod")],
)
def test_inconsistent_gpu_columns(tmp_path, num_gpu, gpu_milli, message):
    path = write(
        tmp_path, "pods.csv", POD_HEADER, pod_line("p0", num_gpu=num_gpu, gpu_milli=gpu_milli)
    )
    with pytest.raises(InputError, match=message) as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 2, "gpu_milli")


def test_unknown_model_in_node_list(tmp_path):
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,1024,2,T4", "n1,64000,1024,2,H200")
    with pytest.raises(InputError, match="unknown GPU model 'H200' in 'model'") as info:
        read_node_list(path)
    assert "known: G1, G2" in str(info.value)
    assert_input_error(info.value, path, 3, "model")


def test_node_with_gpus_but_no_model(tmp_path):
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,1024,2,")
    with pytest.raises(InputError, match="no 'model'") as info:
        read_node_list(path)
    assert_input_error(info.value, path, 2, "model")


def test_unknown_model_in_gpu_spec(tmp_path):
    path = write(
        tmp_path,
        "pods.csv",
        POD_HEADER,
        pod_line("p0", spec="T4"),
        pod_line("p1", spec="T4"),
        pod_line("p2", spec="T4|V100X"),
    )
    with pytest.raises(InputError, match="unknown GPU model 'V100X' in 'gpu_spec'") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 4, "gpu_spec")


def test_duplicate_names(tmp_path):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line("p1"), pod_line("p0"))
    with pytest.raises(InputError, match="'name' 'p0' appears twice") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 4, "name")  # the second occurrence
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,1,1,1,T4", "n0,1,1,1,T4")
    with pytest.raises(InputError, match="'sn' 'n0' appears twice") as info:
        read_node_list(path)
    assert_input_error(info.value, path, 3, "sn")


def test_blank_name(tmp_path):
    path = write(tmp_path, "pods.csv", POD_HEADER, pod_line("p0"), pod_line(" "))
    with pytest.raises(InputError, match="'name' is blank") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, 3, "name")


def test_empty_file_and_header_only(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(InputError, match="file is empty") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, None, None)
    path = write(tmp_path, "header.csv", POD_HEADER)
    with pytest.raises(InputError, match="header but no data rows") as info:
        read_pod_list(path)
    assert_input_error(info.value, path, None, None)
    path = write(tmp_path, "nodes.csv", NODE_HEADER)
    with pytest.raises(InputError, match="header but no data rows"):
        read_node_list(path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_node_list(tmp_path / "nope.csv")


@pytest.mark.parametrize("gpu_only", [False, True])
def test_node_list_without_gpu_nodes_is_refused(tmp_path, gpu_only):
    # A cluster with no GPU at all has nothing to place on: every pod or job would fail.
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,1024,0,", "n1,64000,1024,0,")
    with pytest.raises(InputError, match="no node has a GPU") as info:
        read_node_list(path, gpu_only=gpu_only)
    assert_input_error(info.value, path, None, "gpu")


def test_reported_line_counts_blank_lines(tmp_path):
    path = write(tmp_path, "nodes.csv", NODE_HEADER, "n0,64000,1024,2,T4", "", "n1,x,1024,2,T4")
    with pytest.raises(InputError) as info:
        read_node_list(path)
    assert info.value.row == 4  # 'x' is on the 4th line of the file


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("bad", ["inf", "1e30"])
def test_non_finite_value_is_echoed(tmp_path, bad):
    path = write(tmp_path, "nodes.csv", NODE_HEADER, f"n0,{bad},1024,2,T4")
    with pytest.raises(InputError) as info:
        read_node_list(path)
    assert_input_error(info.value, path, 2, "cpu_milli")
    assert bad in str(info.value)


# -- the real trace ----------------------------------------------------------------------------
POD_LIST_ROWS = {
    "cpu0": 7064,
    "cpu037": 7336,
    "cpu050": 7439,
    "cpu072": 7608,
    "cpu100": 7853,
    "cpu200": 8832,
    "cpu235": 9240,
    "cpu250": 9420,
    "cpu300": 10094,
    "default": 8152,
    "gpushare20": 8152,
    "gpushare40": 8152,
    "gpushare60": 8152,
    "gpushare80": 8152,
    "gpushare100": 8152,
    "gpuspec05": 8152,
    "gpuspec10": 8152,
    "gpuspec20": 8152,
    "gpuspec25": 8152,
    "gpuspec33": 8152,
    "multigpu20": 8324,
    "multigpu30": 8508,
    "multigpu40": 8746,
    "multigpu50": 9061,
}


@pytest.mark.shared
def test_real_gpu_node_list(shared_traces):
    c = read_node_list(shared_traces / "openb_node_list_gpu_node.csv")
    assert c.size == 1213
    assert c.total_gpus == 6212
    s = c.summary()
    assert s["cpu_cores"] == 107_018
    assert s["by_model"] == {
        "G2": {"nodes": 549, "gpus": 4392},
        "G3": {"nodes": 39, "gpus": 312},
        "T4": {"nodes": 404, "gpus": 842},
        "P100": {"nodes": 134, "gpus": 265},
        "V100M16": {"nodes": 55, "gpus": 195},
        "V100M32": {"nodes": 30, "gpus": 204},
        "A10": {"nodes": 2, "gpus": 2},
    }


@pytest.mark.shared
def test_real_all_node_list(shared_traces):
    path = shared_traces / "openb_node_list_all_node.csv"
    c = read_node_list(path)
    assert (c.size, c.total_gpus, int((c.num_gpus == 0).sum())) == (1523, 6212, 310)
    assert read_node_list(path, gpu_only=True).size == 1213


@pytest.mark.shared
def test_real_default_pod_list_stats(shared_traces):
    p = read_pod_list(shared_traces / "openb_pod_list_default.csv")
    s = p.stats()
    assert s["pods"] == 8152
    assert s["cpu_only"] == 1088
    assert s["gpu_sharing"] == 3078
    assert s["by_num_gpu"] == {"0": 1088, "1": 6989, "2": 16, "4": 15, "8": 44}
    assert s["gpu_request"] == pytest.approx(6086.8)
    assert s["with_model_constraint"] == 0
    # 21 sizes of partial-GPU request (1000 counted among them in the README).
    sizes = sorted(set(p.gpu_milli[p.num_gpu == 1].tolist()))
    assert sizes == [
        50,
        110,
        140,
        160,
        220,
        230,
        270,
        290,
        320,
        330,
        350,
        370,
        440,
        460,
        470,
        480,
        550,
        590,
        650,
        810,
        1000,
    ]
    assert len(TargetWorkload.from_pods(p)) == 35


@pytest.mark.shared
def test_real_all_24_pod_lists_read(shared_traces):
    files = sorted(shared_traces.glob("openb_pod_list_*.csv"))
    assert len(files) == 24
    for path in files:
        variant = path.stem.removeprefix("openb_pod_list_")
        p = read_pod_list(path)
        assert len(p) == POD_LIST_ROWS[variant], variant
        assert len(np.unique(p.name.astype(str))) == len(p)


@pytest.mark.shared
@pytest.mark.parametrize(
    ("variant", "key", "expected"),
    [
        ("cpu0", "cpu_only", 0),
        ("cpu300", "cpu_only", 3030),
        ("gpushare20", "gpu_sharing", 2324),
        ("gpushare100", "gpu_sharing", 7064),
        ("gpuspec05", "with_model_constraint", 369),
        ("gpuspec33", "with_model_constraint", 2388),
        ("multigpu50", "gpu_request", 11358.8),
    ],
)
def test_real_variant_stats(shared_traces, variant, key, expected):
    s = read_pod_list(shared_traces / f"openb_pod_list_{variant}.csv").stats()
    assert s[key] == pytest.approx(expected)


@pytest.mark.shared
def test_real_fgd_pack_matches_paper(shared_traces):
    cluster = read_node_list(shared_traces / "openb_node_list_gpu_node.csv")
    pods = read_pod_list(shared_traces / "openb_pod_list_default.csv")
    result = run_pack(cluster, pods, PackConfig("fgd", seed=42, inflate=1.3))
    summary = result.summary()
    assert summary["typical_tasks"] == 35
    # Published: 4.77 % unallocated at arrived = 100 % (mean of seeds 42..51, ±0.10 across seeds).
    assert value_at(summary["unallocated_gpu_pct"], 100) == pytest.approx(4.77, abs=0.5)
    # The stream asks for at most 1.3 × capacity and reaches bin 130.
    assert result.arrived_pct[-1] <= 130.0
    assert value_at(summary["unallocated_gpu_pct"], 130) is not None
