"""Topology generators: leaf-spine, vClos, OCS, fat-tree, Titan's and Crux's fabrics.

Each generator takes keyword parameters with the defaults of the anchor instances (see
``docs/network.md``) and shrinks uplinks to the requested oversubscription (downlink / uplink
capacity of a switch). :func:`parse_topology` reads ``NAME:key=value,...`` strings and TOML files.
"""

from __future__ import annotations

import functools
import inspect
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.gpu_models import is_known_model
from schedlab.network.topology import (
    CORE,
    DEFAULT_INTRA_GBPS,
    LEAF,
    SPINE,
    OcsPorts,
    Topology,
)
from schedlab.network.topology_limits import (
    MAX_GBPS,
    MAX_GPUS_PER_HOST,
    MAX_HOSTS,
    MAX_NICS_PER_HOST,
    MAX_OCS_DELAY,
    MAX_OVERSUB,
    MAX_PARALLEL_LINKS,
    MIN_GBPS,
    MIN_OVERSUB,
    check_built,
    check_size,
    number_in,
    whole,
)


@dataclass
class _Builder:
    """Accumulates hosts, switches and bidirectional links, then freezes a Topology."""

    name: str
    g: int
    m: int
    nic_gbps: float
    intra_gbps: float = DEFAULT_INTRA_GBPS
    model: str = "GPU"

    def __post_init__(self) -> None:
        self.switch_names: list[str] = []
        self.switch_level: list[int] = []
        self.host_leaf: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.gbps: list[float] = []
        self.ina: list[float] = []

    def switch(self, name: str, level: int, ina_gbps: float = 0.0) -> int:
        self.switch_names.append(name)
        self.switch_level.append(level)
        self.ina.append(ina_gbps)
        return len(self.switch_names) - 1

    def hosts(self, leaf: int, count: int) -> None:
        self.host_leaf += [leaf] * count

    def link(self, a: int, b: int, gbps: float, count: int = 1) -> None:
        """``count`` parallel links a → b and as many b → a."""
        for _ in range(count):
            self.src += [a, b]
            self.dst += [b, a]
            self.gbps += [gbps, gbps]

    def build(self, ocs: OcsPorts | None = None) -> Topology:
        h = len(self.host_leaf)
        return Topology(
            name=self.name,
            host_gpus=np.full(h, self.g, dtype=np.int64),
            host_nics=np.full(h, self.m, dtype=np.int64),
            host_nic_gbps=np.full(h, float(self.nic_gbps)),
            host_leaf=np.asarray(self.host_leaf, dtype=np.int64),
            switch_names=tuple(self.switch_names),
            switch_level=np.asarray(self.switch_level, dtype=np.int64),
            fabric_src=np.asarray(self.src, dtype=np.int64),
            fabric_dst=np.asarray(self.dst, dtype=np.int64),
            fabric_gbps=np.asarray(self.gbps, dtype=np.float64),
            intra_gbps=self.intra_gbps,
            ina_gbps=np.asarray(self.ina, dtype=np.float64),
            gpu_model=self.model,
            ocs=ocs,
            host_names=tuple(f"h{i:05d}" for i in range(h)),
            source=self.name,
        )


def uplink_rate(down_gbps: float, n_up: int, oversub: float, cap: float | None = None) -> float:
    """Per-uplink rate so that down / (n_up · rate) is at least ``oversub`` (uplinks shrink to
    match; a ``cap`` such as an explicit uplink speed is never exceeded)."""
    rate = down_gbps / (n_up * oversub)
    return min(rate, cap) if cap is not None else rate


