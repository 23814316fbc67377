"""Policies found by name. Engines ask the registry; they never branch on a policy's class.

Typos get a "did you mean …?" so a sweep does not die an hour in on a misspelt name.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping

from schedlab.errors import InputError
from schedlab.policies.elastic.ablations import EdfAdmissionControl, EdfElastic
from schedlab.policies.elastic.edf_greedy import ElasticEdf
from schedlab.policies.elastic.elasticflow import ElasticFlow
from schedlab.policies.fixed_size.chronus import Chronus
from schedlab.policies.fixed_size.gandiva import Gandiva
from schedlab.policies.fixed_size.themis import Themis
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.ordering.edf import EarliestDeadlineFirst
from schedlab.policies.ordering.fifo import Fifo
from schedlab.policies.ordering.queue_scheduler import QueueScheduler
from schedlab.policies.ordering.sjf import ShortestJobFirst
from schedlab.policies.ordering.srtf import ShortestRemainingTimeFirst
from schedlab.policies.ordering.tiresias import Tiresias
from schedlab.policies.placement import (
    BestFitPlacement,
    DotProductPlacement,
    FgdPlacement,
    GpuClusteringPlacement,
    GpuPackingPlacement,
    PlacementPolicy,
    RandomPlacement,
)
from schedlab.policies.placement.consolidate import ConsolidatePlacement
from schedlab.policies.scheduler import SchedulingPolicy

PLACEMENT_POLICIES: dict[str, type[PlacementPolicy]] = {
    cls.name: cls
    for cls in (
        RandomPlacement,
        DotProductPlacement,
        GpuClusteringPlacement,
        GpuPackingPlacement,
        BestFitPlacement,
        FgdPlacement,
        ConsolidatePlacement,
    )
}

ORDERINGS: dict[str, type[Ordering]] = {
    cls.name: cls
    for cls in (Fifo, ShortestJobFirst, ShortestRemainingTimeFirst, Tiresias, EarliestDeadlineFirst)
}


#: The six policies of the FGD study, in the order of its figures (the pack defaults).
FGD_STUDY_POLICIES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")


def placement_names() -> list[str]:
    """Every registered placement policy."""
    return list(PLACEMENT_POLICIES)


def pack_study_names() -> list[str]:
    """The placement policies a pack study compares by default."""
    return list(FGD_STUDY_POLICIES)


def _unknown(kind: str, name: str, known: Mapping[str, object]) -> InputError:
    close = difflib.get_close_matches(name, list(known), n=2)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return InputError(f"unknown {kind} {name!r}{hint} (known: {', '.join(known)})")


def make_placement(name: str) -> PlacementPolicy:
    """A fresh policy object for ``name``; unknown names raise InputError with suggestions."""
    if name not in PLACEMENT_POLICIES:
        raise _unknown("placement policy", name, PLACEMENT_POLICIES)
    return PLACEMENT_POLICIES[name]()


#: Policies that size jobs themselves (they are not an ordering over a shared queue scheduler).
SIZING_POLICIES: dict[str, type[SchedulingPolicy]] = {
    ElasticEdf.name: ElasticEdf,
    ElasticFlow.name: ElasticFlow,
    EdfAdmissionControl.name: EdfAdmissionControl,
    EdfElastic.name: EdfElastic,
    Gandiva.name: Gandiva,
    Themis.name: Themis,
    Chronus.name: Chronus,
}


def ordering_names() -> list[str]:
    """Every name ``--policy`` accepts for replay: orderings, then sizing policies."""
    return [*ORDERINGS, *SIZING_POLICIES]


def _convert(name: str, text: str, default: object) -> object:
    """Turn ``--param`` text into the type of the parameter's default."""
    if isinstance(default, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"'{name}' must be true or false (got {text!r})")
    if isinstance(default, tuple | list):
        return tuple(float(x) for x in text.replace("|", ",").split(",") if x.strip())
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def make_ordering(name: str, params: Mapping[str, str] | None = None) -> Ordering:
    """An ordering with its constructor parameters given as text (``--param key=value``)."""
    if name not in ORDERINGS:
        raise _unknown("ordering policy", name, {**ORDERINGS, **SIZING_POLICIES})
    return _construct(name, ORDERINGS[name], params)


def _construct(name: str, cls: type, params: Mapping[str, str] | None) -> object:
    signature = inspect.signature(cls.__init__)
    accepted = {k: p.default for k, p in signature.parameters.items() if k != "self"}
    kwargs: dict[str, object] = {}
    for key, text in (params or {}).items():
        if key not in accepted:
            allowed = ", ".join(accepted) or "none"
            raise InputError(f"'{name}' has no parameter {key!r} (it takes: {allowed})")
        try:
            kwargs[key] = _convert(key, text, accepted[key])
        except ValueError as exc:
            raise InputError(f"bad value for '{name}' parameter {key!r}: {exc}") from None
    try:
        return cls(**kwargs)
    except ValueError as exc:
        raise InputError(f"'{name}': {exc}") from None


def make_scheduler(
    order: str,
    placement: str = "bestfit",
    backfill: bool = False,
    params: Mapping[str, str] | None = None,
    slot: float | None = None,
) -> tuple[SchedulingPolicy, PlacementPolicy]:
    """A time-based scheduler (ordering × placement) and the placement object it uses;
    ``slot`` makes it decide once per round of that many seconds."""
    if slot is not None and not slot > 0:
        raise InputError(f"'--slot' must be > 0 seconds (got {slot})")
    if order in SIZING_POLICIES:
        if backfill:
            raise InputError(f"'{order}' schedules the whole cluster: backfill does not apply")
        policy = _construct(order, SIZING_POLICIES[order], {**(params or {})})
        if slot is not None:
            policy.slot = slot  # type: ignore[attr-defined]
        return policy, make_placement(placement)  # type: ignore[return-value]
    ordering = make_ordering(order, params)
    placement_policy = make_placement(placement)
    return QueueScheduler(ordering, placement, backfill, slot), placement_policy
