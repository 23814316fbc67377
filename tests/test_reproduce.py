"""``schedlab reproduce``: checks and verdicts by hand, the catalog, README blocks, the command as
a user runs it, and that listing studies imports none of them."""

from __future__ import annotations

import math
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED_DIR
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.reproduce.catalog import STUDIES
from schedlab.reproduce.checks import (
    Reproduction,
    at_most,
    direction,
    exact,
    order,
    reported,
    within,
)
from schedlab.reproduce.markers import blocks, replace_block, update_file


def test_within_passes_inside_the_tolerance_and_fails_outside() -> None:
    assert within("x", 4.9, 4.77, 0.3).verdict == "pass"
    assert within("x", 5.1, 4.77, 0.3).verdict == "FAIL"
    assert within("x", 105.0, 100.0, 0.05, relative=True).verdict == "pass"
    assert within("x", 106.0, 100.0, 0.05, relative=True).tolerance == "±5 %"
    assert within("x", math.nan, 1.0, 10.0).verdict == "FAIL"
    # Ungated: it holds or it does not.
    assert within("x", 5.1, 4.77, 0.3, gated=False).verdict == "does not hold"


def test_exact_compares_as_printed() -> None:
    assert exact("x", 599.94, 599.9, fmt="{:.1f}").verdict == "pass"
    assert exact("x", 599.96, 599.9, fmt="{:.1f}").verdict == "FAIL"


def test_order_holds_with_near_ties_and_breaks_on_a_swap() -> None:
    published = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert order("x", {"a": 9, "b": 5, "c": 4.9999}, published).verdict == "holds"
    broken = order("x", {"a": 9, "b": 4, "c": 5}, published)
    assert broken.verdict == "does not hold" and broken.ours == "a > c > b"
    assert order("x", {"a": 1, "b": 2}, {"a": 1, "b": 2}, higher_first=False).ours == "a < b"
    assert order("x", {"a": 1, "b": 2}, {"a": 2, "b": 1}, gated=True).verdict == "FAIL"


def test_direction_at_most_and_reported() -> None:
    assert direction("x", -25.6, -53.0).verdict == "holds"
    assert direction("x", 27.5, -53.0).verdict == "does not hold"
    assert direction("x", 0.2, "> 0", expect=1.0, gated=True).verdict == "pass"
    assert at_most("x", 0.05, 0.10).verdict == "pass"
    assert at_most("x", 0.15, 0.10).verdict == "FAIL"
    assert reported("x", 2.0, 4.0).verdict == "reported (0.50×)"
    assert not reported("x", 2.0, 4.0).gated


def test_a_quick_run_gates_nothing_and_the_table_says_so() -> None:
    result = Reproduction("s", "t", "p", checks=[within("x", 9.0, 1.0, 0.1)])
    assert [c.what for c in result.failed] == ["x"]
    assert "FAIL (gate)" in result.markdown()
    result.quick = True
    assert result.failed == [] and "(gate)" not in result.markdown()


def test_every_catalog_entry_names_a_function_taking_a_context() -> None:
    names = [s.name for s in STUDIES]
    assert len(names) == len(set(names))
    assert {"fgd", "elasticflow", "titan", "vclos", "crux", "oracle", "sharing", "prism"} <= set(
        names
    ) and {"zeus", "pwr", "greenflow"} <= set(names)
    for study in STUDIES:
        module, _, function = study.entry.partition(":")
        assert callable(getattr(import_module(module), function)), study.entry


def test_blocks_are_replaced_whole_and_only_theirs(tmp_path: Path) -> None:
    text = "a\n<!-- reproduce:x -->\nold\n<!-- /reproduce:x -->\nb\n<!-- reproduce:y -->\nkeep\n"
    text += "<!-- /reproduce:y -->\n"
    assert blocks(text) == ["x", "y"]
    new = replace_block(text, "x", "| new |")
    assert "old" not in new and "| new |\n<!-- /reproduce:x -->" in new and "keep" in new
    with pytest.raises(InputError, match="reproduce:z"):
        replace_block(text, "z", "t")
    path = tmp_path / "README.md"
    path.write_text(text)
    assert update_file(path, {"y": "fresh", "nope": "x"}) == ["y"]
    assert "fresh" in path.read_text() and "old" in path.read_text()
    with pytest.raises(InputError, match="no reproduction block"):
        update_file(path, {"nope": "x"})


def test_the_readme_and_docs_hold_a_block_for_every_study() -> None:
    text = (REPO_ROOT / "README.md").read_text()
    text += "".join(p.read_text() for p in (REPO_ROOT / "docs").glob("*.md"))
    assert set(blocks(text)) >= {s.name for s in STUDIES}


def test_listing_imports_no_study_and_no_numpy() -> None:
    code = (
        "import sys; from schedlab.cli import main; main(['reproduce', '--list']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas') "
        "or m.startswith('schedlab.experiments')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    for study in STUDIES:
        assert study.name in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nosuch"], "unknown study 'nosuch'"),
        (["fgd", "--all"], "give study names or --all, not both"),
        (["zeus", "--quick", "--update", "README.md"], "drop '--quick'"),
        (["zeus", "--workers", "0"], "'--workers' must be ≥ 1"),
        (["zeus", "--quick", "--check"], "'--check' judges the full studies' gates"),
        (["zeus", "--shared", "/nonexistent"], "'--shared' must be the shared data folder"),
    ],
)
def test_bad_requests_are_one_line_and_write_nothing(
    tmp_path: Path, capsys, argv: list[str], message: str
) -> None:
    out = tmp_path / "out"
    assert main(["reproduce", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("schedlab: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.skipif(not (SHARED_DIR / "data" / "power").is_dir(), reason="no ../shared/data")
def test_exact_studies_end_to_end_and_the_readme_update(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- reproduce:zeus -->\n<!-- /reproduce:zeus -->\n")
    argv = ["reproduce", "zeus", "carbon", "--out", str(out), "--check", "--update", str(readme)]
    assert main([*argv, "--shared", str(SHARED_DIR)]) == 0
    for name in ("zeus", "carbon"):
        assert {p.name for p in (out / name).iterdir()} >= {"checks.csv", "table.md"}
    assert "## zeus" in (out / "summary.md").read_text()
    table = (out / "zeus" / "table.md").read_text()
    assert table in readme.read_text()
    assert "| V100: energy-optimal limit (W) | 150 | 150 | exact | pass (gate) |" in table
    stdout = capsys.readouterr().out
    assert "## carbon" in stdout


def test_a_study_whose_data_is_missing_is_skipped_naming_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["reproduce", "zeus", "--out", str(out), "--shared", str(tmp_path)]) == 0
    assert "skipped: needs" in capsys.readouterr().err
    assert "zeus: skipped (needs" in (out / "summary.md").read_text()
    # --check is a promise that the gates held: a study that could not run breaks it.
    argv = ["reproduce", "zeus", "--check", "--out", str(tmp_path / "checked")]
    assert main([*argv, "--shared", str(tmp_path)]) == 1
    assert "NOT CHECKED zeus: needs" in capsys.readouterr().err
