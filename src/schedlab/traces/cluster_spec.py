"""Cluster specs for replay: a node-list CSV (openb's, or the Alibaba spot-GPU v2026
``node_info_df.csv``), a TOML cluster file, or a compact string.

Compact: ``NODESxGPUS[:MODEL]``, several joined by ``+`` — ``250x8:V100``, ``16x8:A100+8x4:T4``.
Nodes of a compact spec get 8 CPU cores and 64 GiB of memory per GPU (enough that traces without
CPU or memory requests are never limited by them) and racks of :data:`COMPACT_RACK_SIZE` nodes.

TOML::

    nodes_per_rack = 4            # optional; default: every node its own rack
    [[nodes]]
    count = 16
    gpus = 8
    model = "A100"
    cpu_cores = 96                # optional (default 8 per GPU)
    memory_gib = 768              # optional (default 64 per GPU)
    name_prefix = "a100-"         # optional
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.cluster import MAX_GPUS_PER_NODE, MAX_NODES, Cluster
from schedlab.model.gpu_models import GPU_MODELS, is_known_model, model_index
from schedlab.traces.alibaba import read_node_list

COMPACT_RACK_SIZE = 8
CPU_CORES_PER_GPU = 8
MEMORY_GIB_PER_GPU = 64
DEFAULT_MODEL = "GPU"
#: Per node; beyond these a value is a unit mix-up (milli-cores, MiB) and would overflow int64.
MAX_CPU_CORES = 1_000_000
MAX_MEMORY_GIB = 1_000_000_000

_PART = re.compile(r"(\d+)x(\d+)(?::([A-Za-z0-9_.\-]+))?")


def parse_cluster_spec(spec: str) -> Cluster:
    """Whatever the user passed to ``--cluster``."""
    path = Path(spec)
    if spec.endswith(".csv"):
        from schedlab.traces.alibaba_spot import is_spot_node_list, read_spot_node_list

        if is_spot_node_list(path):  # the Alibaba spot-GPU trace v2026
            return read_spot_node_list(path)
        return read_node_list(path)
    if spec.endswith(".toml"):
        return read_cluster_toml(path)
    return parse_compact(spec)


def _groups_to_cluster(
    groups: list[dict[str, object]], rack_size: int | None, source: str
) -> Cluster:
    names, cpu, mem, gpus, model = [], [], [], [], []
    used: dict[str, int] = {}
    for g in groups:
        count, per_node = int(g["count"]), int(g["gpus"])  # type: ignore[call-overload]
        prefix = str(g["prefix"])
        start = used.get(prefix, 0)
        used[prefix] = start + count
        names += [f"{prefix}{start + i:05d}" for i in range(count)]
        cpu += [int(g["cpu_milli"])] * count  # type: ignore[call-overload]
        mem += [int(g["memory_mib"])] * count  # type: ignore[call-overload]
        gpus += [per_node] * count
        model += [int(g["model"]) if per_node > 0 else -1] * count  # type: ignore[call-overload]
    n = len(names)
    rack = np.arange(n) // rack_size if rack_size else np.arange(n)
    return Cluster(
        names=np.asarray(names, dtype=object),
        cpu_milli=np.asarray(cpu, dtype=np.int64),
        memory_mib=np.asarray(mem, dtype=np.int64),
        num_gpus=np.asarray(gpus, dtype=np.int64),
        model=np.asarray(model, dtype=np.int64),
        source=source,
        rack=rack.astype(np.int64),
    )


def _model(name: str, where: str) -> int:
    if not is_known_model(name):
        raise InputError(f"unknown GPU model {name!r} in {where} (known: {', '.join(GPU_MODELS)})")
    return model_index(name)


def parse_compact(spec: str) -> Cluster:
    groups = []
    for part in spec.split("+"):
        m = _PART.fullmatch(part.strip())
        if m is None:
            raise InputError(
                f"'--cluster' must be a .csv node list, a .toml file or NODESxGPUS[:MODEL] "
                f"joined by '+' (got {spec!r})"
            )
        count, per_node = int(m[1]), int(m[2])
        if not 1 <= count <= MAX_NODES or not 1 <= per_node <= MAX_GPUS_PER_NODE:
            raise InputError(
                f"'--cluster' part {part!r} needs 1..{MAX_NODES} nodes of "
                f"1..{MAX_GPUS_PER_NODE} GPUs"
            )
        name = m[3] or DEFAULT_MODEL
        groups.append(
            {
                "count": count,
                "gpus": per_node,
                "model": _model(name, "'--cluster'"),
                "cpu_milli": per_node * CPU_CORES_PER_GPU * 1000,
                "memory_mib": per_node * MEMORY_GIB_PER_GPU * 1024,
                "prefix": f"{name.lower()}-",
            }
        )
    return _groups_to_cluster(groups, COMPACT_RACK_SIZE, spec)


def read_cluster_toml(path: Path) -> Cluster:
    try:
        data = tomllib.loads(read_text(path, "cluster file"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from None
    allowed_top = {"nodes", "nodes_per_rack"}
    for key in data:
        if key not in allowed_top:
            raise InputError(
                f"unknown key {key!r} (allowed: {', '.join(sorted(allowed_top))})", path=str(path)
            )
    entries = data.get("nodes")
    if not isinstance(entries, list) or not entries:
        raise InputError("needs at least one [[nodes]] table", path=str(path))
    rack_size = data.get("nodes_per_rack")
    if rack_size is not None and (
        not isinstance(rack_size, int) or isinstance(rack_size, bool) or rack_size < 1
    ):
        raise InputError(
            f"'nodes_per_rack' must be a whole number ≥ 1 (got {rack_size!r})", path=str(path)
        )
    allowed = {"count", "gpus", "model", "cpu_cores", "memory_gib", "name_prefix"}
    groups = []
    nodes = 0
    for k, entry in enumerate(entries, start=1):
        where = f"[[nodes]] #{k}"
        if not isinstance(entry, dict):
            raise InputError(f"{where} must be a table (got {entry!r})", path=str(path))
        for key in entry:
            if key not in allowed:
                raise InputError(
                    f"unknown key {key!r} in {where} (allowed: {', '.join(sorted(allowed))})",
                    path=str(path),
                )
        for key, low, high in (("count", 1, MAX_NODES), ("gpus", 0, MAX_GPUS_PER_NODE)):
            value = entry.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise InputError(
                    f"'{key}' in {where} must be a whole number in {low}..{high} (got {value!r})",
                    path=str(path),
                )
        nodes += entry["count"]
        if nodes > MAX_NODES:
            raise InputError(f"more than {MAX_NODES} nodes in all", path=str(path))
        per_node = entry["gpus"]
        cores = entry.get("cpu_cores", max(per_node, 1) * CPU_CORES_PER_GPU)
        gib = entry.get("memory_gib", max(per_node, 1) * MEMORY_GIB_PER_GPU)
        for key, value, unit, high in (
            ("cpu_cores", cores, 1000, MAX_CPU_CORES),
            ("memory_gib", gib, 1024, MAX_MEMORY_GIB),
        ):
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not value * unit >= 1  # also refuses NaN
                or not value <= high
            ):
                raise InputError(
                    f"'{key}' in {where} must be a number in {1 / unit:g}..{high} (got {value!r})",
                    path=str(path),
                )
        for key in ("model", "name_prefix"):
            if not isinstance(entry.get(key, ""), str):
                raise InputError(
                    f"'{key}' in {where} must be a string (got {entry[key]!r})", path=str(path)
                )
        model_name = str(entry.get("model", DEFAULT_MODEL))
        groups.append(
            {
                "count": entry["count"],
                "gpus": per_node,
                "model": _model(model_name, f"{where} of {path}"),
                "cpu_milli": int(cores * 1000),
                "memory_mib": int(gib * 1024),
                "prefix": str(entry.get("name_prefix", f"{model_name.lower()}-")),
            }
        )
    if not any(g["gpus"] for g in groups):
        raise InputError("no node has a GPU (every [[nodes]] table has gpus = 0)", path=str(path))
    return _groups_to_cluster(groups, rack_size, str(path))
