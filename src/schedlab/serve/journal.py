"""The serve loop's append-only JSONL journal: one JSON object per line, never rewritten.

Every decision, every command failure and every job the loop sees arrive or finish is one line
with at least ``time`` (Unix seconds), ``cycle``, ``job`` and ``action``. Lines are flushed as they
are written and synced to disk at the end of each cycle, so a scheduler killed with SIGKILL loses
at most the cycle it was in (and Slurm, not the journal, is the state a restart starts from). A
half-written last line from such a kill is ignored when the journal is read back.

Rotation (``max_bytes``): once the file reaches that size at the end of a cycle, it becomes
``PATH.1`` (``PATH.1`` becomes ``PATH.2`` and so on; the oldest beyond ``keep`` is deleted)
and a new ``PATH`` begins. Rotating only between cycles keeps each file whole lines, and
:func:`journal_files` / :func:`read_journal` read the rotated files, oldest first, before
``PATH``, so a restart and ``trace import-slurm`` see one journal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from schedlab.errors import InputError
from schedlab.input_files import read_text

Record = dict[str, Any]


def rotated(path: Path, k: int) -> Path:
    """The ``k``-th newest rotated file of the journal at ``path`` (``PATH.k``)."""
    return path.with_name(f"{path.name}.{k}")


def journal_files(path: Path) -> list[Path]:
    """The files of the journal at ``path``, oldest first: ``PATH.N`` … ``PATH.1``, ``PATH``
    (only those that exist, but ``PATH`` always, so a missing journal is reported by name)."""
    old: list[Path] = []
    k = 1
    while rotated(path, k).exists():
        old.append(rotated(path, k))
        k += 1
    return [*reversed(old), path]


class Journal:
    """Appends records to ``path`` (created with its folder if missing); ``None`` writes nothing.

    ``max_bytes``: rotate once the file is that large (checked at each :meth:`sync`, i.e. between
    cycles), keeping ``keep`` old files; ``None`` never rotates."""

    def __init__(self, path: Path | None, max_bytes: int | None = None, keep: int = 5) -> None:
        if max_bytes is not None and max_bytes <= 0:
            raise InputError(f"the journal's size limit must be > 0 bytes (got {max_bytes})")
        if keep < 1:
            raise InputError(f"the journal must keep at least 1 old file (got {keep})")
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self._file: IO[str] | None = None
        if path is not None:
            self._open(path)
        self.written = 0
        self.rotations = 0

    def _open(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot open the journal for appending: {exc.strerror}", path=str(path)
            ) from None

    def _rotate(self) -> None:
        """``PATH`` → ``PATH.1`` → … → ``PATH.keep``; the one beyond ``keep`` is deleted."""
        assert self.path is not None and self._file is not None
        self._file.close()
        self._file = None
        path = self.path
        try:
            rotated(path, self.keep).unlink(missing_ok=True)
            for k in range(self.keep - 1, 0, -1):
                if rotated(path, k).exists():
                    rotated(path, k).rename(rotated(path, k + 1))
            path.rename(rotated(path, 1))
            # Older files past ``keep`` (from a run that kept more) would be read as history.
            k = self.keep + 1
            while rotated(path, k).exists():
                rotated(path, k).unlink()
                k += 1
        except OSError as exc:
            raise InputError(f"cannot rotate the journal: {exc.strerror}", path=str(path)) from None
        self._open(path)
        self.rotations += 1

    def write(self, record: Record) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
        self._file.flush()
        self.written += 1

    def sync(self) -> None:
        """Make the lines written so far survive a crash of the machine, not only the process."""
        if self._file is not None:
            os.fsync(self._file.fileno())
            if self.max_bytes is not None and self._file.tell() >= self.max_bytes:
                self._rotate()

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def read_journal(path: Path) -> Iterator[Record]:
    """Records of a journal in order, its rotated files first (oldest first); in each file a
    torn last line (a kill mid-write) is skipped, a bad line elsewhere is an error naming its
    file and line number."""
    for part in journal_files(path):
        yield from _read_file(part)


def _read_file(path: Path) -> Iterator[Record]:
    lines = read_text(path, "journal").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                return  # torn last line
            raise InputError("not a JSON object", path=str(path), row=number) from None
        if not isinstance(record, dict) or "action" not in record:
            raise InputError("journal line has no 'action'", path=str(path), row=number)
        yield record
