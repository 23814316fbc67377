"""Plugins that break: a module that cannot be imported (a syntax error, an exception or
``sys.exit`` at import, a constructor that needs an argument), and policy methods that raise or
return what no engine can apply (NaN or too few scores, GPU 99 or one GPU twice, keys of the
wrong length, a start on fewer GPUs than asked or on none). Every engine — pack, the sharing
engine, replay, a sweep's workers, serve — stops with one line naming the plugin, the method and
what it returned (exit 2), and writes nothing."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from bad_input_helpers import TRACE, refused, replay_argv, write

from schedlab.errors import PolicyError
from schedlab.policies import plugins as plugin_registry
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,V100\nn1,32000,131072,4,V100\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
    f"p{i},1000,1024,1,1000\n" for i in range(6)
)
#: A job of 4 GPUs (one whole node) and one of 1.
WIDE = "job_id,submit_time,num_gpus,duration\nwide,0,4,100\nsmall,10,1,50\n"

HEAD = """\
import sys
import numpy as np
from schedlab.model.snapshot import Preempt, Resize, Start
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.base import PlacementPolicy, best_fit_gpus
from schedlab.policies.scheduler import SchedulingPolicy
"""

_names = itertools.count()


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """``plugin(body)`` writes a module (a fresh name each time) with ``body`` and returns its
    name; the registry forgets every plugin afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(body: str) -> str:
        name = f"bad_plugin_{next(_names)}"
        write(tmp_path, f"{name}.py", HEAD + textwrap.dedent(body))
        made.append(name)
        return name

    yield make
    for name in ("bad-place", "bad-order", "bad-policy"):
        plugin_registry.forget(name)


def placement(method: str) -> str:
    """A placement plugin ``bad-place`` with ``method`` (indented source) overriding bestfit's
    behaviour."""
    return (
        "class Bad(PlacementPolicy):\n"
        "    name = 'bad-place'\n"
        "    summary = 'a broken placement'\n"
        "    def score(self, pod, state, feasible):\n"
        "        return -state.gpu_free_sum.astype(np.float64)\n"
        + textwrap.indent(textwrap.dedent(method), "    ")
    )


def ordering(keys: str) -> str:
    return (
        "class Bad(Ordering):\n"
        "    name = 'bad-order'\n"
        "    summary = 'a broken ordering'\n"
        "    def keys(self, snap, idx):\n"
        f"        {keys}\n"
    )


def policy(decide: str, extra: str = "") -> str:
    """A whole-cluster policy plugin ``bad-policy`` whose decide() is ``decide``."""
    return (
        "class Bad(SchedulingPolicy):\n"
        "    name = 'bad-policy'\n"
        "    summary = 'a broken whole-cluster policy'\n"
        "    uses_placement = False\n"
        "    def decide(self, snap):\n"
        + textwrap.indent(textwrap.dedent(decide).rstrip("\n") + "\n", "        ")
        + textwrap.indent(textwrap.dedent(extra), "    ")
    )


# -- modules that cannot be loaded -----------------------------------------------------------------
SYNTAX = "class Bad(PlacementPolicy):\n    name = 'x'\n    def score(self\n"
IMPORT_CASES = [
    ("syntax error", SYNTAX, ":9", "syntax error at"),
    (
        "raises at import",
        "raise RuntimeError('no licence')\n",
        "",
        "raised RuntimeError: no licence",
    ),
    ("sys.exit(0) at import", "sys.exit(0)\n", "", "called sys.exit(0)"),
    ("sys.exit('bye') at import", "sys.exit('bye')\n", "", "called sys.exit('bye')"),
]


