"""Public names of a package imported on first use (PEP 562), so importing one sub-module of a
package does not import all the others its ``__init__`` re-exports.

A package lists what it offers and where each name lives; ``from package import name`` and
``package.name`` work as before, but ``import package.small_module`` pays only for that module.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from importlib import import_module


def lazy_exports(package: str, exports: Mapping[str, str]) -> None:
    """Give ``package`` (a module being initialised) the public names in ``exports``, each
    mapped to the module that defines it and imported from there on first use.

    A name may be both a public name and a sub-module (``schedlab.network.footprint``, the
    function, lives in the module of the same name). Importing the sub-module makes Python set
    the package attribute to the module; the package keeps the public name instead, as an
    ``__init__`` that imported it would have.
    """
    module = sys.modules[package]
    module.__class__ = _LazyPackage
    module.__dict__["_lazy_exports"] = dict(exports)


class _LazyPackage(types.ModuleType):
    """A package whose public names come from :func:`lazy_exports`."""

    def __getattr__(self, name: str) -> object:  # only for names not yet in the package
        source = self.__dict__.get("_lazy_exports", {}).get(name)
        if source is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(import_module(source), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: object) -> None:
        source = self.__dict__.get("_lazy_exports", {}).get(name)
        if isinstance(value, types.ModuleType) and value.__name__ == source:
            value = getattr(value, name)  # the sub-module was imported: keep its public name
        super().__setattr__(name, value)