def leafspine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    g: int,
    m: int,
    nic_gbps: float,
    links_per_pair: int = 1,
    uplink_gbps: float | None = None,
    oversub: float = 1.0,
    intra_gbps: float = DEFAULT_INTRA_GBPS,
    ina_gbps: float = 0.0,
    model: str = "GPU",
    name: str = "leafspine",
) -> Topology:
    """Two tiers: every leaf has ``links_per_pair`` links to every spine."""
    check_size(
        leaves * hosts_per_leaf,
        leaves + spines,
        2 * leaves * spines * links_per_pair,
        {
            "hosts": "leaves × hosts_per_leaf",
            "switches": "leaves + spines",
            "fabric links": "2 × leaves × spines × links_per_pair",
        },
    )
    b = _Builder(name, g, m, nic_gbps, intra_gbps, model)
    leaf_ids = [b.switch(f"L{i}", LEAF, ina_gbps) for i in range(leaves)]
    spine_ids = [b.switch(f"S{i}", SPINE, ina_gbps) for i in range(spines)]
    down = hosts_per_leaf * m * nic_gbps
    rate = uplink_rate(down, spines * links_per_pair, oversub, uplink_gbps or nic_gbps)
    for leaf in leaf_ids:
        b.hosts(leaf, hosts_per_leaf)
        for s in spine_ids:
            b.link(leaf, s, rate, links_per_pair)
    return b.build()


