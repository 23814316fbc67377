"""Topology TOML files: either a generator with parameters, or explicit hosts, switches and links.

Generator form::

    generator = "leafspine"
    [params]
    leaves = 2
    spines = 2
    hosts_per_leaf = 2
    g = 4
    m = 1
    nic_gbps = 100

Explicit form (links are bidirectional; ``count`` parallel links)::

    intra_gbps = 1000          # optional
    model = "A100"             # optional GPU model of the hosts
    [[switches]]
    name = "L0"
    tier = "leaf"              # leaf | spine | core
    ina_gbps = 0               # optional
    [[hosts]]
    leaf = "L0"
    count = 2
    gpus = 4
    nics = 1
    nic_gbps = 100
    [[links]]
    a = "L0"
    b = "S0"
    gbps = 100
    count = 1                  # optional

Either form may add HiveD's cell chain, ``[[cells]]`` tables of ``name``, ``child`` and
``count`` (see :mod:`schedlab.network.cells`).
"""

from __future__ import annotations

import difflib
import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.model.gpu_models import is_known_model
from schedlab.network.cells import read_cells
from schedlab.network.generators import load_toml_table, make_topology
from schedlab.network.topology import CORE, DEFAULT_INTRA_GBPS, LEAF, SPINE, Topology
from schedlab.network.topology_limits import (
    MAX_FABRIC_LINKS,
    MAX_GPUS_PER_HOST,
    MAX_HOSTS,
    MAX_NICS_PER_HOST,
    MAX_PARALLEL_LINKS,
    MAX_SWITCHES,
    gbps,
    unreachable_leaves,
    whole,
)

_LEVELS = {"leaf": LEAF, "spine": SPINE, "core": CORE}

#: The keys each part of a topology file may have; anything else is a typo, never ignored.
_TOP_EXPLICIT = ("intra_gbps", "model", "switches", "hosts", "links", "cells")
_TOP_GENERATOR = ("generator", "params", "cells")
_SWITCH_KEYS = ("name", "tier", "ina_gbps")
_HOST_KEYS = ("leaf", "count", "gpus", "nics", "nic_gbps")
_LINK_KEYS = ("a", "b", "gbps", "count")


