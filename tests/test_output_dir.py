"""Output folders and files are complete or absent: unit tests of :mod:`schedlab.output_dir`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import exited_pid
from schedlab.errors import InputError
from schedlab.output_dir import CONFIG_MARK, StagedDir, check_out_file, staged_dir


def _siblings(folder: Path) -> list[str]:
    """Everything beside the output in its parent (temporary names start with a dot)."""
    return sorted(p.name for p in folder.iterdir())


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_written_under_a_temporary_name_then_renamed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_dir(out) as stage:
        assert stage.parent == tmp_path
        assert stage.name.startswith(".out.tmp-")
        assert not out.exists()  # nothing under the final name while the run writes
        (stage / "a.csv").write_text("x\n")
    assert _tree(out) == {"a.csv": "x\n"}
    assert _siblings(tmp_path) == ["out"]


def test_an_exception_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "er" / "out"
    with pytest.raises(RuntimeError), staged_dir(out) as stage:
        (stage / "half.csv").write_text("x")
        raise RuntimeError("boom")
    assert not (tmp_path / "deep").exists()  # the parents made for it are gone too
    assert _siblings(tmp_path) == []


def test_an_interrupt_leaves_the_earlier_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_dir(out) as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}run 1\n", "a.csv": "old"})
    with pytest.raises(KeyboardInterrupt), staged_dir(out) as stage:
        (stage / "a.csv").write_text("new")
        raise KeyboardInterrupt
    assert _tree(out) == {"config.toml": f"{CONFIG_MARK}run 1\n", "a.csv": "old"}
    assert _siblings(tmp_path) == ["out"]


def test_a_rerun_replaces_the_earlier_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_dir(out) as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}1\n", "figures/a.png": "p", "runs/x/s": "1"})
    with staged_dir(out) as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}2\n", "results.csv": "r"})
    assert _tree(out) == {"config.toml": f"{CONFIG_MARK}2\n", "results.csv": "r"}
    assert _siblings(tmp_path) == ["out"]


def test_an_empty_folder_may_be_the_output(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with staged_dir(tmp_path / "out") as stage:
        (stage / "a").write_text("1")
    assert _tree(tmp_path / "out") == {"a": "1"}


def test_a_folder_schedlab_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "thesis"
    _write(mine, {"chapter1.tex": "precious", "config.toml": "# not ours\n"})
    with pytest.raises(InputError, match="not a schedlab output"):
        StagedDir(mine)
    assert _tree(mine) == {"chapter1.tex": "precious", "config.toml": "# not ours\n"}
    assert _siblings(tmp_path) == ["thesis"]


@pytest.mark.parametrize("name", ["", ".", "..", "sub/.."])
def test_the_current_folder_or_no_name_is_refused(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="'--out'"):
        StagedDir(Path(name))
    assert _siblings(tmp_path) == ["sub"]


@pytest.mark.parametrize(
    ("make", "target", "message"),
    [
        (lambda d: (d / "f").write_text("x"), "f", "is a file"),
        (lambda d: (d / "f").write_text("x"), "f/out", "is not a folder"),
        (lambda d: (d / "f").write_text("x"), "f/a/b/out", "is not a folder"),
        (lambda d: None, "/proc/schedlab-out", "cannot write"),
        (lambda d: None, "/proc/schedlab/out", "cannot create"),
    ],
)
def test_unwritable_targets_fail_at_once(make, target: str, message: str, tmp_path: Path) -> None:
    make(tmp_path)
    path = Path(target) if target.startswith("/") else tmp_path / target
    with pytest.raises(InputError, match=message) as info:
        StagedDir(path)
    assert str(path) in str(info.value)  # the message names what the user gave
    assert _siblings(tmp_path) == (["f"] if (tmp_path / "f").exists() else [])


def test_leftovers_of_a_killed_writer_are_removed(tmp_path: Path) -> None:
    # A process that has exited: its pid is free (unless reused, then the leftover just stays).
    pid = exited_pid()
    (tmp_path / f".out.tmp-{pid}-abc").mkdir()
    (tmp_path / f".out.tmp-{pid}-abc" / "half.csv").write_text("x")
    (tmp_path / f".out.old-{pid}-def").mkdir()
    alive = tmp_path / f".out.tmp-{os.getppid()}-ghi"  # a live writer: left alone
    alive.mkdir()
    with staged_dir(tmp_path / "out") as stage:
        (stage / "a").write_text("1")
    assert _siblings(tmp_path) == sorted(["out", alive.name])


@pytest.mark.parametrize(
    ("stop", "expect"),
    [
        (OSError(28, "No space left on device"), InputError),
        (KeyboardInterrupt(), KeyboardInterrupt),
    ],
)
def test_commit_stopped_between_the_renames_restores_the_earlier_output(
    stop: BaseException,
    expect: type[BaseException],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "out"
    with staged_dir(out) as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}1\n"})
    stage = StagedDir(out)
    (stage.path / "new").write_text("n")
    real = os.replace
    calls = []

    def failing_second(src: object, dst: object) -> None:
        calls.append(src)
        if len(calls) == 2:  # the earlier output is moved aside, the new one not yet in
            raise stop
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", failing_second)
    with pytest.raises(expect):
        stage.commit()
    monkeypatch.setattr(os, "replace", real)
    assert _tree(out) == {"config.toml": f"{CONFIG_MARK}1\n"}
    assert _siblings(tmp_path) == ["out"]


@settings(max_examples=25, deadline=None)
@given(
    first=st.dictionaries(
        st.sampled_from(["a", "b", "d/c", "d/e", "f/g/h"]), st.text("xyz 1", max_size=5)
    ),
    second=st.dictionaries(st.sampled_from(["a", "b", "d/c", "x/y"]), st.text("xyz 1", max_size=5)),
    fail=st.booleans(),
)
def test_the_output_is_always_exactly_one_runs_files(
    tmp_path_factory: pytest.TempPathFactory,
    first: dict[str, str],
    second: dict[str, str],
    fail: bool,
) -> None:
    """Whatever two runs write, and whether the second fails, the folder holds exactly the files
    of one whole run (the second if it succeeded) and nothing else is left beside it."""
    root = tmp_path_factory.mktemp("prop")
    out = root / "out"
    one = {"config.toml": f"{CONFIG_MARK}1\n", **first}
    two = {"config.toml": f"{CONFIG_MARK}2\n", **second}
    with staged_dir(out) as stage:
        _write(stage, one)
    try:
        with staged_dir(out) as stage:
            _write(stage, two)
            if fail:
                raise ValueError
    except ValueError:
        pass
    assert _tree(out) == (one if fail else two)
    assert _siblings(root) == ["out"]


def test_a_link_to_a_folder_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    with staged_dir(real) as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}1\n", "old": "o"})
    (tmp_path / "link").symlink_to(real)
    with staged_dir(tmp_path / "link") as stage:
        _write(stage, {"config.toml": f"{CONFIG_MARK}2\n"})
    assert (tmp_path / "link").is_symlink()
    assert _tree(real) == {"config.toml": f"{CONFIG_MARK}2\n"}
    assert _siblings(tmp_path) == ["link", "real"]


def test_check_out_file(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "report.html"
    assert check_out_file(target) == target
    assert _siblings(tmp_path) == []  # the probe and the folders made for it are gone
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    for path, message in [
        (tmp_path / "d", "is a folder"),
        (tmp_path / "f" / "r.html", "is not a folder"),
        (Path("/proc/schedlab.html"), "cannot write"),
    ]:
        with pytest.raises(InputError, match=message):
            check_out_file(path)
    assert _siblings(tmp_path) == ["d", "f"]
