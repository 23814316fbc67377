"""Output folders and files that are complete or absent.

A command writes its whole output into a temporary folder beside ``--out`` (same parent, so the
final move is a rename on one file system) and renames it into place only when everything is
written. A failed or interrupted run removes the temporary folder (and any parent folders it had
to create), so nothing half-written is ever found under the name the user gave. Rerunning into
an existing output folder replaces it whole: figures or run folders of an earlier run cannot
survive next to the new results and be mistaken for them.

The temporary folder is created when the command starts, before any simulation, so a ``--out``
that cannot be written (a read-only or missing file system, a parent that is a file, ``/proc``)
fails in the first second with one line instead of after an hour of work.

Temporary names carry the writer's process id (``.NAME.tmp-PID-XXXX``); a later run into the same
``--out`` removes leftovers whose process is gone (a run killed with SIGKILL cannot clean up).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from schedlab.errors import InputError

#: The first line of every ``config.toml`` schedlab writes; marks a folder it may replace.
CONFIG_MARK = "# schedlab "
_TMP = ".tmp-"
_OLD = ".old-"


def _name(path: Path) -> str:
    return str(path) if str(path) else "''"


def _where(path: Path, what: str) -> str:
    return f"{what} {_name(path)!r}"


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def _check_target(path: Path, what: str) -> Path:
    """Shape checks shared by folders and files: a name, not the folder we stand in, a parent
    chain that is made of folders."""
    if not str(path) or not path.name or path.name in (".", ".."):
        raise InputError(f"{what} must name a file or folder (got {_name(path)!r})")
    absolute = Path(os.path.abspath(path))
    cwd = Path.cwd()
    if absolute == cwd or absolute in cwd.parents:
        raise InputError(
            f"{_where(path, what)} is the current folder or one of its parents; "
            "name a folder of its own"
        )
    for ancestor in absolute.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise InputError(f"{_where(path, what)}: {str(ancestor)!r} is not a folder")
            break
    return absolute


def _make_parents(parent: Path, path: Path, what: str) -> list[Path]:
    """Create the missing parent folders of ``path``; returns the ones created, deepest last."""
    missing = [p for p in (parent, *parent.parents) if not p.exists()][::-1]
    created: list[Path] = []
    try:
        for folder in missing:
            folder.mkdir()
            created.append(folder)
    except FileExistsError:
        pass  # made by someone else meanwhile: fine
    except OSError as exc:
        _remove_empty(created)
        raise InputError(f"cannot create {_where(path, what)}: {_reason(exc)}") from None
    return created


def _remove_empty(created: list[Path]) -> None:
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _is_replaceable(folder: Path) -> bool:
    """An empty folder, or one whose config.toml schedlab wrote (an earlier run's output)."""
    try:
        if not any(folder.iterdir()):
            return True
        with open(folder / "config.toml", encoding="utf-8") as fh:
            return fh.readline().startswith(CONFIG_MARK)
    except (OSError, UnicodeDecodeError):
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove_leftovers(parent: Path, name: str) -> None:
    """Temporary folders of earlier writers of ``name`` that were killed before cleaning up."""
    for mark in (_TMP, _OLD):
        for entry in parent.glob(f".{name}{mark}*"):
            pid = entry.name[len(name) + 1 + len(mark) :].partition("-")[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the output is swapped, so Ctrl-C cannot land between the two
    renames (it is delivered right after)."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask: rename unguarded
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class StagedDir:
    """A folder written under a temporary name and renamed to ``final`` by :meth:`commit`.

    Created (with its temporary folder) up front, so an unwritable ``final`` fails before any
    work; :meth:`discard` removes everything it made. Use :func:`staged_dir` for the usual
    "commit on success, discard on any exception" pattern.
    """

    def __init__(self, final: Path, what: str = "'--out'") -> None:
        self.final = Path(final)
        self.what = what
        absolute = _check_target(self.final, what)
        if absolute.is_symlink():  # write where the link points, keep the link
            absolute = absolute.resolve()
        if absolute.exists() and not absolute.is_dir():
            raise InputError(f"{_where(self.final, what)} must be a folder, but it is a file")
        if absolute.is_dir() and not _is_replaceable(absolute):
            raise InputError(
                f"{_where(self.final, what)} holds files that are not a schedlab output; "
                "remove them or name another folder"
            )
        self._parent = absolute.parent
        self._created = _make_parents(self._parent, self.final, what)
        _remove_leftovers(self._parent, absolute.name)
        try:
            self.path = Path(
                tempfile.mkdtemp(prefix=f".{absolute.name}{_TMP}{os.getpid()}-", dir=self._parent)
            )
            os.chmod(self.path, 0o777 & ~umask())  # mkdtemp makes it private (0700)
        except OSError as exc:
            _remove_empty(self._created)
            raise InputError(f"cannot write {_where(self.final, what)}: {_reason(exc)}") from None
        self._absolute = absolute
        self.done = False

    def commit(self) -> Path:
        """Move the finished folder into place, replacing an earlier output of the same name.

        Whatever stops it half-way (an OSError, a signal that slips past the blocked mask
        through another thread), the earlier output is put back under its name."""
        final = self._absolute
        old: Path | None = None
        moved = False
        with _signals_blocked():
            try:
                if final.is_dir():
                    # Reserve a unique name, then move the earlier output onto it (a folder may
                    # replace an empty folder in one rename).
                    old = Path(
                        tempfile.mkdtemp(
                            prefix=f".{final.name}{_OLD}{os.getpid()}-", dir=self._parent
                        )
                    )
                    os.replace(final, old)
                    moved = True
                os.replace(self.path, final)
            except BaseException as exc:
                if old is not None:
                    if moved:
                        os.replace(old, final)  # put the earlier output back
                    else:
                        shutil.rmtree(old, ignore_errors=True)
                self.discard()
                if isinstance(exc, OSError):
                    raise InputError(
                        f"cannot write {_where(self.final, self.what)}: {_reason(exc)}"
                    ) from None
                raise
            self.done = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.final

    def discard(self) -> None:
        """Remove the temporary folder and the parent folders made for it."""
        if self.done:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        _remove_empty(self._created)
        self.done = True


@contextlib.contextmanager
def staged_dir(final: Path, what: str = "'--out'") -> Iterator[Path]:
    """Yield a temporary folder to write into; on success it becomes ``final`` (replacing an
    earlier output there), on any exception or interrupt it is removed."""
    stage = StagedDir(final, what)
    try:
        yield stage.path
    except BaseException:
        stage.discard()
        raise
    stage.commit()


def check_out_file(path: Path, what: str = "'--out'") -> Path:
    """Check before any work that a single output file can be written at ``path``.

    Creates a probe file beside ``path`` (and any missing parent folders) and removes them at
    once: the only test that works in every case (read-only mounts, ``/proc``, quotas, root).
    The file itself is later written with :func:`schedlab.results.atomic_write`."""
    path = Path(path)
    absolute = _check_target(path, what)
    if absolute.is_dir():
        raise InputError(f"{_where(path, what)} must be a file, but it is a folder")
    created = _make_parents(absolute.parent, path, what)
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{absolute.name}.", dir=absolute.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"cannot write {_where(path, what)}: {_reason(exc)}") from None
    finally:
        _remove_empty(created)
    return path


def umask() -> int:
    """The process's file-creation mask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
