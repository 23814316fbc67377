"""What a topology may hold, checked where it is read: sizes, capacities, connectivity.

Every reader (the TOML file in both forms, the ``NAME:key=value`` generators, a Lingjun file)
refuses here, before any work, what would otherwise fail later: a size that runs out of memory
while the topology is built (``count = 1e8`` hosts, ``fattree:k=1000``), a capacity that makes no
sense (``nan``, ``0``, ``inf``: a job on such a link never finishes), and hosts that cannot reach
each other (two islands of leaves: the first job spanning them has no route). Each refusal is one
InputError naming the place (file, table, entry) and the field with its value.

Bounds (ours): hosts and GPUs per host as ``--cluster`` bounds nodes; switches so that the
switch × switch hop-distance matrix routing keeps stays small (4,096² entries, 128 MiB); link
rates between 1 Mbit/s and 1 Pbit/s — beyond those a value is a unit mix-up, not a network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from schedlab.errors import InputError
from schedlab.model.cluster import MAX_GPUS_PER_NODE, MAX_NODES

MAX_HOSTS = MAX_NODES
MAX_GPUS_PER_HOST = MAX_GPUS_PER_NODE
#: NICs per host (8 is common today; 64 leaves room for any design).
MAX_NICS_PER_HOST = 64
#: Switches of one topology: routing keeps a dense switch × switch hop matrix.
MAX_SWITCHES = 4096
#: Directed fabric links (each cable is two of them).
MAX_FABRIC_LINKS = 1 << 21
#: Parallel links of one pair of switches given by one entry or parameter.
MAX_PARALLEL_LINKS = 64
#: Link rates, Gbps: 1 Mbit/s … 1 Pbit/s.
MIN_GBPS, MAX_GBPS = 1e-3, 1e6
#: OCS reconfiguration delay, seconds (real switches take milliseconds to a few seconds).
MAX_OCS_DELAY = 3600.0
#: Oversubscription ratios (down / up capacity of a switch).
MIN_OVERSUB, MAX_OVERSUB = 1e-3, 1e3


def whole(value: object, field: str, where: str, low: int, high: int) -> int:
    """A whole number in ``low..high`` (a TOML integer, a whole float, or text); InputError
    naming ``where``, the field and the value otherwise."""
    number: float | int | None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if math.isfinite(value) and value == int(value) else None
    else:
        try:
            number = int(str(value).strip())
        except ValueError:
            number = None
    if number is None or not low <= number <= high:
        raise InputError(
            f"bad value in {where}: field '{field}', value {value!r} "
            f"(a whole number in {low}..{high})"
        )
    return int(number)


def number_in(
    value: object, field: str, where: str, low: float, high: float, *, zero_ok: bool = False
) -> float:
    """A finite number in ``[low, high]`` (or exactly 0 when ``zero_ok``), from a TOML number
    or text; InputError naming ``where``, the field and the value otherwise."""
    number = math.nan
    if not isinstance(value, bool):
        try:
            number = float(value) if isinstance(value, int | float) else float(str(value))
        except (TypeError, ValueError, OverflowError):
            number = math.nan
    if not (low <= number <= high or (zero_ok and number == 0)):
        allowed = f"{low:g}..{high:g}" + (" or 0" if zero_ok else "")
        raise InputError(f"bad value in {where}: field '{field}', value {value!r} ({allowed})")
    return number


def gbps(value: object, field: str, where: str, *, zero_ok: bool = False) -> float:
    """A link rate in Gbps (``zero_ok``: 0 means none, as ``ina_gbps``)."""
    return number_in(value, field, where, MIN_GBPS, MAX_GBPS, zero_ok=zero_ok)


def check_size(hosts: int, switches: int, links: int, terms: Mapping[str, str]) -> None:
    """Refuse, before anything is built, a generated topology larger than the bounds (a
    ValueError its generator's caller words with the spec or file). ``terms`` says how each
    count follows from the parameters (``{"hosts": "leaves × hosts_per_leaf"}``), so the message
    names the ones to change."""
    for name, count, limit in (
        ("hosts", hosts, MAX_HOSTS),
        ("switches", switches, MAX_SWITCHES),
        ("fabric links", links, MAX_FABRIC_LINKS),
    ):
        if count > limit:
            raise ValueError(f"{count} {name} ({terms[name]}), at most {limit}")


def check_built(topo: Any, where: str) -> None:
    """What only a built topology shows: every link rate in range (uplinks shrunk by
    ``oversub`` are derived from several fields) and every host able to reach every other
    (an optical switch's fabric is its circuits, checked once they are set)."""
    rates = topo.link_gbps
    bad = ~((rates >= MIN_GBPS) & (rates <= MAX_GBPS))
    if bad.any():
        link = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"link {topo.describe_link(link)} of {where} comes out at {float(rates[link]):g} "
            f"Gbps (links run at {MIN_GBPS:g}..{MAX_GBPS:g} Gbps)"
        )
    if topo.ocs is None:
        apart = unreachable_leaves(
            topo.num_switches, topo.fabric_src, topo.fabric_dst, topo.host_leaf
        )
        if apart is not None:
            a, b = (topo.switch_names[s] for s in apart)
            raise InputError(f"hosts under leaf {b!r} of {where} cannot reach those under {a!r}")


def unreachable_leaves(
    num_switches: int, src: np.ndarray, dst: np.ndarray, host_leaf: np.ndarray
) -> tuple[int, int] | None:
    """Two leaf switches with hosts and no fabric path between them (the first host's leaf and
    the first leaf it cannot reach), or None when every host reaches every other."""
    leaves = np.unique(host_leaf)
    if len(leaves) < 2:
        return None
    graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(num_switches, num_switches))
    _, label = connected_components(graph, directed=True, connection="strong")
    first = int(host_leaf[0])
    apart = np.flatnonzero(label[host_leaf] != label[first])
    return None if not len(apart) else (first, int(host_leaf[apart[0]]))