@pytest.mark.parametrize(
    ("body", "where", "needle"), [c[1:] for c in IMPORT_CASES], ids=[c[0] for c in IMPORT_CASES]
)
def test_a_plugin_module_that_cannot_be_imported_is_one_line(
    body: str,
    where: str,
    needle: str,
    plugin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = plugin(body)
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", "--plugin", f"{module}:Bad")
    refused(argv, capsys, f"'--plugin {module}:Bad'", needle, where, out=tmp_path / "out")


def test_a_plugin_whose_constructor_needs_an_argument_is_one_line(
    plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = plugin(placement("def __init__(self, weight):\n    self.weight = weight\n"))
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", "--plugin", f"{module}:Bad")
    argv += ["--placement", "bad-place"]
    needles = ["'bad-place' cannot be built from its parameters", "'weight'"]
    refused(argv, capsys, *needles, out=tmp_path / "out")


def test_a_plugin_whose_constructor_raises_is_one_line(
    plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = plugin(placement("def __init__(self):\n    raise OSError('no GPU driver')\n"))
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", "--plugin", f"{module}:Bad")
    argv += ["--placement", "bad-place"]
    needles = [f"({module}:Bad)", "its constructor raised OSError: no GPU driver"]
    refused(argv, capsys, *needles, out=tmp_path / "out")


# -- placement methods ---------------------------------------------------------------------------
SCORE = "def score(self, pod, state, feasible):\n    return {}\n"
PICK = "def pick_gpus(self, pod, state, node):\n    return {}\n"
PLACEMENT_CASES = [
    ("score raises", SCORE.format("1 / 0"), "score() raised ZeroDivisionError: division by zero"),
    (
        "score NaN",
        SCORE.format("np.full(len(feasible), np.nan)"),
        "score() returned NaN for node 0",
    ),
    ("score too short", SCORE.format("np.zeros(1)"), "score() returned an array of shape (1,)"),
    (
        "score a list",
        SCORE.format("[0.0] * len(feasible)"),
        "score() returned [0.0, 0.0], not one number per node (2 nodes)",
    ),
    ("score text", SCORE.format("np.array(['a'] * len(feasible))"), "not one number per node"),
    ("no GPUs", PICK.format("()"), "pick_gpus() returned () for a pod asking "),
    ("GPU 99", PICK.format("(99,)"), "pick_gpus() returned (99,)"),
    ("one GPU twice", PICK.format("(0, 0)"), "pick_gpus() returned (0, 0)"),
    ("a busy GPU", PICK.format("(0,)"), "pick_gpus() returned (0,) for a pod asking "),
    ("pick raises", PICK.format("{}[node]"), "pick_gpus() raised KeyError"),
    ("GPU 1.5", PICK.format("(1.5,)"), "pick_gpus() returned (1.5,)"),
]


@pytest.fixture
def pack_files(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path, "nodes.csv", NODES), write(tmp_path, "pods.csv", PODS)


#: Every case in pack and replay; the sharing engine and a sweep's workers (slower to start)
#: take the same placement framework through a few of them.
ENGINE_CASES = [
    pytest.param(engine, method, needle, id=f"{engine}-{case}")
    for engine in ("pack", "replay", "sharing", "sweep")
    for case, method, needle in PLACEMENT_CASES
    if engine in ("pack", "replay") or case in ("score NaN", "GPU 99", "pick raises")
]


@pytest.mark.parametrize(("engine", "method", "needle"), ENGINE_CASES)
def test_a_broken_placement_plugin_stops_every_engine_in_one_line(
    engine: str,
    method: str,
    needle: str,
    plugin,
    pack_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = plugin(placement(method))
    nodes, pods = pack_files
    out = tmp_path / "out"
    if engine == "pack":
        argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "bad-place"]
        argv += ["--inflate", "1", "--no-figures"]
    elif engine == "sharing":
        argv = ["replay", "--sharing", "--mode", "pack", "--inflate", "1", "--cluster", str(nodes)]
        argv += ["--trace", str(pods), "--placement", "bad-place"]
    elif engine == "replay":
        argv = replay_argv(tmp_path, "--cluster", str(nodes), "--placement", "bad-place")
    else:  # the runs go to worker processes
        trace = write(tmp_path, "jobs.csv", TRACE)
        argv = ["sweep", "--cluster", str(nodes), "--traces", str(trace), "--policies", "fifo"]
        argv += ["sjf", "--placements", "bad-place", "--workers", "2"]
    argv += ["--plugin", f"{module}:Bad", "--out", str(out)]
    refused(argv, capsys, f"placement 'bad-place' (plugin {module}:Bad): ", needle, out=out)


# -- ordering keys ---------------------------------------------------------------------------------
ORDERING_CASES = [
    ("raises", "raise ValueError('no key')", "keys() raised ValueError: no key"),
    ("NaN", "return np.full(len(idx), np.nan)", "keys() returned an array of shape (1,) (float64)"),
    ("too many", "return np.zeros(len(idx) + 1)", "keys() returned an array of shape (2,)"),
    ("a list", "return [0] * len(idx)", "keys() returned [0], not one number (no NaN) per job"),
    ("None", "return None", "keys() returned None"),
]


@pytest.mark.parametrize(
    ("keys", "needle"), [c[1:] for c in ORDERING_CASES], ids=[c[0] for c in ORDERING_CASES]
)
def test_a_broken_ordering_plugin_is_one_line(
    keys: str, needle: str, plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = plugin(ordering(keys))
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", "--plugin", f"{module}:Bad")
    argv += ["--policy", "bad-order"]
    refused(argv, capsys, f"ordering 'bad-order' (plugin {module}:Bad): {needle}")
    assert not (tmp_path / "out").exists()


# -- whole-cluster policies ------------------------------------------------------------------------
FIRST = "j = next(iter(snap.pending_set), None)\nif j is None:\n    return []\n"
START = FIRST + "return [Start(j, {})]"
POLICY_CASES = [
    (
        "8-GPU job on 1 GPU",
        START.format("((0, (0,)),)"),
        "started job 0 on 1 GPU(s) over 1 node(s) (((0, (0,)),)); it asked for 4 GPU(s)",
    ),
    ("empty allocation", START.format("()"), "started job 0 (4 GPUs asked) on an empty allocation"),
    ("a node without GPUs", START.format("((1, ()),)"), "started job 0 on 0 GPU(s) over 1 node(s)"),
    (
        "node 99",
        START.format("((99, (0, 1, 2, 3)),)"),
        "started job 0 on ((99, (0, 1, 2, 3)),), not nodes of the cluster",
    ),
    (
        "allocation not pairs",
        START.format("(0, 1, 2, 3)"),
        "started job 0 on (0, 1, 2, 3), not nodes of the cluster",
    ),
    (
        "GPU 99",
        START.format("((0, (0, 1, 2, 99)),)"),
        "started job 0 on ((0, (0, 1, 2, 99)),), not nodes of the cluster each with its GPUs",
    ),
    (
        "busy GPUs",
        FIRST + "return [Start(j, ((0, (0, 1, 2, 3) if j == 0 else (0,)),))]",
        "decide() placed job 1 where it does not fit (((0, (0,)),)): GPU share on node 0",
    ),
    (
        "one GPU twice",
        START.format("((0, (0, 1, 2, 2)),)"),
        "started job 0 on ((0, (0, 1, 2, 2)),), not nodes of the cluster",
    ),
    ("decide returns None", "return None", "decide() returned None, not a list of decisions"),
    ("decide returns a job", FIRST + "return [j]", "decide() returned 0, which is not a decision"),
    (
        "decide raises",
        "raise IndexError('out of range')",
        "decide() raised IndexError: out of range",
    ),
]


@pytest.mark.parametrize(
    ("decide", "needle"), [c[1:] for c in POLICY_CASES], ids=[c[0] for c in POLICY_CASES]
)
def test_a_whole_cluster_plugin_giving_wrong_allocations_is_one_line(
    decide: str, needle: str, plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused_policy(plugin(policy(decide)), needle, tmp_path, capsys)


def refused_policy(
    module: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replay :data:`WIDE` under plugin ``module``'s ``bad-policy``: one line naming it."""
    argv = replay_argv(tmp_path, "--cluster", "2x4:V100", "--plugin", f"{module}:Bad", trace=WIDE)
    argv += ["--policy", "bad-policy"]
    refused(argv, capsys, f"'bad-policy' (plugin {module}:Bad)", needle, out=tmp_path / "out")


#: Starts job 0 whole at time 0, asks to be woken at 20 and then does ``later``.
LATER = """\
if snap.now >= 20 and snap.running_set:
    {later}
return [Start(0, ((0, (0, 1, 2, 3)),))] if 0 in snap.pending_set else []
"""
WAKE_AT_20 = """\
def next_wakeup(self, snap):
    return 20.0 if snap.now < 20 else float('inf')
"""


@pytest.mark.parametrize(
    ("later", "needle"),
    [
        ("return [Resize(0, ())]", "resized job 0 (4 GPUs asked) on an empty allocation"),
        ("return [Resize(0, ((0, (0, 1)),))]", "resized job 0 on 2 GPU(s) over 1 node(s)"),
        ("return [Overhead(0, float('inf'))]", "charged job 0 inf s of overhead"),
        ("return [Overhead(0, float('nan'))]", "charged job 0 nan s of overhead"),
        ("return [Overhead(0, '5')]", "charged job 0 '5' s of overhead"),
        ("return [Overhead('0', 5.0)]", "charged an overhead to '0', not a job"),
        ("return [Reject(0, None)]", "rejected job 0 with reason None"),
        ("return [Overheads((0,), (-1.0,))]", "charged job 0 -1.0 s of overhead"),
        ("return [Overheads((0,), ())]", "charged 1 job(s) 0 overhead(s) in one Overheads"),
    ],
)
def test_a_later_decision_out_of_range_is_one_line(
    later: str, needle: str, plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "from schedlab.model.snapshot import Overhead, Overheads, Reject\n"
    body += LATER.format(later=later)
    refused_policy(plugin(policy(body, WAKE_AT_20)), needle, tmp_path, capsys)


NAN_WAKEUP = """\
def next_wakeup(self, snap):
    return float('nan')
"""


def test_a_nan_wake_up_time_is_one_line(
    plugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = plugin(policy("return []", NAN_WAKEUP))
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", "--plugin", f"{module}:Bad")
    refused([*argv, "--policy", "bad-policy"], capsys, "next_wakeup() returned nan, not a time")


def test_serve_stops_on_a_wrong_allocation_and_journals_why(plugin, tmp_path: Path) -> None:
    module = plugin(policy(FIRST + "return [Start(j, ((0, (0,)),))]"))
    fake = FakeSlurm([fake_node("node1", gpus=8)], [fake_job(1, 4, 100.0)])
    config = ServeConfig("bad-policy", plugins=(f"{module}:Bad",))
    journal = tmp_path / "j.jsonl"
    server = Server(fake, config, Journal(journal), clock=lambda: 200.0)
    with pytest.raises(PolicyError, match=r"started job 0 on 1 GPU\(s\).*asked for 4 GPU\(s\)"):
        server.cycle()
    errors = [r for r in read_journal(journal) if r["action"] == "error"]
    assert len(errors) == 1 and "it asked for 4 GPU(s)" in errors[0]["reason"]
    assert not any(r["action"] == "start" for r in read_journal(journal))


def test_serve_kubernetes_stops_on_a_wrong_allocation_and_journals_why(
    plugin, tmp_path: Path
) -> None:
    from kube_objects import node, pod
    from schedlab.serve.kubernetes.fake import FakeKube
    from schedlab.serve.kubernetes.server import KubeConfig, KubeServer

    module = plugin(policy(FIRST + "return [Start(j, ((0, (0,)),))]"))
    api = FakeKube()
    api.add_node(node("node1", 8))
    api.add_pod(pod("a", 4))
    config = KubeConfig(policy="bad-policy", plugins=(f"{module}:Bad",), identity="a")
    journal = tmp_path / "k.jsonl"
    server = KubeServer(api, config, Journal(journal), clock=lambda: 1_800_000_000.0, watch=False)
    server.start_watches()
    for cache in (server.pods, server.nodes, server.groups):
        if cache is not None:
            cache.run_once()
    with pytest.raises(PolicyError, match=r"started job 0 on 1 GPU\(s\).*asked for 4 GPU\(s\)"):
        server.cycle()
    errors = [r for r in read_journal(journal) if r["action"] == "error"]
    assert len(errors) == 1 and "it asked for 4 GPU(s)" in errors[0]["reason"]
    assert not [c for c in api.calls if c[1].endswith("/binding")]  # nothing bound


@pytest.mark.parametrize(
    ("state", "needle"),
    [
        ("{'seen': {1, 2}}", "export_state() returned {'seen': {1, 2}}, which is not JSON"),
        ("1 / 0", "export_state() raised ZeroDivisionError"),
    ],
)
def test_serve_stops_on_a_state_it_cannot_journal(
    state: str, needle: str, plugin, tmp_path: Path
) -> None:
    extra = f"stateful = True\ndef export_state(self):\n    return {state}\n"
    module = plugin(policy("return []", extra))
    fake = FakeSlurm([fake_node("node1", gpus=8)], [fake_job(1, 4, 100.0)])
    config = ServeConfig("bad-policy", plugins=(f"{module}:Bad",))
    journal = tmp_path / "j.jsonl"
    server = Server(fake, config, Journal(journal), clock=lambda: 200.0)
    with pytest.raises(PolicyError, match=f"policy 'bad-policy' \\(plugin {module}:Bad\\)"):
        server.cycle()
    errors = [r for r in read_journal(journal) if r["action"] == "error"]
    assert len(errors) == 1 and needle in errors[0]["reason"]
