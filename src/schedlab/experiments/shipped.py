"""Input files a worker received as bytes instead of reading them at their path.

A run names its inputs by the path they have on the machine that started the sweep (results and
labels keep that name); a Ray worker on another machine has the bytes, written to a local copy.
The loaders read :func:`local_path` of a name, which is the name itself unless a copy was made.
"""

from __future__ import annotations

_copies: dict[str, str] = {}


def use_copy(path: str, local: str) -> None:
    """From now on, this process reads ``path`` from ``local``."""
    _copies[path] = local


def local_path(path: str) -> str:
    return _copies.get(path, path)
