"""``serve``'s metrics port out of range, on the command line or in its config file: refused
when parsed, in one line naming the option (or file and key) and the value, before the journal
is opened or Slurm is asked anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_input_helpers import refused, write


@pytest.mark.parametrize("port", ["70000", "0", "-1", "65536"])
def test_serve_slurm_refuses_a_metrics_port_out_of_range(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "serve.jsonl"
    argv = ["serve", "slurm", "--policy", "fifo", "--journal", str(journal)]
    needle = f"'--metrics-port' must be a port in 1..65535 (got {port})"
    refused([*argv, "--metrics-port", port], capsys, needle, out=journal)


def test_serve_slurm_refuses_it_in_the_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, "serve.toml", 'policy = "fifo"\nmetrics_port = 70000\n')
    journal = tmp_path / "serve.jsonl"
    argv = ["serve", "slurm", "--config", str(config), "--journal", str(journal)]
    needles = ["'metrics_port' must be a port in 1..65535 (got 70000)", str(config)]
    refused(argv, capsys, *needles, out=journal)


def test_serve_status_refuses_it_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", "status", "--state-dir", str(tmp_path), "--metrics-port", "70000"]
    refused(argv, capsys, "'--metrics-port' must be a port in 1..65535 (got 70000)")
    config = write(tmp_path, "serve.toml", "metrics_port = 0\n")
    argv = ["serve", "status", "--state-dir", str(tmp_path), "--config", str(config)]
    refused(argv, capsys, "'metrics_port' must be a port in 1..65535 (got 0)", str(config))


def test_a_cluster_that_cannot_be_read_leaves_no_journal_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slurm's commands fail (no controller): one line, exit 2, and a journal the run created
    is removed while it holds nothing; one that was there before is left as it was."""
    import os

    from schedlab.cli import main

    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("sinfo", "squeue", "scontrol", "sacctmgr"):
        tool = tools / name
        tool.write_text("#!/bin/sh\necho 'Unable to contact slurm controller' >&2\nexit 1\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    journal = tmp_path / "serve.jsonl"
    argv = ["serve", "slurm", "--policy", "fifo", "--journal", str(journal), "--quiet"]
    argv += ["--state-dir", str(tmp_path / "state")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot read the cluster" in err, err
    assert not journal.exists()
    journal.write_text("kept\n")
    assert main(argv) == 2
    assert journal.read_text() == "kept\n"
