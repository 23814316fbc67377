"""Policies found by name. Engines ask the registry; they never branch on a policy's class.

Besides the built-in policies, the registry knows plugins: policy classes from other packages,
declared under the ``schedlab.policies`` entry-point group or named on the command line as
``--plugin module:Class`` (:mod:`schedlab.policies.plugins`). A plugin is looked up by its
``name`` like a built-in, and may not take a built-in's name.

Typos get a "did you mean …?" so a sweep does not die an hour in on a misspelt name; an option a
policy would ignore (``--backfill`` with a preemptive ordering, ``--placement`` with a policy that
does not place through it) is refused, so no run is labelled with something it did not do.
"""

from __future__ import annotations

import difflib
import inspect
from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping
from importlib import import_module
from typing import TypeVar

from schedlab.errors import InputError, PolicyError, SchedlabError
from schedlab.policies.api import ENGINES, REPLAY, Policy
from schedlab.policies.catalog import BUILTIN
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.base import PlacementPolicy
from schedlab.policies.plugins import plugin_classes, reference_of, reserve_names
from schedlab.policies.scheduler import SchedulingPolicy

P = TypeVar("P")


class BuiltinClasses(Mapping[str, type[P]]):
    """The built-in policies of one kind by name, read from the catalog (``catalog.toml``).

    Names, membership and order come from the catalog alone; a policy's module is imported the
    first time its class is looked up, so a run imports the policies it uses and no other (a
    fifo replay never loads the network placements, the MILP of chronus or the carbon data).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._references = {e.name: e.reference for e in BUILTIN if e.kind == kind}
        self._classes: dict[str, type[P]] = {}

    def __getitem__(self, name: str) -> type[P]:
        cls = self._classes.get(name)
        if cls is None:
            module, _, attr = self._references[name].partition(":")
            cls = getattr(import_module(module), attr)
            self._classes[name] = cls
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._references

    def __iter__(self) -> Iterator[str]:
        return iter(self._references)

    def __len__(self) -> int:
        return len(self._references)


PLACEMENT_POLICIES: BuiltinClasses[PlacementPolicy] = BuiltinClasses("placement")
ORDERINGS: BuiltinClasses[Ordering] = BuiltinClasses("ordering")
#: Policies that size jobs themselves (they are not an ordering over a shared queue scheduler).
SIZING_POLICIES: BuiltinClasses[SchedulingPolicy] = BuiltinClasses("sizing")
#: Every built-in name, of any kind: no plugin may take one.
_BUILTIN_NAMES = frozenset(e.name for e in BUILTIN)


#: The six policies of the FGD study, in the order of its figures (the pack defaults).
FGD_STUDY_POLICIES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")


#: The placement every time-based run uses unless told otherwise.
DEFAULT_PLACEMENT = "bestfit"


def placement_names() -> list[str]:
    """Every built-in placement policy."""
    return list(PLACEMENT_POLICIES)


def placement_classes() -> Mapping[str, type[PlacementPolicy]]:
    """Placement policies by name: the built-ins, then the plugins (a class is imported when it
    is looked up)."""
    return ChainMap(plugin_classes(PlacementPolicy), PLACEMENT_POLICIES)


def ordering_classes() -> Mapping[str, type[Ordering]]:
    """Orderings by name: the built-ins, then the plugins."""
    return ChainMap(plugin_classes(Ordering), ORDERINGS)


def sizing_classes() -> Mapping[str, type[SchedulingPolicy]]:
    """Whole-cluster policies by name: the built-ins, then the plugins."""
    return ChainMap(plugin_classes(SchedulingPolicy), SIZING_POLICIES)


def _find(name: str, builtin: BuiltinClasses[P], base: type) -> type[P] | None:
    """The class named ``name`` among the built-ins of one kind, else among the plugins of that
    kind (None: neither). A built-in name never looks for plugins (no plugin may take it), so a
    run of built-in policies does not pay for reading the installed entry points."""
    if name in builtin:
        return builtin[name]
    if name in _BUILTIN_NAMES:
        return None
    return plugin_classes(base).get(name)


def check_engine(name: str, policy: type[Policy] | Policy, engine: str | None) -> None:
    """Refuse a policy in an engine it does not declare."""
    if engine is not None and engine not in policy.engines:
        runs = ", ".join(e for e in ENGINES if e in policy.engines) or "none"
        raise InputError(f"'{name}' does not run in {engine} (it runs in: {runs})")


def pack_study_names() -> list[str]:
    """The placement policies a pack study compares by default."""
    return list(FGD_STUDY_POLICIES)


def _unknown(kind: str, name: str, known: Iterable[str]) -> InputError:
    known = list(known)
    close = difflib.get_close_matches(name, known, n=2)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return InputError(f"unknown {kind} {name!r}{hint} (known: {', '.join(known)})")


def make_placement(
    name: str, engine: str | None = None, params: Mapping[str, str] | None = None
) -> PlacementPolicy:
    """A fresh policy object for ``name``; unknown names raise InputError with suggestions, and a
    policy that does not run in ``engine`` (when given) is refused. ``params``: constructor
    parameters as text (``--param key=value`` the placement takes)."""
    cls = _find(name, PLACEMENT_POLICIES, PlacementPolicy)
    if cls is None:
        raise _unknown("placement policy", name, placement_classes())
    check_engine(name, cls, engine)
    return _construct(name, cls, params)  # type: ignore[return-value]


def _placement_params(
    name: str, params: Mapping[str, str] | None
) -> tuple[dict[str, str], dict[str, str]]:
    """``--param`` values split into those placement ``name``'s constructor takes and the rest
    (for the ordering or scheduling policy)."""
    if not params:
        return {}, {}
    takes = placement_parameter_names(name)
    mine = {k: v for k, v in params.items() if k in takes}
    return mine, {k: v for k, v in params.items() if k not in takes}


def _check_plans(policy: object, placement: PlacementPolicy, order: str, name: str) -> None:
    """Refuse a policy that would start jobs without the links and circuits its network
    placement reserves with them."""
    if getattr(placement, "makes_plans", False) and not getattr(policy, "carries_plans", False):
        raise InputError(
            f"placement '{name}' reserves links or circuits with each start, which '{order}' "
            "does not carry: use an ordering (fifo, sjf, srtf, tiresias, edf)"
        )


def ordering_names() -> list[str]:
    """Every built-in name ``--policy`` accepts for replay: orderings, then sizing policies."""
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


def parameter_names(name: str) -> set[str] | None:
    """The ``--param`` keys the replay policy ``name`` takes (None: no such policy; building it
    names the problem)."""
    cls = _find(name, ORDERINGS, Ordering) or _find(name, SIZING_POLICIES, SchedulingPolicy)
    if cls is None:
        return None
    signature = inspect.signature(cls.__init__)
    return {
        k
        for k, p in signature.parameters.items()
        if k not in ("self", "slot") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


def placement_parameter_names(name: str) -> set[str]:
    """The ``--param`` keys placement ``name`` takes (empty: none, or no such placement)."""
    cls = _find(name, PLACEMENT_POLICIES, PlacementPolicy)
    if cls is None:
        return set()
    return set(inspect.signature(cls.__init__).parameters) - {"self", "args", "kwargs"}


def make_ordering(name: str, params: Mapping[str, str] | None = None) -> Ordering:
    """An ordering with its constructor parameters given as text (``--param key=value``)."""
    cls = _find(name, ORDERINGS, Ordering)
    if cls is None:
        raise _unknown("ordering policy", name, [*ordering_classes(), *sizing_classes()])
    return _construct(name, cls, params)  # type: ignore[return-value]


def _construct(
    name: str, cls: type, params: Mapping[str, str] | None, slot: float | None = None
) -> object:
    signature = inspect.signature(cls.__init__)
    accepted = {
        k: p.default
        for k, p in signature.parameters.items()
        if k not in ("self", "slot") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    kwargs: dict[str, object] = {}
    for key, text in (params or {}).items():
        if key not in accepted:
            allowed = ", ".join(accepted) or "none"
            raise InputError(f"'{name}' has no parameter {key!r} (it takes: {allowed})")
        try:
            kwargs[key] = _convert(key, text, accepted[key])
        except ValueError as exc:
            raise InputError(f"bad value for '{name}' parameter {key!r}: {exc}") from None
    if slot is not None:
        if "slot" not in signature.parameters:
            raise InputError(f"'{name}' is not round-based: '--slot' does not apply")
        kwargs["slot"] = slot
    try:
        return cls(**kwargs)
    except ValueError as exc:
        raise InputError(f"'{name}': {exc}") from None
    except TypeError as exc:  # a constructor that needs what no --param gives (a plugin's)
        raise InputError(f"'{name}' cannot be built from its parameters: {exc}") from None
    except SchedlabError:
        raise
    except Exception as exc:
        raise PolicyError(
            f"'{name}' ({reference_of(cls)}): its constructor raised {type(exc).__name__}: {exc}"
        ) from exc


def make_scheduler(
    order: str,
    placement: str = DEFAULT_PLACEMENT,
    backfill: bool = False,
    params: Mapping[str, str] | None = None,
    slot: float | None = None,
    engine: str | None = REPLAY,
) -> tuple[SchedulingPolicy, PlacementPolicy]:
    """A time-based scheduler (ordering × placement) and the placement object it uses;
    ``slot`` makes it decide once per round of that many seconds.

    Refused with an InputError, before any work: a policy that does not run in ``engine``,
    ``--backfill`` where it does nothing (a whole-cluster policy, a preemptive ordering: it
    never leaves a blocked head to backfill behind), and a ``--placement`` other than the
    default for a policy that does not place through it.
    """
    if slot is not None and not slot > 0:
        raise InputError(f"'--slot' must be > 0 seconds (got {slot})")
    placement_params, params = _placement_params(placement, params)
    cls = _find(order, SIZING_POLICIES, SchedulingPolicy)
    if cls is not None:
        check_engine(order, cls, engine)
        if backfill:
            raise InputError(f"'{order}' schedules the whole cluster: backfill does not apply")
        if placement != DEFAULT_PLACEMENT and not cls.uses_placement:
            raise InputError(
                f"'{order}' places jobs itself: '--placement {placement}' does not apply"
            )
        policy = _construct(order, cls, {**(params or {})}, slot)
        placed = make_placement(placement, engine, placement_params)
        _check_plans(policy, placed, order, placement)
        return policy, placed  # type: ignore[return-value]
    ordering = make_ordering(order, params)
    check_engine(order, ordering, engine)
    if backfill and ordering.preemptive:
        raise InputError(
            f"'{order}' is preemptive: it never leaves a blocked queue head, so '--backfill' "
            "does not apply"
        )
    placement_policy = make_placement(placement, engine, placement_params)
    from schedlab.policies.ordering.queue_scheduler import QueueScheduler  # orderings only

    return QueueScheduler(ordering, placement, backfill, slot), placement_policy


reserve_names([*PLACEMENT_POLICIES, *ORDERINGS, *SIZING_POLICIES])
