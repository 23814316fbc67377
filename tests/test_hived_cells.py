"""HiveD's cell chain from a topology file's ``[[cells]]`` (network spec §4.5): parsed, checked
with errors naming the file and field, and used by ``hived``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.network.generators import parse_topology
from schedlab.network.topology import cluster_for
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobRequest
from schedlab.policies.placement.network.hived import HiveD

#: One leaf of four 8-GPU hosts.
HEAD = """generator = "leafspine"
[params]
leaves = 1
spines = 1
hosts_per_leaf = 4
g = 8
m = 1
nic_gbps = 100
"""
#: Quads of GPUs (no pairs), nodes of two quads, racks of two nodes.
CHAIN = """
[[cells]]
name = "quad"
child = "gpu"
count = 4
[[cells]]
name = "rack"
child = "node"
count = 2
[[cells]]
name = "node"
child = "quad"
count = 2
"""


def _topology(tmp_path: Path, cells: str) -> str:
    """A topology file: HEAD then ``cells`` ([[cells]] tables; a line ``cells = ...`` goes
    before HEAD's tables, where TOML keeps it at the top level)."""
    path = tmp_path / "cells.toml"
    top = cells.startswith("cells =")
    path.write_text(cells + HEAD if top else HEAD + cells)
    return str(path)


def _policy(spec: str) -> tuple[HiveD, object]:
    topo = parse_topology(spec)
    state = cluster_for(topo).new_state()
    policy = HiveD()
    policy.reset(
        PolicyContext(state.cluster, None, np.random.default_rng(0), topology=topo, engine=REPLAY)
    )
    return policy, state


def _place(policy: HiveD, state, n: int):
    got = policy.place_job(JobRequest(-1, n, 0, 0, ANY_MODEL_MASK), state)
    assert got is not None
    for node, gpus in got:
        state.allocate(node, gpus, 0, 0, GPU_MILLI, len(gpus))
    return got


def test_cells_are_read_in_any_order(tmp_path: Path) -> None:
    chain = parse_topology(_topology(tmp_path, CHAIN)).cells
    assert chain is not None
    assert chain.names == ("quad", "node", "rack")
    assert chain.sizes == (4, 8, 16)
    assert chain.node_sizes() == (8, 4, 1)
    assert chain.nodes_per_rack == 2
    assert parse_topology(_topology(tmp_path, "")).cells is None


def test_hived_follows_a_custom_chain(tmp_path: Path) -> None:
    """1 GPU splits node 0 down to GPU 0 either way. Then 2 GPUs: the default chain has pairs
    and takes the free pair (2, 3); with quads as the smallest cell above a GPU, the job takes
    the free quad (4..7), its first two GPUs. 16 GPUs: in the one leaf-rack, idle nodes 1 and 2;
    with racks of two hosts, rack 0 has one idle node, rack 1 (hosts 2, 3) holds it."""
    default, state = _policy(_topology(tmp_path, ""))
    assert _place(default, state, 1) == ((0, (0,)),)
    assert _place(default, state, 2) == ((0, (2, 3)),)
    assert [node for node, _ in _place(default, state, 16)] == [1, 2]

    custom, state = _policy(_topology(tmp_path, CHAIN))
    assert _place(custom, state, 1) == ((0, (0,)),)
    assert _place(custom, state, 2) == ((0, (4, 5)),)
    assert [node for node, _ in _place(custom, state, 16)] == [2, 3]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ('[[cells]]\nname = "quad"\nchild = "pair"\ncount = 4\n', "field 'child', value 'pair'"),
        ('[[cells]]\nname = "quad"\nchild = "gpu"\ncount = 1\n', "field 'count', value 1"),
        ('[[cells]]\nname = "gpu"\nchild = "gpu"\ncount = 2\n', "field 'name', value 'gpu'"),
        (
            '[[cells]]\nname = "a"\nchild = "gpu"\ncount = 2\n'
            '[[cells]]\nname = "b"\nchild = "gpu"\ncount = 4\n',
            "already the child of 'a'",
        ),
        ('[[cells]]\nname = "quad"\nchild = "gpu"\ncount = 4\n', "no cell of 8 GPUs (a node)"),
        (
            '[[cells]]\nname = "node"\nchild = "gpu"\ncount = 8\n'
            '[[cells]]\nname = "rack"\nchild = "node"\ncount = 3\n',
            "4 hosts do not split into racks of 3",
        ),
        (
            '[[cells]]\nname = "node"\nchild = "gpu"\ncount = 8\n'
            '[[cells]]\nname = "rack"\nchild = "node"\ncount = 2\n'
            '[[cells]]\nname = "pod"\nchild = "rack"\ncount = 2\n',
            "only one level, the rack",
        ),
        ("cells = 3\n", "field 'cells' must be an array of tables"),
    ],
)
def test_bad_cells_name_the_file_and_field(tmp_path: Path, cells: str, message: str) -> None:
    path = _topology(tmp_path, cells)
    with pytest.raises(InputError, match=re.escape(message)) as err:
        parse_topology(path)
    assert path in str(err.value)


def test_replay_refuses_bad_cells_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,2,10\n")
    path = _topology(tmp_path, '[[cells]]\nname = "quad"\nchild = "pair"\ncount = 4\n')
    out = tmp_path / "out"
    args = ["replay", "--trace", str(trace), "--topology", path, "--policy", "fifo"]
    assert main([*args, "--placement", "hived", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ")
    assert "cells.toml [[cells]] #1: field 'child', value 'pair'" in err[0]
    assert not out.exists()


def test_replay_runs_hived_on_a_custom_chain(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,0,2,10\n")
    out = tmp_path / "out"
    args = ["replay", "--trace", str(trace), "--topology", _topology(tmp_path, CHAIN)]
    assert main([*args, "--policy", "fifo", "--placement", "hived", "--out", str(out)]) == 0
    assert "completed" in (out / "jobs.csv").read_text()
