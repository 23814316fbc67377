"""Opening input files so that the operating system's complaints become one-line errors.

A missing file, a folder where a file is expected, a FIFO or device, a file the process may not
read, an I/O error, or bytes that are not UTF-8: each becomes an :class:`InputError` that names
the file, instead of a traceback from deep inside a reader.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Iterator
from pathlib import Path

from schedlab.errors import InputError


def check_input_file(path: str | Path, what: str = "file") -> Path:
    """``path`` as a Path if it names a regular file (following links); otherwise an error
    saying what is there instead. Checked first so that a FIFO never blocks a reader."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot open the {what}: {exc.strerror}", path=str(path)) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"expected a {what} but found a folder", path=str(path))
    if not stat.S_ISREG(mode):
        raise InputError(f"expected a {what} but found a FIFO, socket or device", path=str(path))
    return path


@contextlib.contextmanager
def reading(path: str | Path, what: str = "file") -> Iterator[None]:
    """Turn an OSError or a decoding error raised inside the block into an InputError naming
    ``path``."""
    try:
        yield
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=str(path)) from None
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise InputError(f"cannot read the {what}: {reason}", path=str(path)) from None


def read_text(path: str | Path, what: str = "file") -> str:
    """The whole of a UTF-8 text file, or an InputError naming it."""
    path = check_input_file(path, what)
    with reading(path, what):
        return path.read_text(encoding="utf-8")
