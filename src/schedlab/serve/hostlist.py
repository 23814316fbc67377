"""Slurm's compact node lists (``node[1-3,7]``) and GPU index lists (``IDX:0-1,4``).

Slurm prints node sets in the compressed hostlist form and GPU indices as ranges; the serve loop
needs plain lists to map them onto schedlab's node and GPU-slot indices. Parsed here once, without
calling ``scontrol show hostnames`` per job (one process per job would dominate a cycle).
"""

from __future__ import annotations

import re

from schedlab.errors import InputError
from schedlab.model.cluster import MAX_NODES

_IDX = re.compile(r"IDX:([0-9,\-]*)")


def split_outside(text: str, opening: str = "[", closing: str = "]") -> list[str]:
    """Split on commas that are not inside ``opening``…``closing`` (``node[1,3],gpu`` keeps
    ``node[1,3]`` whole; blank parts are dropped)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def expand_ranges(text: str) -> list[int]:
    """``"0-2,5"`` → ``[0, 1, 2, 5]``."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise InputError(f"bad range {part!r} in {text!r}") from None
        if len(out) + last - first + 1 > MAX_NODES:
            raise InputError(f"range {part!r} in {text!r} names more than {MAX_NODES} items")
        out.extend(range(first, last + 1))
    return out


def expand_hostlist(text: str | None) -> list[str]:
    """``"node[1-3],gpu07"`` → ``["node1", "node2", "node3", "gpu07"]`` (zero padding kept)."""
    if not text or text in ("(null)", "None"):
        return []
    names: list[str] = []
    for item in split_outside(text):
        m = re.fullmatch(r"([^\[\]]*)\[([^\]]+)\](.*)", item)
        if m is None:
            names.append(item)
            continue
        prefix, body, suffix = m.groups()
        tail = expand_hostlist(suffix) if "[" in suffix else [suffix]
        for part in body.split(","):
            lo, sep, hi = part.partition("-")
            if not (lo.isdigit() and (not sep or hi.isdigit())):
                raise InputError(f"bad node range {part!r} in node list {text!r}")
            width = len(lo) if lo.startswith("0") else 0
            first, last = int(lo), int(hi if sep else lo)
            if len(names) + (last - first + 1) * len(tail) > MAX_NODES:
                raise InputError(
                    f"node list {text!r} names more than {MAX_NODES} nodes (at {part!r})"
                )
            for k in range(first, last + 1):
                names.extend(f"{prefix}{k:0{width}d}{t}" for t in tail)
    return names


def gpu_indices(detail: str) -> list[int]:
    """GPU indices in one ``gres_detail`` entry such as ``"gpu:2(IDX:0-1)"`` (none: ``[]``)."""
    m = _IDX.search(detail)
    return expand_ranges(m.group(1)) if m else []