def _known_keys(table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(
                f"unknown key in {where}: field {key!r}{hint} (known: {', '.join(allowed)})"
            )


def _tables(doc: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    """``[[key]]`` entries of ``doc`` (none when absent)."""
    entries = doc.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"field '{key}' must be an array of tables ([[{key}]]) in {where}")
    return entries


def read_topology_toml(path: Path) -> Topology:
    """Read a topology TOML file (see the module docstring)."""
    return topology_from_toml(load_toml_table(path), str(path), path.stem)


def topology_from_toml_text(text: str, where: str, name: str = "recorded") -> Topology:
    """A topology from TOML text kept elsewhere (a serve journal keeps a switch tree so);
    ``where`` names that place in errors. A Slurm switch tree may be a forest (Slurm never
    spans its trees), so its hosts need not all reach each other."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"bad TOML in {where}: {exc}") from None
    return topology_from_toml(doc, where, name, connected=False)


def topology_from_toml(
    doc: dict[str, Any], where: str, topology_name: str, *, connected: bool = True
) -> Topology:
    """A topology from a parsed TOML document (see the module docstring), every value checked
    (:mod:`schedlab.network.topology_limits`) before anything is built; with ``connected``,
    hosts that cannot reach each other are refused too."""
    if "generator" in doc:
        _known_keys(doc, _TOP_GENERATOR, where)
        params = doc.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"field 'params' must be a table in {where}")
        topo = make_topology(str(doc["generator"]), params, f"{where} [params]")
        object.__setattr__(topo, "source", where)
        object.__setattr__(topo, "cells", read_cells(doc, where, topo.host_gpus.tolist()))
        return topo
    _known_keys(doc, _TOP_EXPLICIT, where)
    model = doc.get("model", "GPU")
    if not isinstance(model, str) or not is_known_model(model):
        raise InputError(f"unknown GPU model in {where}: field 'model', value {model!r}")
    switches = _tables(doc, "switches", where)
    if len(switches) > MAX_SWITCHES:
        raise InputError(f"{len(switches)} [[switches]] in {where}; at most {MAX_SWITCHES}")
    names: list[str] = []
    levels: list[int] = []
    ina: list[float] = []
    index: dict[str, int] = {}
    for i, sw in enumerate(switches):
        w = f"{where} [[switches]] #{i + 1}"
        _known_keys(sw, _SWITCH_KEYS, w)
        name = sw.get("name", "")
        if not isinstance(name, str) or not name or name in index:
            raise InputError(
                f"missing or repeated switch name in {w}: field 'name', value {name!r}"
            )
        tier = str(sw.get("tier", ""))
        if tier not in _LEVELS:
            raise InputError(f"bad value in {w}: field 'tier', value {tier!r} (leaf|spine|core)")
        index[name] = len(names)
        names.append(name)
        levels.append(_LEVELS[tier])
        ina.append(gbps(sw.get("ina_gbps", 0), "ina_gbps", w, zero_ok=True))

    def switch(table: dict[str, Any], key: str, w: str) -> int:
        name = table.get(key, "")
        if not isinstance(name, str) or name not in index:
            raise InputError(f"unknown switch in {w}: field '{key}', value {name!r}")
        return index[name]

    groups: list[tuple[int, int, int, float, int]] = []  # count, gpus, nics, rate, leaf
    hosts = 0
    for i, h in enumerate(_tables(doc, "hosts", where)):
        w = f"{where} [[hosts]] #{i + 1}"
        _known_keys(h, _HOST_KEYS, w)
        s = switch(h, "leaf", w)
        if levels[s] != LEAF:
            raise InputError(f"hosts must hang off a leaf in {w}: field 'leaf', value {names[s]!r}")
        n = whole(h.get("count", 1), "count", w, 1, MAX_HOSTS)
        hosts += n
        if hosts > MAX_HOSTS:
            raise InputError(f"more than {MAX_HOSTS} hosts in {where} (at {w}: field 'count')")
        if "gpus" not in h:
            raise InputError(f"missing field 'gpus' in {w}")
        if "nic_gbps" not in h:
            raise InputError(f"missing field 'nic_gbps' in {w}")
        gpus = whole(h["gpus"], "gpus", w, 1, MAX_GPUS_PER_HOST)
        nics = whole(h.get("nics", 1), "nics", w, 1, MAX_NICS_PER_HOST)
        groups.append((n, gpus, nics, gbps(h["nic_gbps"], "nic_gbps", w), s))
    if not groups:
        raise InputError(f"no hosts in {where}: add [[hosts]] tables or a 'generator'")
    pairs: list[tuple[int, int, float, int]] = []  # a, b, gbps, count
    fabric = 0
    for i, ln in enumerate(_tables(doc, "links", where)):
        w = f"{where} [[links]] #{i + 1}"
        _known_keys(ln, _LINK_KEYS, w)
        a, b = switch(ln, "a", w), switch(ln, "b", w)
        if a == b:
            raise InputError(f"a switch linked to itself in {w}: field 'b', value {names[b]!r}")
        if "gbps" not in ln:
            raise InputError(f"missing field 'gbps' in {w}")
        rate = gbps(ln["gbps"], "gbps", w)
        count = whole(ln.get("count", 1), "count", w, 1, MAX_PARALLEL_LINKS)
        fabric += 2 * count
        if fabric > MAX_FABRIC_LINKS:
            raise InputError(
                f"more than {MAX_FABRIC_LINKS} fabric links in {where} (at {w}: field 'count')"
            )
        pairs.append((a, b, rate, count))
    intra = gbps(doc.get("intra_gbps", DEFAULT_INTRA_GBPS), "intra_gbps", where)
    leaf = np.repeat([g[4] for g in groups], [g[0] for g in groups]).astype(np.int64)
    src = np.repeat([p[0] for p in pairs], [p[3] for p in pairs]).astype(np.int64)
    dst = np.repeat([p[1] for p in pairs], [p[3] for p in pairs]).astype(np.int64)
    cap = np.repeat([p[2] for p in pairs], [p[3] for p in pairs]).astype(np.float64)
    apart = unreachable_leaves(
        len(names), np.concatenate([src, dst]), np.concatenate([dst, src]), leaf
    )
    if connected and apart is not None:
        first = next(i for i, g in enumerate(groups) if g[4] == apart[1])
        raise InputError(
            f"hosts of {where} [[hosts]] #{first + 1} (leaf {names[apart[1]]!r}) cannot reach "
            f"those of leaf {names[apart[0]]!r}: no path of [[links]] joins the two leaves "
            "(field 'leaf')"
        )
    counts = [g[0] for g in groups]
    return Topology(
        name=topology_name,
        host_gpus=np.repeat([g[1] for g in groups], counts).astype(np.int64),
        host_nics=np.repeat([g[2] for g in groups], counts).astype(np.int64),
        host_nic_gbps=np.repeat([g[3] for g in groups], counts).astype(np.float64),
        host_leaf=leaf,
        switch_names=tuple(names),
        switch_level=np.asarray(levels, dtype=np.int64),
        # Each link both ways, one after the other (a → b, b → a), as the generators lay them.
        fabric_src=np.stack([src, dst], axis=1).reshape(-1),
        fabric_dst=np.stack([dst, src], axis=1).reshape(-1),
        fabric_gbps=np.repeat(cap, 2),
        intra_gbps=intra,
        ina_gbps=np.asarray(ina, dtype=np.float64),
        gpu_model=model,
        source=where,
        cells=read_cells(doc, where, np.repeat([g[1] for g in groups], counts).tolist()),
    )


def _toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def topology_as_toml(topo: Topology) -> str:
    """``topo`` in the explicit form :func:`read_topology_toml` reads back to the same hosts,
    switches and links: how a network known only at run time (a Slurm switch tree) is kept so
    a replay can be given it. Consecutive alike hosts and parallel links are counted, not
    repeated."""
    tiers = {level: name for name, level in _LEVELS.items()}
    ina = topo.ina_gbps if topo.ina_gbps is not None else np.zeros(topo.num_switches)
    out = [
        f"# the network of {topo.name}",
        f"intra_gbps = {float(topo.intra_gbps)!r}",
        f"model = {_toml_str(topo.gpu_model)}",
    ]
    for i, name in enumerate(topo.switch_names):
        out += ["", "[[switches]]", f"name = {_toml_str(name)}"]
        out.append(f"tier = {_toml_str(tiers[int(topo.switch_level[i])])}")
        if ina[i] > 0:
            out.append(f"ina_gbps = {float(ina[i])!r}")
    hosts: list[list[object]] = []  # [leaf, gpus, nics, nic_gbps, count]
    for h in range(topo.num_hosts):
        key = [
            topo.switch_names[int(topo.host_leaf[h])],
            int(topo.host_gpus[h]),
            int(topo.host_nics[h]),
            float(topo.host_nic_gbps[h]),
        ]
        if hosts and hosts[-1][:4] == key:
            hosts[-1][4] = int(hosts[-1][4]) + 1  # type: ignore[call-overload]
        else:
            hosts.append([*key, 1])
    for leaf, gpus, nics, rate, count in hosts:
        out += ["", "[[hosts]]", f"leaf = {_toml_str(str(leaf))}", f"count = {count}"]
        out += [f"gpus = {gpus}", f"nics = {nics}", f"nic_gbps = {rate!r}"]
    src, dst, gbps = topo.fabric_src, topo.fabric_dst, topo.fabric_gbps
    if len(src) % 2 or (src[1::2] != dst[0::2]).any() or (dst[1::2] != src[0::2]).any():
        raise ValueError(f"topology {topo.name!r}: fabric links are not in both-way pairs")
    links: list[list[object]] = []  # [a, b, gbps, count]
    pairs = zip(src[0::2].tolist(), dst[0::2].tolist(), gbps[0::2].tolist(), strict=True)
    for a, b, rate in pairs:
        if links and links[-1][:3] == [a, b, rate]:
            links[-1][3] = int(links[-1][3]) + 1  # type: ignore[call-overload]
        else:
            links.append([a, b, rate, 1])
    for a, b, rate, count in links:
        out += ["", "[[links]]", f"a = {_toml_str(topo.switch_names[a])}"]  # type: ignore[index]
        out += [f"b = {_toml_str(topo.switch_names[b])}", f"gbps = {rate!r}"]  # type: ignore[index]
        if count != 1:
            out.append(f"count = {count}")
    return "\n".join(out) + "\n"
