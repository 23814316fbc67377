"""Policies from other packages: the ``schedlab.policies`` entry points and ``--plugin``.

A plugin is any subclass of one of the three policy bases (placement, ordering, whole-cluster
scheduling policy) with a ``name``. A package declares it under the entry-point group
``schedlab.policies`` (the entry point's name must be the class's ``name``), or a run names it as
``--plugin module:Class`` with the module importable (installed or on ``PYTHONPATH``). Either way
it is then found by name like a built-in. A name taken by a built-in or by a different plugin
class is refused, so a name always means one policy.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass

from schedlab.errors import InputError
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.base import PlacementPolicy
from schedlab.policies.scheduler import SchedulingPolicy

GROUP = "schedlab.policies"
#: The bases a plugin class may derive from, with the word used for each in messages.
KINDS: dict[type, str] = {
    PlacementPolicy: "placement policy",
    Ordering: "ordering",
    SchedulingPolicy: "whole-cluster policy",
}


@dataclass(frozen=True)
class Plugin:
    """A registered plugin: its class and where it came from (for listings and config files)."""

    name: str
    cls: type
    #: ``module:Class``, what ``--plugin`` takes and ``config.toml`` records.
    reference: str
    #: "entry point" or "--plugin".
    source: str

    @property
    def kind(self) -> str:
        return kind_of(self.cls) or "?"


_plugins: dict[str, Plugin] = {}
_reserved: set[str] = set()


def reserve_names(names: Iterable[str]) -> None:
    """Names of built-in policies, which no plugin may take."""
    _reserved.update(names)


def kind_of(cls: object) -> str | None:
    """The kind of policy ``cls`` is, or None if it is not a policy class."""
    if not isinstance(cls, type):
        return None
    for base, word in KINDS.items():
        if issubclass(cls, base):
            return word
    return None


def reference_of(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register(cls: object, reference: str, source: str) -> Plugin:
    """Make ``cls`` a policy known by its name; InputError if it is not a usable policy class."""
    if kind_of(cls) is None:
        bases = ", ".join(b.__name__ for b in KINDS)
        raise InputError(f"plugin {reference!r} is not a policy class (it must subclass {bases})")
    assert isinstance(cls, type)
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise InputError(f"plugin {reference!r} has no 'name' (a class attribute string)")
    if not isinstance(getattr(cls, "summary", None), str):
        raise InputError(f"plugin {reference!r} has no 'summary' (a class attribute string)")
    if getattr(cls, "__abstractmethods__", None):
        missing = ", ".join(sorted(cls.__abstractmethods__))  # type: ignore[attr-defined]
        raise InputError(f"plugin {reference!r} does not implement {missing}")
    if name in _reserved:
        raise InputError(f"plugin {reference!r} is named {name!r}, the name of a built-in policy")
    known = _plugins.get(name)
    if known is not None and known.cls is not cls:
        raise InputError(f"plugin {reference!r} is named {name!r}, like plugin {known.reference!r}")
    plugin = known or Plugin(name, cls, reference_of(cls), source)
    _plugins[name] = plugin
    return plugin


def load_reference(reference: str) -> Plugin:
    """Import ``module:Class`` and register it (``--plugin``); every failure is one line."""
    module_name, sep, attr = reference.strip().partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"'--plugin' must look like module:Class (got {reference!r})")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"'--plugin {reference}': cannot import {module_name!r} ({exc})") from None
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else module_name
        raise InputError(
            f"'--plugin {reference}': {module_name!r} has a syntax error at {where} ({exc.msg})"
        ) from None
    except SystemExit as exc:  # sys.exit() at import would end schedlab, silently
        raise InputError(
            f"'--plugin {reference}': importing {module_name!r} called sys.exit({exc.code!r})"
        ) from None
    except Exception as exc:  # whatever its top level raises, one line naming it
        raise InputError(
            f"'--plugin {reference}': importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"'--plugin {reference}': {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    return register(obj, reference, "--plugin")


def load_references(references: Iterable[str]) -> list[Plugin]:
    """Load every ``--plugin`` of a run (in a sweep: in every worker process)."""
    return [load_reference(r) for r in references]


def discover() -> None:
    """Register every installed ``schedlab.policies`` entry point not yet registered."""
    for ep in importlib.metadata.entry_points(group=GROUP):
        if ep.name in _plugins and _plugins[ep.name].source == "entry point":
            continue
        try:
            cls = ep.load()
        except (Exception, SystemExit) as exc:  # a broken installed package: name it, never crash
            raise InputError(
                f"entry point {ep.name!r} ({ep.value}) of group {GROUP!r} cannot be loaded: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        plugin = register(cls, ep.value, "entry point")
        if plugin.name != ep.name:
            del _plugins[plugin.name]
            raise InputError(
                f"entry point {ep.name!r} ({ep.value}) names a policy called {plugin.name!r}; "
                "the entry point's name must be the policy's name"
            )


def plugins() -> list[Plugin]:
    """Every registered plugin (installed entry points included), by name."""
    discover()
    return [_plugins[n] for n in sorted(_plugins)]


def plugin_classes(kind: type) -> dict[str, type]:
    """Registered plugins of one kind (a policy base class), by name."""
    return {p.name: p.cls for p in plugins() if issubclass(p.cls, kind)}


def forget(name: str) -> None:
    """Drop a registered plugin (tests that register throwaway classes)."""
    _plugins.pop(name, None)
