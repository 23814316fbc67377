"""Operating-system trouble with a file (missing, a folder, a FIFO, unreadable, not UTF-8, a path
through a file, a place nothing can be written) is one line naming the file and exit 2, through
every sub-command that reads or writes files, never a traceback and never a partial output."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.cli import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,T4\nn1,64000,262144,8,V100M16\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,4000,8192,1,500\np1,2000,4096,0,0\n"
TRACE = "job_id,submit_time,num_gpus,duration\na,0,1,100\nb,5,2,50\n"
JOURNAL = '{"time": 0, "cycle": 0, "job": null, "action": "serve"}\n'
NOT_UTF8 = b"job_id,submit_time\n\xff\xfe\xfa,0\n"


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    """Good inputs and every kind of bad path, by name (the names the cases below use)."""
    p = {
        "nodes": tmp_path / "nodes.csv",
        "pods": tmp_path / "pods.csv",
        "trace": tmp_path / "trace.csv",
        "journal": tmp_path / "serve.jsonl",
        "dir": tmp_path / "folder.csv",
        "fifo": tmp_path / "pipe.csv",
        "binary": tmp_path / "latin1.csv",
        "binary_toml": tmp_path / "latin1.toml",
        "file": tmp_path / "plain",
        "missing": tmp_path / "missing.csv",
        "mem": Path("/proc/self/mem"),
        "proc_out": Path("/proc/schedlab-out"),
        "tables_bad": tmp_path / "tables-bad",
        "tables_dir": tmp_path / "tables-dir",
        "run": tmp_path / "run",
        "out": tmp_path / "out",
    }
    p["nodes"].write_text(NODES)
    p["pods"].write_text(PODS)
    p["trace"].write_text(TRACE)
    p["journal"].write_text(JOURNAL)
    p["dir"].mkdir()
    os.mkfifo(p["fifo"])
    p["binary"].write_bytes(NOT_UTF8)
    p["binary_toml"].write_bytes(b'nodes = "\xff"\n')
    p["file"].write_text("x")
    p["tables_bad"].mkdir()
    (p["tables_bad"] / "V100.csv").write_bytes(b"global_batch_size,1\n32,\xff\n")
    p["tables_dir"].mkdir()
    (p["tables_dir"] / "V100.csv").mkdir()
    p["run"].mkdir()
    (p["run"] / "summary.json").write_bytes(b'{"policy": "\xff"}')
    (p["run"] / "jobs.csv").write_text("job_id\n")
    return p


PACK = ["pack", "--nodes", "{nodes}", "--pods", "{pods}", "--policy", "fgd", "--out", "{out}"]
REPLAY = ["replay", "--cluster", "1x8:V100", "--trace", "{trace}", "--policy", "fifo"]
REPLAY_OUT = [*REPLAY, "--out", "{out}"]
SWEEP_REPLAY = ["sweep", "--cluster", "1x8:V100", "--traces", "{trace}", "--workers", "1"]
SWEEP_PACK = ["sweep", "--nodes", "{nodes}", "--pods", "{pods}", "--seeds", "1", "--workers", "1"]
IMPORT = ["trace", "import-slurm", "--journal", "{journal}", "--sacct", "{file}"]

#: (case id, argv with {name} placeholders, the path the message must name)
CASES = [
    ("pack-nodes-folder", [*PACK, "--nodes", "{dir}"], "dir"),
    ("pack-nodes-missing", [*PACK, "--nodes", "{missing}"], "missing"),
    ("pack-pods-fifo", [*PACK, "--pods", "{fifo}"], "fifo"),
    ("pack-pods-through-file", [*PACK, "--pods", "{file}/pods.csv"], "file"),
    ("pack-pods-not-utf8", [*PACK, "--pods", "{binary}"], "binary"),
    ("pack-config-folder", [*PACK, "--config", "{dir}"], "dir"),
    ("pack-config-not-utf8", [*PACK, "--config", "{binary_toml}"], "binary_toml"),
    ("pack-config-missing", [*PACK, "--config", "{missing}"], "missing"),
    ("pack-out-proc", [*PACK[:-1], "{proc_out}"], "proc_out"),
    ("pack-out-through-file", [*PACK[:-1], "{file}/out"], "file"),
    ("pack-out-is-file", [*PACK[:-1], "{file}"], "file"),
    ("replay-trace-folder", [*REPLAY_OUT, "--trace", "{dir}"], "dir"),
    ("replay-trace-fifo", [*REPLAY_OUT, "--trace", "{fifo}"], "fifo"),
    ("replay-trace-not-utf8", [*REPLAY_OUT, "--trace", "{binary}"], "binary"),
    ("replay-trace-unreadable", [*REPLAY_OUT, "--trace", "{mem}"], "mem"),
    ("replay-trace-missing", [*REPLAY_OUT, "--trace", "{missing}"], "missing"),
    ("replay-trace-through-file", [*REPLAY_OUT, "--trace", "{file}/t.csv"], "file"),
    ("replay-cluster-folder", [*REPLAY_OUT, "--cluster", "{dir}"], "dir"),
    ("replay-cluster-not-utf8", [*REPLAY_OUT, "--cluster", "{binary_toml}"], "binary_toml"),
    ("replay-cluster-through-file", [*REPLAY_OUT, "--cluster", "{file}/c.toml"], "file"),
    ("replay-throughputs-file", [*REPLAY_OUT, "--throughputs", "{file}"], "file"),
    ("replay-throughputs-not-utf8", [*REPLAY_OUT, "--throughputs", "{tables_bad}"], "tables_bad"),
    ("replay-throughputs-folder", [*REPLAY_OUT, "--throughputs", "{tables_dir}"], "tables_dir"),
    ("replay-out-proc", [*REPLAY, "--out", "{proc_out}"], "proc_out"),
    ("replay-out-through-file", [*REPLAY, "--out", "{file}/a/b"], "file"),
    ("sweep-replay-trace-folder", [*SWEEP_REPLAY, "--out", "{out}", "--traces", "{dir}"], "dir"),
    ("sweep-replay-trace-fifo", [*SWEEP_REPLAY, "--out", "{out}", "--traces", "{fifo}"], "fifo"),
    ("sweep-replay-out-proc", [*SWEEP_REPLAY, "--out", "{proc_out}"], "proc_out"),
    ("sweep-pack-nodes-not-utf8", [*SWEEP_PACK, "--out", "{out}", "--nodes", "{binary}"], "binary"),
    ("sweep-pack-out-through-file", [*SWEEP_PACK, "--out", "{file}/x"], "file"),
    ("report-folder-missing", ["report", "{missing}", "--out", "{out}.html"], "missing"),
    ("report-summary-not-utf8", ["report", "{run}", "--out", "{out}.html"], "run"),
    ("report-out-proc", ["report", "{run}", "--out", "{proc_out}.html"], "proc_out"),
    ("report-out-folder", ["report", "{run}", "--out", "{dir}"], "dir"),
    ("stats-folder", ["trace", "stats", "{dir}"], "dir"),
    ("stats-fifo", ["trace", "stats", "{fifo}"], "fifo"),
    ("stats-unreadable", ["trace", "stats", "{mem}"], "mem"),
    ("stats-not-utf8", ["trace", "stats", "--json", "{binary}"], "binary"),
    ("validate-missing", ["trace", "validate", "{missing}"], "missing"),
    ("validate-through-file", ["trace", "validate", "{file}/t.csv"], "file"),
    ("import-journal-folder", [*IMPORT, "--out", "{out}.csv", "--journal", "{dir}"], "dir"),
    ("import-journal-not-utf8", [*IMPORT, "--out", "{out}.csv", "--journal", "{binary}"], "binary"),
    (
        "import-journal-missing",
        [*IMPORT, "--out", "{out}.csv", "--journal", "{missing}"],
        "missing",
    ),
    ("import-sacct-folder", [*IMPORT, "--out", "{out}.csv", "--sacct", "{dir}"], "dir"),
    ("import-sacct-not-utf8", [*IMPORT, "--out", "{out}.csv", "--sacct", "{binary}"], "binary"),
    ("import-out-proc", [*IMPORT, "--out", "{proc_out}.csv"], "proc_out"),
    ("serve-journal-folder", ["serve", "slurm", "--policy", "fifo", "--journal", "{dir}"], "dir"),
    (
        "serve-journal-through-file",
        ["serve", "slurm", "--policy", "fifo", "--journal", "{file}/j"],
        "file",
    ),
]


def _argv(template: list[str], paths: dict[str, Path]) -> list[str]:
    return [arg.format(**{k: str(v) for k, v in paths.items()}) for arg in template]


def _assert_one_line_naming(err: str, path: Path) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("schedlab: error: "), err
    assert str(path) in lines[0], err


@pytest.mark.parametrize(("template", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_os_trouble_is_one_line_naming_the_file(
    template: list[str],
    names: str,
    paths: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(_argv(template, paths)) == 2
    _assert_one_line_naming(capsys.readouterr().err, paths[names])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temporary file


def test_a_file_the_process_may_not_read(
    paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """chmod 000 does not stop root, so the refusal comes from open() itself."""
    real_open = builtins.open
    denied = str(paths["trace"])

    def guarded(file: object, *args: object, **kwargs: object) -> object:
        if str(file) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", guarded)
    for argv in (["trace", "validate", denied], _argv(REPLAY_OUT, paths)):
        assert main(argv) == 2
        err = capsys.readouterr().err
        _assert_one_line_naming(err, paths["trace"])
        assert "Permission denied" in err
    assert not paths["out"].exists()


def test_config_file_the_process_may_not_read(
    paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = paths["file"]

    def denied(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", denied)
    assert main(_argv([*PACK, "--config", str(config)], paths)) == 2
    err = capsys.readouterr().err
    _assert_one_line_naming(err, config)
    assert "Permission denied" in err


def test_any_other_os_error_is_one_line_too(
    paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last line of defence in the CLI: an OSError no command turned into its own message
    (here: the disk fills up while the events are written) still names its file."""
    import schedlab.commands.pack as pack_command

    def full(path: Path, frame: object) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pack_command, "write_csv", full)
    assert main(_argv(PACK, paths)) == 2
    err = capsys.readouterr().err
    _assert_one_line_naming(err, Path("events.csv"))
    assert "No space left on device" in err
    assert not paths["out"].exists()
    assert [p for p in paths["out"].parent.iterdir() if p.name.startswith(".out")] == []