def ocs(
    leaves: int = 256,
    spines: int = 128,
    hosts_per_leaf: int = 8,
    g: int = 4,
    m: int = 4,
    nic_gbps: float = 100.0,
    oversub: float = 1.0,
    delay: float = 0.01,
    intra_gbps: float = DEFAULT_INTRA_GBPS,
    model: str = "GPU",
) -> Topology:
    """Leaves and spines joined through an optical circuit switch; no circuits until
    :meth:`Topology.with_circuits` sets them. Each leaf has as many uplink ports as NICs below it
    (1:1 at ``oversub=1``); spine ports = all leaf uplink ports / spines."""
    check_size(
        leaves * hosts_per_leaf,
        leaves + spines,
        2 * leaves * hosts_per_leaf * m,
        {
            "hosts": "leaves × hosts_per_leaf",
            "switches": "leaves + spines",
            "fabric links": "2 × leaves × hosts_per_leaf × m circuits",
        },
    )
    b = _Builder("ocs", g, m, nic_gbps, intra_gbps, model)
    leaf_ids = [b.switch(f"L{i}", LEAF) for i in range(leaves)]
    for i in range(spines):
        b.switch(f"S{i}", SPINE)
    ports = hosts_per_leaf * m
    total = leaves * ports
    if total % spines:
        raise InputError(
            f"ocs: {leaves} leaves × {ports} uplink ports do not split evenly over "
            f"{spines} spines (field 'spines', value {spines})"
        )
    for leaf in leaf_ids:
        b.hosts(leaf, hosts_per_leaf)
    rate = uplink_rate(ports * nic_gbps, ports, oversub)
    return b.build(OcsPorts(ports, total // spines, rate, delay))


def three_tier(
    pods: int,
    tors_per_pod: int,
    aggs_per_pod: int,
    cores_per_agg: int,
    hosts_per_tor: int,
    g: int,
    m: int,
    nic_gbps: float,
    oversub: float = 1.0,
    intra_gbps: float = DEFAULT_INTRA_GBPS,
    ina_gbps: float = 0.0,
    model: str = "GPU",
    name: str = "three-tier",
) -> Topology:
    """Pods of ToRs fully meshed to their aggregation switches; aggregation switch i of every pod
    wired to cores ``i·cores_per_agg … (i+1)·cores_per_agg − 1`` (fat-tree wiring)."""
    terms = {
        "hosts": "pods × tors_per_pod × hosts_per_tor",
        "switches": "aggs_per_pod × cores_per_agg + pods × (tors_per_pod + aggs_per_pod)",
        "fabric links": "2 × pods × aggs_per_pod × (tors_per_pod + cores_per_agg)",
    }
    if name == "fattree":
        terms = {
            "hosts": "k × k/2 × hosts_per_edge",
            "switches": "5k²/4",
            "fabric links": "k³",
        }
    check_size(
        pods * tors_per_pod * hosts_per_tor,
        aggs_per_pod * cores_per_agg + pods * (tors_per_pod + aggs_per_pod),
        2 * pods * aggs_per_pod * (tors_per_pod + cores_per_agg),
        terms,
    )
    b = _Builder(name, g, m, nic_gbps, intra_gbps, model)
    cores = [b.switch(f"C{i}", CORE, ina_gbps) for i in range(aggs_per_pod * cores_per_agg)]
    tor_rate = uplink_rate(hosts_per_tor * m * nic_gbps, aggs_per_pod, oversub)
    agg_rate = uplink_rate(tors_per_pod * tor_rate, cores_per_agg, 1.0)
    for p in range(pods):
        tors = [b.switch(f"P{p}T{i}", LEAF, ina_gbps) for i in range(tors_per_pod)]
        aggs = [b.switch(f"P{p}A{i}", SPINE, ina_gbps) for i in range(aggs_per_pod)]
        for t in tors:
            b.hosts(t, hosts_per_tor)
            for a in aggs:
                b.link(t, a, tor_rate)
        for i, a in enumerate(aggs):
            for c in cores[i * cores_per_agg : (i + 1) * cores_per_agg]:
                b.link(a, c, agg_rate)
    return b.build()


def fattree(
    k: int,
    g: int = 8,
    m: int = 1,
    nic_gbps: float = 100.0,
    hosts_per_edge: int | None = None,
    oversub: float = 1.0,
    intra_gbps: float = DEFAULT_INTRA_GBPS,
    model: str = "GPU",
) -> Topology:
    """A k-ary fat-tree: k pods × (k/2 edge + k/2 aggregation), (k/2)² cores."""
    if k < 2 or k % 2:
        raise InputError(f"fattree needs an even k ≥ 2 (field 'k', value {k})")
    half = k // 2
    return three_tier(
        k,
        half,
        half,
        half,
        hosts_per_edge if hosts_per_edge is not None else half,
        g,
        m,
        nic_gbps,
        oversub=oversub,
        intra_gbps=intra_gbps,
        model=model,
        name="fattree",
    )


@dataclass(frozen=True)
class Generator:
    """A named generator: a base function, its anchor defaults and parameter renames (the
    names a paper uses → the base function's)."""

    base: Callable[..., Topology]
    defaults: Mapping[str, object]
    renames: Mapping[str, str]

    def parameters(self) -> list[str]:
        back = {v: k for k, v in self.renames.items()}
        names = inspect.signature(self.base).parameters
        return [back.get(p, p) for p in names if p != "name"]

    def __call__(self, **params: object) -> Topology:
        kwargs = {**self.defaults, **{self.renames.get(k, k): v for k, v in params.items()}}
        return self.base(**kwargs)


_CRUX_NAMES = {"tors": "leaves", "aggs": "spines", "hosts_per_tor": "hosts_per_leaf"}

#: Generator name → generator (``lingjun:PATH`` is read by :mod:`schedlab.network.lingjun`).
GENERATORS: dict[str, Generator] = {
    "leafspine": Generator(leafspine, {}, {}),
    # The vClos study: 128 leaves × 16 hosts × 4 GPUs, one 100 Gbps link per leaf and spine.
    "vclos": Generator(
        leafspine,
        {
            "leaves": 128,
            "spines": 64,
            "hosts_per_leaf": 16,
            "g": 4,
            "m": 4,
            "nic_gbps": 100.0,
            "name": "vclos",
        },
        {},
    ),
    "ocs": Generator(ocs, {}, {}),
    "fattree": Generator(fattree, {}, {}),
    # Titan: 8 pods × 8 ToRs × 8 hosts × 8 GPUs, one 100 Gbps NIC; agg i → cores 8i…8i+7.
    "titan": Generator(
        three_tier,
        {
            "pods": 8,
            "tors_per_pod": 8,
            "aggs_per_pod": 8,
            "cores_per_agg": 8,
            "hosts_per_tor": 8,
            "g": 8,
            "m": 1,
            "nic_gbps": 100.0,
            "name": "titan",
        },
        {},
    ),
    # Crux: 173 ToRs × 16 aggregation switches, one link per pair, 1:1 (2 hosts per ToR ours).
    "crux-clos": Generator(
        leafspine,
        {
            "leaves": 173,
            "spines": 16,
            "hosts_per_leaf": 2,
            "g": 8,
            "m": 4,
            "nic_gbps": 200.0,
            "name": "crux-clos",
        },
        _CRUX_NAMES,
    ),
}

#: Whole-number parameters and their upper bound (sizes are bounded together by check_size).
_INT_FIELDS: dict[str, int] = {
    **dict.fromkeys(
        (
            "leaves",
            "spines",
            "hosts_per_leaf",
            "k",
            "hosts_per_edge",
            "pods",
            "tors_per_pod",
            "aggs_per_pod",
            "cores_per_agg",
            "hosts_per_tor",
            "tors",
            "aggs",
        ),
        MAX_HOSTS,
    ),
    "g": MAX_GPUS_PER_HOST,
    "m": MAX_NICS_PER_HOST,
    "links_per_pair": MAX_PARALLEL_LINKS,
    "tor_uplinks": MAX_PARALLEL_LINKS,
    "psw_uplinks": MAX_PARALLEL_LINKS,
}
#: Other number parameters: (lowest, highest, 0 allowed).
_NUMBER_FIELDS: dict[str, tuple[float, float, bool]] = {
    "nic_gbps": (MIN_GBPS, MAX_GBPS, False),
    "uplink_gbps": (MIN_GBPS, MAX_GBPS, False),
    "intra_gbps": (MIN_GBPS, MAX_GBPS, False),
    "ina_gbps": (MIN_GBPS, MAX_GBPS, True),
    "oversub": (MIN_OVERSUB, MAX_OVERSUB, False),
    "delay": (0.0, MAX_OCS_DELAY, False),
}
_STR_FIELDS = {"model"}


def _convert(field: str, value: object, where: str) -> object:
    """A parameter value of the right type and range; InputError names the field and value."""
    if field in _STR_FIELDS:
        if not isinstance(value, str) or not is_known_model(value):
            raise InputError(f"unknown GPU model in {where}: field '{field}', value {value!r}")
        return value
    if field in _INT_FIELDS:
        return whole(value, field, where, 1, _INT_FIELDS[field])
    low, high, zero_ok = _NUMBER_FIELDS.get(field, (0.0, sys.float_info.max, False))  # finite
    return number_in(value, field, where, low, high, zero_ok=zero_ok)


def make_topology(name: str, params: Mapping[str, object], where: str) -> Topology:
    """Run generator ``name`` with ``params`` (strings or numbers), checking every field."""
    if name.startswith("lingjun"):
        raise InputError(f"lingjun needs a file: 'lingjun:PATH[,key=value...]' in {where}")
    gen = GENERATORS.get(name)
    if gen is None:
        raise InputError(
            f"unknown topology generator {name!r} in {where} "
            f"(known: {', '.join([*GENERATORS, 'lingjun:PATH'])})"
        )
    return _call(gen, name, params, where)


def _call(gen: Generator, name: str, params: Mapping[str, object], where: str) -> Topology:
    accepted = gen.parameters()
    kwargs: dict[str, object] = {}
    for key, value in params.items():
        if key not in accepted:
            raise InputError(
                f"{name} has no parameter {key!r} in {where} (parameters: {', '.join(accepted)})"
            )
        kwargs[key] = _convert(key, value, where)
    try:
        topo = gen(**kwargs)
    except TypeError as exc:  # a required parameter is missing
        raise InputError(f"{name}: {exc} in {where}") from None
    except ValueError as exc:
        raise InputError(f"{name}: {exc} in {where}") from None
    check_built(topo, f"{name} of {where}")
    return topo


def parse_topology(spec: str) -> Topology:
    """Whatever the user passes as a topology: a TOML file or ``NAME:key=value,...``."""
    if spec.endswith(".toml"):
        from schedlab.network.topology_toml import read_topology_toml

        return read_topology_toml(Path(spec))
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name == "lingjun":
        path, _, rest = rest.partition(",")
        if not path:
            raise InputError(f"lingjun needs a file: 'lingjun:PATH[,key=value...]', got {spec!r}")
        from schedlab.network.lingjun import read_lingjun

        reader = Generator(functools.partial(read_lingjun, Path(path)), {}, {})
        return _call(reader, "lingjun", _pairs(rest, spec), f"topology spec {spec!r}")
    return make_topology(name, _pairs(rest, spec), f"topology spec {spec!r}")


def _pairs(text: str, spec: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"expected key=value in topology spec {spec!r}, got {part!r}")
        params[key.strip()] = value.strip()
    return params


def load_toml_table(path: Path) -> dict[str, Any]:
    text = read_text(path, "topology file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"bad TOML in {path}: {exc}") from None
