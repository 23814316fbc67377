"""A study's result: each published figure beside ours, with the tolerance and a verdict.

A :class:`Check` is one row of a reproduction table. Its kind says what a verdict means:

- ``within`` — ours is within an absolute (or relative) tolerance of the published value;
- ``bound`` — ours is at most a target we set (an accuracy gate, not a published figure);
- ``exact`` — ours equals the published value as both are printed;
- ``order`` — a ranking (or an inequality between two figures) holds as published;
- ``direction`` — ours changes in the published direction (same sign), size not compared;
- ``reported`` — no tolerance: the two are shown side by side (the paper's setting is not ours,
  or its unit is unstated); the verdict says how far apart they are.

A check is *gated* when the project claims it: ``schedlab reproduce --check`` and the fidelity
suite fail when a gated check fails. Direction and order checks that the papers' settings do not
let us claim are reported ungated, with their verdict all the same.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PASS, FAIL = "pass", "FAIL"
HOLDS, BROKEN = "holds", "does not hold"
REPORTED = "reported"


@dataclass(frozen=True)
class Check:
    """One published figure and ours."""

    what: str
    published: str
    ours: str
    tolerance: str
    verdict: str
    gated: bool
    kind: str
    #: The numbers behind the two texts (NaN when a side is not a number).
    published_value: float = math.nan
    ours_value: float = math.nan

    @property
    def failed(self) -> bool:
        return self.verdict in (FAIL, BROKEN)


def _verdict(ok: bool, gated: bool) -> str:
    """A gated check passes or fails; an ungated order or direction holds or does not."""
    if gated:
        return PASS if ok else FAIL
    return HOLDS if ok else BROKEN


def _text(value: float | str | None, fmt: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return fmt.format(value) if math.isfinite(value) else "—"


def _number(value: float | str | None) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


def within(
    what: str,
    ours: float,
    published: float,
    tolerance: float,
    *,
    relative: bool = False,
    fmt: str = "{:.2f}",
    unit: str = "",
    gated: bool = True,
) -> Check:
    """|ours − published| ≤ tolerance (× |published| when ``relative``)."""
    bound = tolerance * abs(published) if relative else tolerance
    ok = math.isfinite(ours) and abs(ours - published) <= bound + 1e-12
    tol = f"±{100 * tolerance:g} %" if relative else f"±{tolerance:g}{unit}"
    return Check(
        what,
        _text(published, fmt) + unit,
        _text(ours, fmt) + unit,
        tol,
        _verdict(ok, gated),
        gated,
        "within",
        _number(published),
        _number(ours),
    )


def at_most(
    what: str, ours: float, bound: float, *, fmt: str = "{:.3f}", gated: bool = True
) -> Check:
    """Ours ≤ a bound we set (an accuracy target, not a published figure)."""
    ok = math.isfinite(ours) and ours <= bound
    return Check(
        what,
        f"≤ {fmt.format(bound)} (target)",
        _text(ours, fmt),
        "bound",
        _verdict(ok, gated),
        gated,
        "bound",
        bound,
        _number(ours),
    )


def exact(
    what: str, ours: float | str, published: float | str, *, fmt: str = "{}", gated: bool = True
) -> Check:
    """Ours printed as the published figure is printed."""
    a, b = _text(ours, fmt), _text(published, fmt)
    return Check(
        what,
        b,
        a,
        "exact",
        _verdict(a == b, gated),
        gated,
        "exact",
        _number(published),
        _number(ours),
    )


def order(
    what: str,
    ours: Mapping[str, float],
    published: Mapping[str, float],
    *,
    higher_first: bool = True,
    gated: bool = False,
    tie: float = 1e-3,
) -> Check:
    """The names ranked by ours as they rank by the published values (over the names both
    have; two of ours within ``tie`` of each other, relatively, may come in either order);
    texts like ``a > b > c``."""
    names = [n for n in published if n in ours and math.isfinite(ours[n])]
    sign = -1.0 if higher_first else 1.0

    def ranked(values: Mapping[str, float]) -> list[str]:
        return sorted(names, key=lambda n: (sign * values[n], names.index(n)))

    want = ranked(published)
    ok = all(
        sign * (ours[b] - ours[a]) >= -tie * max(abs(ours[a]), abs(ours[b]))
        for a, b in itertools.pairwise(want)
    )
    mark = " > " if higher_first else " < "
    return Check(
        what,
        mark.join(want),
        mark.join(ranked(ours)),
        "same order",
        _verdict(ok, gated),
        gated,
        "order",
    )


def direction(
    what: str,
    ours: float,
    published: float | str,
    *,
    expect: float | None = None,
    fmt: str = "{:+.1f} %",
    gated: bool = False,
) -> Check:
    """Ours has the sign of ``expect`` (the published value's when it is a number)."""
    sign = expect if expect is not None else _number(published)
    ok = math.isfinite(ours) and math.isfinite(sign) and ours * sign > 0
    verdict = _verdict(ok, gated)
    return Check(
        what,
        _text(published, fmt),
        _text(ours, fmt),
        "same sign",
        verdict,
        gated,
        "direction",
        _number(published),
        _number(ours),
    )


def reported(
    what: str, ours: float | str, published: float | str | None, *, fmt: str = "{:.2f}"
) -> Check:
    """Side by side, no tolerance; the verdict gives ours / published when both are numbers."""
    p, o = _number(published), _number(ours)
    if math.isfinite(p) and math.isfinite(o) and p != 0:
        verdict = f"{REPORTED} ({o / p:.2f}×)"
    else:
        verdict = REPORTED
    return Check(
        what, _text(published, fmt), _text(ours, fmt), "—", verdict, False, "reported", p, o
    )


@dataclass
class Reproduction:
    """What one study returns: its checks, extra tables (markdown) and notes."""

    study: str
    title: str
    source: str
    checks: list[Check] = field(default_factory=list)
    #: (heading, markdown) of tables beside the checks, in order.
    tables: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    quick: bool = False
    seconds: float = math.nan

    @property
    def failed(self) -> list[Check]:
        """Gated checks that failed (none count in a quick run: it is a smoke test)."""
        if self.quick:
            return []
        return [c for c in self.checks if c.gated and c.failed]

    def markdown(self) -> str:
        """The study's table as the README shows it."""
        lines = [
            "| figure | published | schedlab | tolerance | verdict |",
            "|---|---|---|---|---|",
        ]
        for c in self.checks:
            verdict = c.verdict + (" (gate)" if c.gated and not self.quick else "")
            lines.append(f"| {c.what} | {c.published} | {c.ours} | {c.tolerance} | {verdict} |")
        out = ["\n".join(lines)]
        for heading, table in self.tables:
            out.append(f"{heading}\n\n{table.rstrip()}" if heading else table.rstrip())
        out += [note for note in self.notes]
        return "\n\n".join(out) + "\n"


def markdown_table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """A plain markdown table of ``rows`` (already formatted cells) in ``columns`` order."""
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "\n".join("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows)
    return head + body + "\n"
