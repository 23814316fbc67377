"""Kubernetes resource quantities (``500m``, ``64Gi``, ``1.5``, ``2e3``), parsed exactly.

The grammar is the API server's (``k8s.io/apimachinery/pkg/api/resource``): a signed decimal
number followed by a binary suffix (``Ki Mi Gi Ti Pi Ei``), a decimal suffix (``n u m k M G T P
E``) or a decimal exponent (``e3``, ``E-2``). Values are kept as fractions, never floats, so
``0.1`` CPU is exactly 100 millicores and ``1.5Gi`` exactly 1,610,612,736 bytes; a request is
rounded up to the unit the scheduler counts in, as the API server's ``MilliValue`` does, and a
capacity down, so rounding never over-commits a node.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from schedlab.errors import InputError

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)


@functools.lru_cache(maxsize=4096)
def _exact(raw: str) -> Fraction | None:
    """The value of a quantity's text, None when it is not one (cached: a queue repeats a
    handful of quantities thousands of times)."""
    m = _QUANTITY.match(raw)
    if m is None:
        return None
    value = Fraction(m.group("num"))
    if m.group("bin"):
        value *= 1024 ** _BINARY[m.group("bin")]
    elif m.group("exp"):
        value *= Fraction(10) ** int(m.group("exp")[1:])
    else:
        value *= Fraction(10) ** _DECIMAL[m.group("dec") or ""]
    return value


def parse_quantity(text: object, where: str) -> Fraction:
    """The exact value of a quantity; :class:`InputError` naming ``where`` and the text when it
    is not one (``'12Gx'``)."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise InputError(f"{where}: not a quantity (got {text!r})")
    raw = str(text).strip()
    value = _exact(raw)
    if value is None:
        raise InputError(f"{where}: malformed quantity {raw!r} (e.g. 500m, 2, 64Gi, 1.5G)")
    if value < 0:
        raise InputError(f"{where}: negative quantity {raw!r}")
    return value


def milli_up(value: Fraction) -> int:
    """Thousandths, rounded up (a request of 0.0001 CPU still takes 1 millicore)."""
    return math.ceil(value * 1000)


def mib_up(value: Fraction) -> int:
    """Bytes to MiB, rounded up (requests)."""
    return math.ceil(value / 2**20)


def mib_down(value: Fraction) -> int:
    """Bytes to MiB, rounded down (capacities)."""
    return math.floor(value / 2**20)


def whole(value: Fraction, where: str) -> int:
    """An extended resource (``nvidia.com/gpu``), which Kubernetes allows only whole."""
    if value.denominator != 1:
        raise InputError(f"{where}: must be a whole number (got {float(value):g})")
    return int(value)
