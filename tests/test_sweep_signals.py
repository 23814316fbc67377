"""Stopping ``schedlab sweep`` (Ctrl-C, SIGTERM, SIGKILL) leaves no worker process behind, prints
at most one line and no partial output (a sweep's grid folder keeps only its manifest and the
runs that finished, so a rerun resumes it); an interrupted or failed run of any command leaves no
partial folder. The sweep runs as a real process in its own session, so its workers share its
process group and can be found in ``/proc`` after it is gone."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import exited_pid
from schedlab.cli import main

#: Enough work that every worker is busy for many seconds (a few seconds per run on 2 cores).
BUSY_JOBS = 20_000


def _busy_trace(path: Path, jobs: int = BUSY_JOBS) -> Path:
    rng = random.Random(1)
    rows = ["job_id,submit_time,num_gpus,duration"]
    t = 0.0
    for i in range(jobs):
        t += rng.expovariate(1 / 20)
        rows.append(f"j{i},{t:.1f},{rng.choice([1, 1, 2, 4, 8])},{rng.expovariate(1 / 3000):.1f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group ``pgid``, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture(scope="module")
def busy_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _busy_trace(tmp_path_factory.mktemp("busy") / "busy.csv")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    ("target", "sig", "code", "message"),
    [
        ("parent", signal.SIGINT, 130, "schedlab: interrupted"),
        ("group", signal.SIGINT, 130, "schedlab: interrupted"),  # Ctrl-C in a terminal
        ("parent", signal.SIGTERM, 143, "schedlab: terminated"),
        ("parent", signal.SIGKILL, -signal.SIGKILL, None),
        # a worker dies (the out-of-memory killer, say): the others are stopped too
        ("worker", signal.SIGKILL, 2, "schedlab: error: a worker process ended unexpectedly"),
    ],
)
def test_stopping_a_sweep_leaves_no_worker_and_no_output(
    target: str,
    sig: signal.Signals,
    code: int,
    message: str | None,
    busy_trace: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "grid"
    argv = [sys.executable, "-m", "schedlab", "sweep", "--cluster", "4x8:V100", "--traces"]
    argv += [str(busy_trace), "--policies", "tiresias", "fifo", "--seeds", "0-3"]
    argv += ["--workers", "2", "--out", str(out)]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: pgid = its pid
    )
    try:
        # Both workers started and the runs under way.
        assert _wait_for(lambda: len(_group(proc.pid)) >= 3, timeout=60), "workers never started"
        time.sleep(1.0)
        workers = [p for p in _group(proc.pid) if p != proc.pid]
        if target == "group":
            os.killpg(proc.pid, sig)
        else:
            os.kill(workers[0] if target == "worker" else proc.pid, sig)
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)
        assert _wait_for(lambda: not _group(proc.pid), timeout=5), _group(proc.pid)
        assert time.monotonic() - started < 15
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert len(workers) >= 2  # the pool's workers were there, and are gone (checked above)
    assert proc.returncode == code
    assert "Traceback" not in err
    if message is None:
        assert err == ""
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(message), err
    # The grid folder holds its manifest and finished runs only: no tables, no partial run.
    assert not (out / "results.csv").exists()
    assert (out / "grid.json").is_file()
    runs = [p for p in out.glob("runs/*/*")]
    assert all((p / "summary.json").is_file() for p in runs), runs
    if code != -signal.SIGKILL:  # a SIGKILL cannot clean up: the next run into `out` does
        assert [p.name for p in tmp_path.iterdir()] == ["grid"]
        assert not [p for p in out.rglob(".*tmp-*")]


def test_after_a_kill_the_next_run_cleans_up(tmp_path: Path) -> None:
    """What a SIGKILLed run left beside --out is removed by the next run into it."""
    pid = exited_pid()
    leftover = tmp_path / f".out.tmp-{pid}-x1y2"
    (leftover / "runs").mkdir(parents=True)
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\n")
    argv = ["replay", "--cluster", "1x8:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "t.csv"]


NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,T4\nn1,64000,262144,8,V100M16\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
    f"p{i},4000,8192,1,{250 * (1 + i % 4)}\n" for i in range(30)
)


@pytest.fixture
def pack_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return tmp_path / "nodes.csv", tmp_path / "pods.csv"


def _pack(nodes: Path, pods: Path, out: Path, *extra: str) -> int:
    argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "bestfit"]
    return main([*argv, "--out", str(out), *extra])


def test_a_rerun_replaces_the_output_whole(pack_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _pack(*pack_files, out) == 0
    assert (out / "figures").is_dir()
    assert _pack(*pack_files, out, "--no-figures") == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.toml", "events.csv", "summary.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.csv", "pods.csv", "run"]


def test_a_replay_grid_rerun_has_only_its_own_run_folders(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,1,2,5\n")
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "1x8:V100", "--traces", str(trace), "--workers", "1"]
    assert main([*argv, "--policies", "fifo", "sjf", "--out", str(out)]) == 0
    assert main([*argv, "--policies", "sjf", "--out", str(out)]) == 2  # another grid
    assert main([*argv, "--policies", "sjf", "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in (out / "runs" / "t").iterdir()) == ["sjf-bestfit-s0"]
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].endswith(str(out / "runs" / "t" / "sjf-bestfit-s0"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid", "t.csv"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, MemoryError])
def test_an_interrupted_or_failed_pack_leaves_no_folder(
    stop: type[BaseException],
    pack_files: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Stopped after some files are written (the figures come after events.csv)."""
    import schedlab.report.pack_figures as pack_figures

    def stopped(*_args: object, **_kwargs: object) -> None:
        raise stop

    # pack imports its figure writer when it writes figures, so the writer is patched at home.
    monkeypatch.setattr(pack_figures, "write_pack_figures", stopped)
    out = tmp_path / "new" / "run"
    if stop is KeyboardInterrupt:
        assert _pack(*pack_files, out) == 130
        assert capsys.readouterr().err.strip() == "schedlab: interrupted"
    else:
        with pytest.raises(stop):
            _pack(*pack_files, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.csv", "pods.csv"]


def test_an_interrupted_rerun_keeps_the_earlier_output(
    pack_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import schedlab.commands.pack as pack_command

    out = tmp_path / "run"
    assert _pack(*pack_files, out, "--no-figures") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pack_command, "write_json", interrupted)
    assert _pack(*pack_files, out, "--seed", "9") == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.csv", "pods.csv", "run"]


def test_report_and_import_write_their_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report that fails while being written leaves neither the file nor a temporary one."""
    import schedlab.report.html_report as html_report

    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\n")
    run = tmp_path / "r"
    argv = ["replay", "--cluster", "1x8:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(run)]) == 0

    def broken(runs: object, title: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(html_report, "render_html", broken)
    assert main(["report", str(run), "--out", str(tmp_path / "sub" / "report.html")]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "t.csv"]