def test_debug_shows_the_traceback(paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import schedlab.commands.pack as pack_command

    def full(path: Path, frame: object) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pack_command, "write_csv", full)
    monkeypatch.setenv("SCHEDLAB_DEBUG", "1")
    with pytest.raises(OSError, match="No space left"):
        main(_argv(PACK, paths))


def test_a_fifo_does_not_hang_the_installed_command(paths: dict[str, Path]) -> None:
    """A FIFO nobody writes to would block a reader forever; the command refuses it at once."""
    done = subprocess.run(
        [sys.executable, "-m", "schedlab", "trace", "stats", str(paths["fifo"])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    _assert_one_line_naming(done.stderr, paths["fifo"])


@pytest.mark.parametrize(
    ("command", "module", "runner"),
    [
        ("pack", "schedlab.commands.pack", "run_pack"),
        ("replay", "schedlab.commands.replay", "run_replay"),
        # sweep imports its grid runners when it runs one: patched where they live
        ("sweep", "schedlab.experiments.replay_sweep", "run_grid"),
        ("sweep-pack", "schedlab.commands.pack_grid", "run_pack_grid"),
        ("demo", "schedlab.commands.pack_grid", "run_pack_grid"),
    ],
)
def test_a_read_only_out_fails_before_any_run(
    command: str,
    module: str,
    runner: str,
    paths: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Root writes through chmod, so a read-only parent is simulated where the folder is made."""
    import importlib
    import tempfile

    def read_only(*_args: object, dir: object = None, **_kwargs: object) -> str:
        raise PermissionError(13, "Read-only file system", str(dir))

    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the run started before --out was checked")

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    monkeypatch.setattr(importlib.import_module(module), runner, never)
    out = paths["out"] = tmp_path / "ro" / "out"
    template = {
        "pack": PACK,
        "replay": REPLAY_OUT,
        "sweep": [*SWEEP_REPLAY, "--out", "{out}"],
        "sweep-pack": [*SWEEP_PACK, "--out", "{out}"],
        "demo": ["demo", "--nodes", "10", "--out", "{out}"],
    }[command]
    argv = _argv(template, paths)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    _assert_one_line_naming(err, out)
    assert "Read-only file system" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # "ro/" made for it is gone too
