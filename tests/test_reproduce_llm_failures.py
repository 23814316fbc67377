"""The LLM planner, failure and AcmeTrace studies as ``schedlab reproduce`` lists and runs them."""

from __future__ import annotations

from pathlib import Path

from conftest import SHARED_DIR
from schedlab.reproduce.catalog import BY_NAME, load
from schedlab.reproduce.context import StudyContext


def test_the_studies_are_in_the_catalog() -> None:
    for name in ("llm-planner", "failures", "acme"):
        assert name in BY_NAME and callable(load(BY_NAME[name]))


def test_llm_planner_study_passes_every_gated_check(tmp_path: Path) -> None:
    result = load(BY_NAME["llm-planner"])(StudyContext(SHARED_DIR, tmp_path, quick=True))
    assert len(result.checks) == 10 + 4 + 16 + 35 + 10
    assert result.failed == []
    assert (tmp_path / "llm-megatron-sc21.csv").is_file()


def test_acme_study_skips_absent_traces(tmp_path: Path) -> None:
    result = load(BY_NAME["acme"])(StudyContext(SHARED_DIR, tmp_path, quick=True))
    for check in result.checks:
        if check.verdict == "skipped":
            assert "is absent" in check.ours
