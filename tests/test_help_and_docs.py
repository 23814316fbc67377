"""What a newcomer reads first: help texts list only what a command accepts, errors point to the
command that can use the input, documented snippets run as copied, ``policies --json``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED_DIR
from schedlab.cli import main
from schedlab.policies.catalog import BUILTIN, KINDS

DLRM = SHARED_DIR / "traces" / "alibaba-gpu-2025" / "disaggregated_DLRM_trace.csv"


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The help text on one line (a wide terminal, so no word is hyphenated across lines)."""
    with pytest.MonkeyPatch.context() as mp, pytest.raises(SystemExit):
        mp.setenv("COLUMNS", "2000")
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # unwrapped


def test_serve_help_lists_only_what_serve_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "serve", "slurm")
    policy = re.search(r"--policy POLICY (.*?) --placement", text).group(1)  # type: ignore[union-attr]
    placement = re.search(r"placement \(default bestfit\): (.*?) --backfill", text).group(1)  # type: ignore[union-attr]
    for entry in BUILTIN:
        shown = entry.name in re.findall(
            r"[\w+-]+", policy if entry.kind != "placement" else placement
        )
        assert shown == ("serve" in entry.engines), entry.name


def test_replay_help_names_whole_cluster_policies_as_such(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys, "replay")
    assert "an ordering (fifo, sjf, srtf, tiresias, edf;" in text
    assert "or a whole-cluster policy (edf-greedy, elasticflow," in text


def test_policies_json_is_the_catalogue_with_parameters() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab", "policies", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    entries = json.loads(proc.stdout)
    kinds = [e["kind"] for e in entries]
    assert kinds == sorted(kinds, key=KINDS.index)  # by kind, as the tables list them
    assert {(e["kind"], e["name"]) for e in entries} == {(b.kind, b.name) for b in BUILTIN}
    for entry in BUILTIN:  # the declared catalogue and the classes agree
        e = next(x for x in entries if x["name"] == entry.name)
        assert tuple(e["engines"]) == entry.engines and e["stateful"] == entry.stateful
    by_name = {e["name"]: e for e in entries}
    tiresias = by_name["tiresias"]
    assert tiresias["engines"] == ["replay", "serve"] and tiresias["preemptive"] is True
    assert tiresias["parameters"] == {"thresholds": [3600.0], "starvation": 10.0}
    assert by_name["gandiva"]["uses_placement"] is False
    assert by_name["fgd"]["from"] == "schedlab"


@pytest.mark.shared
@pytest.mark.skipif(not DLRM.is_file(), reason=f"{DLRM} not found beside the checkout")
def test_replay_of_the_instance_trace_says_what_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", "--cluster", "4x8:A100", "--trace", str(DLRM), "--policy", "fifo"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "format alibaba-2025" in err and "'schedlab trace stats' reads it" in err
    assert main(["trace", "stats", str(DLRM)]) == 0


def test_power_of_an_unnamed_gpu_model_says_how_to_name_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,60\n")
    topology = "leafspine:leaves=1,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"
    argv = ["replay", "--topology", topology, "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--power-model", "binary", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "have no model name" in err and "model=A100" in err
    assert main([*argv, "--power-model", "binary", "--out", str(tmp_path / "ok")]) == 2
    capsys.readouterr()
    named = topology + ",model=A100"
    argv = ["replay", "--topology", named, "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--power-model", "binary", "--out", str(tmp_path / "ok")]) == 0


def test_report_on_a_sweep_folder_makes_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    rows = ["job_id,submit_time,num_gpus,duration"]
    rows += [f"j{i},{30 * i},{1 + i % 4},{600 + 97 * (i % 7)}" for i in range(12)]
    trace.write_text("\n".join(rows) + "\n")
    grid = tmp_path / "grid"
    argv = ["sweep", "--cluster", "2x8:V100", "--traces", str(trace), "--policies", "fifo", "sjf"]
    assert main([*argv, "--seeds", "0-1", "--workers", "1", "--out", str(grid)]) == 0
    capsys.readouterr()
    page = tmp_path / "again.html"
    assert main(["report", str(grid), "--out", str(page)]) == 0
    assert page.read_text().count("<svg") == (grid / "report-t.html").read_text().count("<svg")
    assert (
        main(
            ["report", str(grid), str(grid / "runs" / "t" / "fifo-bestfit-s0"), "--out", str(page)]
        )
        == 2
    )
    assert "a sweep folder is reported on its own" in capsys.readouterr().err


def test_plugin_doc_snippets_run_as_copied() -> None:
    """Every python block of docs/plugins.md, in order in one namespace (as a user pastes them
    into one file), with the example package importable; then the conformance test it shows."""
    text = (REPO_ROOT / "docs" / "plugins.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 3
    sys.path.insert(0, str(REPO_ROOT / "examples" / "plugin-package" / "src"))
    try:
        namespace: dict[str, object] = {}
        for block in blocks:
            exec(compile(block, "docs/plugins.md", "exec"), namespace)
        assert {"Spread", "FewestGpusFirst", "test_spread_meets_the_contract"} <= set(namespace)
        namespace["test_spread_meets_the_contract"]()  # type: ignore[operator]
    finally:
        sys.path.remove(str(REPO_ROOT / "examples" / "plugin-package" / "src"))
