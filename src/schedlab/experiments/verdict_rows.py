"""The shape every reproduction table shares: one row per published (or analytic) figure.

Columns: ``target`` (its id, e.g. V5 or F2), ``item``, ``published``, ``ours``, ``tolerance``,
``unit`` (``relative``, or what an absolute tolerance is in) and ``verdict`` (``pass``/``fail``).
"""

from __future__ import annotations


def verdict(ours: float, published: float, tolerance: float, absolute: bool = False) -> str:
    gap = abs(ours - published) if absolute else abs(ours / published - 1.0)
    return "pass" if gap <= tolerance + 1e-12 else "fail"


def row(target: str, item: str, published: float, ours: float, tol: float, unit: str) -> dict:
    """One table row; ``unit`` ``relative`` makes ``tol`` a relative tolerance."""
    absolute = unit != "relative"
    return {
        "target": target,
        "item": item,
        "published": published,
        "ours": ours,
        "tolerance": tol,
        "unit": unit,
        "verdict": verdict(ours, published, tol, absolute),
    }


def check(target: str, item: str, claim: str, holds: bool) -> dict:
    """A row for a property rather than a number (an ordering, a bound): ``published`` says
    what is claimed, ``ours`` whether it holds."""
    return {
        "target": target,
        "item": item,
        "published": claim,
        "ours": "holds" if holds else "does not hold",
        "tolerance": "",
        "unit": "property",
        "verdict": "pass" if holds else "fail",
    }
