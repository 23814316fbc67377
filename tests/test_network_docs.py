"""Every example of docs/network.md runs and its assertions hold."""

from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from conftest import REPO_ROOT, SHARED_DIR

DOC = REPO_ROOT / "docs" / "network.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_an_example_per_topology_kind() -> None:
    text = "\n".join(BLOCKS)
    for kind in ("leafspine", "vclos", "ocs", "fattree", "titan", "crux-clos", "lingjun", "toml"):
        assert kind in text, kind


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index: int) -> None:
    code = BLOCKS[index]
    if "../shared" in code and not (SHARED_DIR / "data" / "topologies").is_dir():
        pytest.skip("../shared/data/topologies not found: the example reads it")
    cwd = os.getcwd()
    os.chdir(REPO_ROOT)  # examples name ../shared relative to the checkout
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"{DOC}:block{index}", "exec"), {})
    finally:
        os.chdir(cwd)


COMMANDS = [
    line
    for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    for line in block.replace("\\\n", " ").splitlines()
    if line.startswith("schedlab replay")
]


def test_the_doc_has_a_replay_example_per_topology_kind() -> None:
    text = "\n".join(COMMANDS)
    for kind in ("leafspine:", "vclos:", "ocs:", "fattree:", "titan", "crux-clos", "lingjun:"):
        assert f"--topology {kind}" in text, kind
    assert ".toml" in text


@pytest.mark.parametrize("index", range(len(COMMANDS)))
def test_doc_replay_example_runs(index: int, tmp_path) -> None:
    import shlex

    from schedlab.cli import main

    argv = shlex.split(COMMANDS[index])[1:]
    if "../shared" in COMMANDS[index] and not (SHARED_DIR / "data" / "topologies").is_dir():
        pytest.skip("../shared/data/topologies not found: the example reads it")
    out = argv.index("--out") + 1
    argv[out] = str(tmp_path / "out")
    cwd = os.getcwd()
    os.chdir(REPO_ROOT)
    try:
        assert main(argv) == 0
    finally:
        os.chdir(cwd)
    assert "network" in (tmp_path / "out" / "summary.json").read_text()
