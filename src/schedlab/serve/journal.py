"""The serve loop's append-only JSONL journal: one JSON object per line, never rewritten.

Every decision, every command failure and every job the loop sees arrive or finish is one line
with at least ``time`` (Unix seconds), ``cycle``, ``job`` and ``action``. Lines are flushed as they
are written and synced to disk at the end of each cycle, so a scheduler killed with SIGKILL loses
at most the cycle it was in (and Slurm, not the journal, is the state a restart starts from). A
half-written last line from such a kill is ignored when the journal is read back.
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


class Journal:
    """Appends records to ``path`` (created with its folder if missing); ``None`` writes nothing."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("a", encoding="utf-8")
            except OSError as exc:
                raise InputError(
                    f"cannot open the journal for appending: {exc.strerror}", path=str(path)
                ) from None
        self.written = 0

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

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def read_journal(path: Path) -> Iterator[Record]:
    """Records of a journal in order; a torn last line (a kill mid-write) is skipped, a bad line
    elsewhere is an error naming its line number."""
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
