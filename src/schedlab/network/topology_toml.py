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

_LEVELS = {"leaf": LEAF, "spine": SPINE, "core": CORE}


def _number(table: dict[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = table.get(key, default)
    if value is None:
        raise InputError(f"missing field '{key}' in {where}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InputError(f"bad value in {where}: field '{key}', value {value!r}")
    return float(value)


def _count(table: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = _number(table, key, where, default)
    if value < 1 or value != int(value):
        raise InputError(f"bad value in {where}: field '{key}', value {table.get(key)!r}")
    return int(value)


def read_topology_toml(path: Path) -> Topology:
    """Read a topology TOML file (see the module docstring)."""
    return topology_from_toml(load_toml_table(path), str(path), path.stem)


def topology_from_toml_text(text: str, where: str, name: str = "recorded") -> Topology:
    """A topology from TOML text kept elsewhere (a serve journal keeps a switch tree so);
    ``where`` names that place in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"bad TOML in {where}: {exc}") from None
    return topology_from_toml(doc, where, name)


def topology_from_toml(doc: dict[str, Any], where: str, topology_name: str) -> Topology:
    """A topology from a parsed TOML document (see the module docstring)."""
    if "generator" in doc:
        params = doc.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"field 'params' must be a table in {where}")
        topo = make_topology(str(doc["generator"]), params, where)
        object.__setattr__(topo, "source", where)
        object.__setattr__(topo, "cells", read_cells(doc, where, topo.host_gpus.tolist()))
        return topo
    model = str(doc.get("model", "GPU"))
    if not is_known_model(model):
        raise InputError(f"unknown GPU model in {where}: field 'model', value {model!r}")
    switches = doc.get("switches", [])
    names: list[str] = []
    levels: list[int] = []
    ina: list[float] = []
    index: dict[str, int] = {}
    for i, sw in enumerate(switches):
        w = f"{where} [[switches]] #{i + 1}"
        name = str(sw.get("name", ""))
        if not name or name in index:
            raise InputError(
                f"missing or repeated switch name in {w}: field 'name', value {name!r}"
            )
        tier = str(sw.get("tier", ""))
        if tier not in _LEVELS:
            raise InputError(f"bad value in {w}: field 'tier', value {tier!r} (leaf|spine|core)")
        index[name] = len(names)
        names.append(name)
        levels.append(_LEVELS[tier])
        ina.append(_number(sw, "ina_gbps", w, 0.0))

    def switch(table: dict[str, Any], key: str, w: str) -> int:
        name = str(table.get(key, ""))
        if name not in index:
            raise InputError(f"unknown switch in {w}: field '{key}', value {name!r}")
        return index[name]

    gpus: list[int] = []
    nics: list[int] = []
    rate: list[float] = []
    leaf: list[int] = []
    for i, h in enumerate(doc.get("hosts", [])):
        w = f"{where} [[hosts]] #{i + 1}"
        s = switch(h, "leaf", w)
        if levels[s] != LEAF:
            raise InputError(f"hosts must hang off a leaf in {w}: field 'leaf', value {names[s]!r}")
        n = _count(h, "count", w, 1)
        gpus += [_count(h, "gpus", w)] * n
        nics += [_count(h, "nics", w, 1)] * n
        rate += [_number(h, "nic_gbps", w)] * n
        leaf += [s] * n
    if not gpus:
        raise InputError(f"no hosts in {where}: add [[hosts]] tables or a 'generator'")
    src: list[int] = []
    dst: list[int] = []
    cap: list[float] = []
    for i, ln in enumerate(doc.get("links", [])):
        w = f"{where} [[links]] #{i + 1}"
        a, b = switch(ln, "a", w), switch(ln, "b", w)
        gbps = _number(ln, "gbps", w)
        if gbps <= 0:
            raise InputError(f"bad value in {w}: field 'gbps', value {ln.get('gbps')!r}")
        for _ in range(_count(ln, "count", w, 1)):
            src += [a, b]
            dst += [b, a]
            cap += [gbps, gbps]
    return Topology(
        name=topology_name,
        host_gpus=np.asarray(gpus, dtype=np.int64),
        host_nics=np.asarray(nics, dtype=np.int64),
        host_nic_gbps=np.asarray(rate, dtype=np.float64),
        host_leaf=np.asarray(leaf, dtype=np.int64),
        switch_names=tuple(names),
        switch_level=np.asarray(levels, dtype=np.int64),
        fabric_src=np.asarray(src, dtype=np.int64),
        fabric_dst=np.asarray(dst, dtype=np.int64),
        fabric_gbps=np.asarray(cap, dtype=np.float64),
        intra_gbps=_number(doc, "intra_gbps", where, DEFAULT_INTRA_GBPS),
        ina_gbps=np.asarray(ina, dtype=np.float64),
        gpu_model=model,
        source=where,
        cells=read_cells(doc, where, gpus),
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
