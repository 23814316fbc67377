"""The reproductions ``schedlab reproduce`` lists and runs, declared without importing them.

Each study is one ``[[study]]`` entry of ``catalog.toml`` beside this module: its name, the
function that runs it (``module:function``, given a
:class:`~schedlab.reproduce.context.StudyContext`, returning a
:class:`~schedlab.reproduce.checks.Reproduction`), a title, the paper, the shared data it needs
and what its full and quick versions do. A new study registers by adding one entry; listing
reads the file only, so ``schedlab reproduce --list`` imports no study.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Study:
    """One reproduction as the catalog declares it."""

    name: str
    entry: str  # module:function
    title: str
    source: str
    needs: tuple[str, ...]
    full: str
    quick: str

    def missing(self, shared: Path) -> str | None:
        """The first data path the study needs that is not under ``shared`` (None: all there)."""
        for need in self.needs:
            if not (shared / need).exists():
                return str(shared / need)
        return None


def _read() -> tuple[Study, ...]:
    with open(Path(__file__).with_name("catalog.toml"), "rb") as fh:
        entries = tomllib.load(fh)["study"]
    return tuple(
        Study(
            e["name"],
            e["entry"],
            e["title"],
            e["source"],
            tuple(e.get("needs", ())),
            e.get("full", ""),
            e.get("quick", ""),
        )
        for e in entries
    )


def load(study: Study):
    """The function that runs ``study`` (its module imported now)."""
    from importlib import import_module

    module, _, function = study.entry.partition(":")
    return getattr(import_module(module), function)


#: Every study, in listing order.
STUDIES: tuple[Study, ...] = _read()
BY_NAME: dict[str, Study] = {s.name: s for s in STUDIES}
