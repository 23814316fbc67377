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
