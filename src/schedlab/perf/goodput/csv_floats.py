"""Decimal text to float the way pandas 1.x's default CSV reader did (its ``precise_xstrtod``).

Pollux's simulator read its tables with pandas 1.x, whose C parser did not round every decimal
to the nearest double: it accumulates up to 17 significant digits in a double, then scales by a
power of ten in one multiplication or division, which can land one unit in the last place away
(``5.4859538034431825`` reads as ``5.485953803443183``). The simulator's numbers — every job's
completion second — were computed from those values, so reproducing them job for job needs the
same values; this module parses exactly as that reader did. (Python's ``float`` and pandas 2+
round correctly.)
"""

from __future__ import annotations

import math
import re

#: 1e0 … 1e308 as double literals (what the C table holds).
_POW10 = tuple(float(f"1e{k}") for k in range(309))
MAX_DIGITS = 17
#: Plain decimals (sign, digits, at most one point, no exponent). With at most
#: :data:`EXACT_DIGITS` digits the reader's accumulated integer is exact and so is the power of
#: ten it divides by, so its one division rounds correctly — to what ``float`` gives.
_PLAIN = re.compile(r"[+-]?[0-9]*\.?[0-9]*")
EXACT_DIGITS = 15


def legacy_float(text: str) -> float:
    """``text`` parsed as pandas 1.x's precise_xstrtod; ValueError if it is not a number."""
    s = text.strip()
    if _PLAIN.fullmatch(s):
        digits = len(s) - (s[:1] in "+-") - ("." in s)
        if 0 < digits <= EXACT_DIGITS:
            return float(s)
    return _parse(s, text)


def _parse(s: str, text: str) -> float:
    """The reader's own digit-by-digit parse of the stripped ``s``."""
    i, n = 0, len(s)
    negative = False
    if i < n and s[i] in "+-":
        negative = s[i] == "-"
        i += 1
    number = 0.0
    exponent = 0
    digits = 0
    while i < n and s[i].isdigit():
        if digits < MAX_DIGITS:
            number = number * 10.0 + (ord(s[i]) - 48)
            digits += 1
        else:
            exponent += 1
        i += 1
    if i < n and s[i] == ".":
        i += 1
        decimals = 0
        while digits < MAX_DIGITS and i < n and s[i].isdigit():
            number = number * 10.0 + (ord(s[i]) - 48)
            digits += 1
            decimals += 1
            i += 1
        while i < n and s[i].isdigit():
            i += 1
        exponent -= decimals
    if digits == 0:
        raise ValueError(f"not a number: {text!r}")
    if negative:
        number = -number
    if i < n and s[i] in "eE":
        j = i + 1
        sign = 1
        if j < n and s[j] in "+-":
            sign = -1 if s[j] == "-" else 1
            j += 1
        count, value = 0, 0
        while count < MAX_DIGITS and j < n and s[j].isdigit():
            value = value * 10 + (ord(s[j]) - 48)
            count += 1
            j += 1
        if count:
            exponent += sign * value
            i = j
    if i != n:
        raise ValueError(f"not a number: {text!r}")
    if exponent > 308:
        return math.copysign(math.inf, number)
    if exponent > 0:
        return number * _POW10[exponent]
    if exponent < -308:
        if exponent < -616:
            return 0.0 * number
        return number / _POW10[-308 - exponent] / _POW10[308]
    return number / _POW10[-exponent]
