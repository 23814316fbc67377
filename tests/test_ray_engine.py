"""``schedlab sweep --engine ray`` on a two-node Ray cluster started here on this machine: the
same results.csv as the local pool (apart from wall times), and a node killed mid-sweep costs only
its runs, which Ray runs again."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlab.cli import main
from test_cli import NODES, _pods_csv
from test_sweep_signals import _busy_trace

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

pytestmark = pytest.mark.slow  # two Ray nodes take most of a minute to start and stop

RAY = Path(sys.executable).with_name("ray")


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: every socket stays bound until all are chosen, so the
    kernel cannot hand the same ephemeral port out twice (two Ray flags on one port stop the
    node)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


_PORT_FLAGS = (
    "--node-manager-port",
    "--object-manager-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
    "--metrics-export-port",
)


def _ports(taken: set[int]) -> list[str]:
    """Every port a Ray node opens, chosen free and apart from ``taken`` (the ports of the
    other node), so the cluster cannot collide with itself or another."""
    ports = [p for p in _free_ports(len(_PORT_FLAGS) + len(taken)) if p not in taken]
    taken.update(ports[: len(_PORT_FLAGS)])
    return [arg for flag, p in zip(_PORT_FLAGS, ports, strict=False) for arg in (flag, str(p))]


def _ray_start(args: list[str], env: dict[str, str]) -> None:
    """``ray start`` with its own output in the failure, which is what says why."""
    done = subprocess.run(args, capture_output=True, env=env, timeout=120, text=True)
    if done.returncode != 0:
        command = " ".join(args)
        raise RuntimeError(f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def _tree(marker: str) -> list[int]:
    """Processes whose command line holds ``marker``, and all their descendants."""
    parent: dict[int, int] = {}
    roots = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(stat[stat.rindex(")") + 2 :].split()[1])
        if marker in cmd:
            roots.append(pid)
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return sorted(found)


def _kill(marker: str) -> None:
    for pid in _tree(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    root = tmp_path_factory.mktemp("ray")
    head, worker = root / "head", root / "worker"
    taken: set[int] = set()
    (port,) = _free_ports(1)
    taken.add(port)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    try:
        _ray_start(
            [str(RAY), "start", "--head", "--port", str(port), "--temp-dir", str(head),
             "--include-dashboard", "false", *common, *_ports(taken)],
            env,
        )  # fmt: skip
        _ray_start(
            [str(RAY), "start", "--address", f"127.0.0.1:{port}", "--temp-dir", str(worker),
             *common, *_ports(taken)],
            env,
        )  # fmt: skip
        yield {"address": f"127.0.0.1:{port}", "worker": str(worker)}
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _kill(str(worker))
        _kill(str(head))


def _without_wall(path: Path) -> list[list[str]]:
    lines = [line.split(",") for line in path.read_text().splitlines()]
    wall = lines[0].index("wall_seconds")
    return [line[:wall] + line[wall + 1 :] for line in lines]


def _in(folder: Path, argv: list[str]) -> int:
    """Run the command with ``folder`` as the current folder (results name their runs
    relative to it, so two grids can be compared line for line)."""
    folder.mkdir(parents=True, exist_ok=True)
    here = Path.cwd()
    os.chdir(folder)
    try:
        return main(argv)
    finally:
        os.chdir(here)


def test_a_pack_grid_on_ray_equals_the_local_one(cluster, tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    header, *rows = NODES.strip().splitlines()
    nodes.write_text("\n".join([header] + [f"c{k}{r}" for k in range(8) for r in rows]) + "\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(_pods_csv(300))
    argv = ["sweep", "--nodes", str(nodes), "--pods", str(pods), "--policies", "random"]
    argv += ["bestfit", "fgd", "dotprod", "--seeds", "1-6", "--no-figures", "--out", "grid"]
    assert _in(tmp_path / "local", [*argv, "--workers", "2"]) == 0
    remote = [*argv, "--engine", "ray", "--address", str(cluster["address"])]
    assert _in(tmp_path / "ray", remote) == 0
    local_rows = _without_wall(tmp_path / "local" / "grid" / "results.csv")
    assert len(local_rows) == 1 + 24
    assert _without_wall(tmp_path / "ray" / "grid" / "results.csv") == local_rows


def test_a_replay_grid_survives_a_lost_node(cluster, tmp_path: Path) -> None:
    trace = _busy_trace(tmp_path / "busy.csv", jobs=3000)
    argv = ["sweep", "--cluster", "4x8:V100", "--traces", str(trace), "--policies", "fifo"]
    argv += ["tiresias", "sjf", "--seeds", "1-4", "--out", "grid"]
    assert _in(tmp_path / "local", [*argv, "--workers", "2"]) == 0
    (tmp_path / "ray").mkdir()
    sweep = subprocess.Popen(
        [sys.executable, "-m", "schedlab", *argv, "--engine", "ray", "--address",
         str(cluster["address"])],
        cwd=tmp_path / "ray", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        runs = tmp_path / "ray" / "grid" / "runs"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(runs.glob("*/*/summary.json"))) < 2:
            time.sleep(0.1)
        landed = len(list(runs.glob("*/*/summary.json")))
        assert 2 <= landed < 12, "the sweep ended before the node could be killed"
        _kill(str(cluster["worker"]))  # the second node and its workers, mid-sweep
        _, err = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, err
    local_rows = _without_wall(tmp_path / "local" / "grid" / "results.csv")
    assert len(local_rows) == 1 + 12
    assert _without_wall(tmp_path / "ray" / "grid" / "results.csv") == local_rows
