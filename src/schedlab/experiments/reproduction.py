"""The shape every reproduction study returns: one row per published figure, ours beside it.

A study is a function ``(shared: Path) -> pandas.DataFrame`` with the columns of
:data:`COLUMNS`: the study, the target's id (as the spec numbers it), what is measured, the
published value, ours, the tolerance, and the verdict. :data:`STUDIES` names each study with a
one-line summary and the function, so a command can list and run them.

Verdicts: an **exact** target matches when ours rounds to the published value at the precision
it was printed with; a **tolerance** target when ours is within the relative tolerance; a
**trend** target states a relation (an ordering, a sign) and passes when it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the tables are built only when a study reports: a run need not load pandas
    import pandas as pd

COLUMNS = ("study", "target", "metric", "published", "ours", "tolerance", "verdict")

EXACT, TOLERANCE, TREND = "exact", "tolerance", "trend"


@dataclass(frozen=True)
class Target:
    """A published figure and how closely ours must follow it."""

    id: str
    metric: str
    published: float
    kind: str = EXACT
    #: Digits after the decimal point the figure was printed with (exact targets).
    digits: int = 0
    #: Relative tolerance (tolerance targets).
    rel: float = 0.0

    def judge(self, ours: float | None) -> str:
        if ours is None:
            return "not run"
        if self.kind == EXACT:
            return (
                "match"
                if round(ours, self.digits) == round(self.published, self.digits)
                else "differs"
            )
        if self.kind == TOLERANCE:
            return (
                "within"
                if abs(ours - self.published) <= self.rel * abs(self.published)
                else "outside"
            )
        raise ValueError(f"a {self.kind} target is judged by its study")

    def tolerance_text(self) -> str:
        if self.kind == EXACT:
            return f"exact ({self.digits} dp)"
        if self.kind == TOLERANCE:
            return f"±{self.rel * 100:g} %"
        return "trend"

    def row(self, study: str, ours: float | None, verdict: str | None = None) -> dict[str, object]:
        return {
            "study": study,
            "target": self.id,
            "metric": self.metric,
            "published": self.published,
            "ours": ours,
            "tolerance": self.tolerance_text(),
            "verdict": verdict if verdict is not None else self.judge(ours),
        }


def trend_row(
    study: str, target: str, metric: str, published: str, ours: str, holds: bool
) -> dict[str, object]:
    """A trend target: what the paper shows and what we see, in words."""
    return {
        "study": study,
        "target": target,
        "metric": metric,
        "published": published,
        "ours": ours,
        "tolerance": "trend",
        "verdict": "holds" if holds else "does not hold",
    }


def table(rows: list[dict[str, object]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=list(COLUMNS))


#: Passing verdicts.
PASSING = frozenset({"match", "within", "holds"})


@dataclass(frozen=True)
class Study:
    """A reproduction a command can list and run."""

    name: str
    summary: str
    run: Callable[[Path], pd.DataFrame]
