"""The queue file (TOML or YAML, one schema): the share policy, its settings and the queues.

::

    [tenancy]
    policy = "kai"
    tenant_key = ["vc"]            # job attributes → queue path
    unknown_tenant = "create"      # create | default-queue | error
    default_queue = "other"        # with unknown_tenant = "default-queue"
    [tenancy.kai]
    k_value = 1.0
    usage = { window = "7d", window_type = "sliding", half_life = "0" }

    [[queue]]
    name = "research"
    deserved = { gpu = 32 }
    weight = 2
    [[queue]]
    name = "vision"
    parent = "research"            # or name = "research/vision"
    deserved = { "gpu:A100" = 8, cpu = 64, memory = 512 }
    limit = { gpu = 48 }
    match = [{ vc = "ee9e8c" }]

Every problem is one :class:`InputError` naming the file and the field; nothing is run.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import check_input_file, read_text
from schedlab.tenancy.tree import QueueSpec

UNKNOWN_TENANT = ("create", "default-queue", "error")
DERIVE = ("none", "demand-share")
QUEUE_FIELDS = {
    "name",
    "parent",
    "deserved",
    "limit",
    "weight",
    "priority",
    "borrowing_limit",
    "lending_limit",
    "preemption",
    "match",
    "shares",
}
TENANCY_FIELDS = {
    "policy",
    "tenant_key",
    "unknown_tenant",
    "default_queue",
    "derive_deserved",
    "deserved_schedule",
    "strict_fifo",
}
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


@dataclass(frozen=True)
class TenancyConfig:
    """What a queue file (or the command line, without one) says."""

    policy: str = "none"
    tenant_key: tuple[str, ...] = ()
    unknown_tenant: str = "create"
    default_queue: str | None = None
    queues: tuple[QueueSpec, ...] = ()
    #: Per-policy settings: ``{"kai": {"k_value": 1.0, ...}, ...}``, checked by the policy.
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    derive_deserved: str = "none"
    strict_fifo: bool = False
    source: str = "<command line>"


def parse_duration(value: object, where: str) -> float:
    """Seconds from ``90``, ``"90s"``, ``"60m"``, ``"7d"`` (``"0"``: 0)."""
    if isinstance(value, bool):
        raise InputError(f"{where} must be a duration such as 60s or 7d (got {value!r})")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhdw]?)\s*", str(value))
        if m is None:
            raise InputError(f"{where} must be a duration such as 60s or 7d (got {value!r})")
        seconds = float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1.0)
    if not 0 <= seconds < math.inf:
        raise InputError(f"{where} must be ≥ 0 and finite (got {value!r})")
    return seconds


def _load(path: Path) -> dict[str, Any]:
    text = read_text(path, "queue file")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only a YAML queue file needs it

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            why = str(exc).replace("\n", " ")
            raise InputError(f"not a readable YAML file ({why})", path=str(path)) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not a readable TOML file ({exc})", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(
            "a queue file holds a [tenancy] table and [[queue]] entries", path=str(path)
        )
    return data


def _mapping(value: object, where: str, example: str = "{ gpu = 8 }") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a table such as {example} (got {value!r})")
    return dict(value)


def _text_list(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"{where} must be a list of column names (got {value!r})")
    return tuple(v.strip() for v in value)


def _paths(raw: list[dict[str, Any]], src: str) -> list[str]:
    """Each queue's full path: its ``name``, under its ``parent``'s path when it names one."""
    by_name: dict[str, dict[str, Any]] = {}
    for i, q in enumerate(raw):
        name = q.get("name")
        if not isinstance(name, str) or not name.strip("/ "):
            raise InputError(f"{src}: queue #{i + 1} field 'name' must be text (got {name!r})")
        if name in by_name:
            raise InputError(f"{src}: queue {name!r} is defined twice")
        by_name[name] = q
    out = []
    for q in raw:
        chain, node = [q["name"]], q
        while node.get("parent") not in (None, "", "root"):
            up = node["parent"]
            if not isinstance(up, str) or up not in by_name:
                raise InputError(
                    f"{src}: queue {node['name']!r} field 'parent' names no queue (got {up!r})"
                )
            if up in chain:
                loop = " → ".join([*chain[chain.index(up) :], up])
                raise InputError(f"{src}: the queue tree has a cycle ({loop})")
            chain.append(up)
            node = by_name[up]
        out.append("/".join(reversed([c.strip("/") for c in chain])))
    return out


def _queue(q: dict[str, Any], path: str, src: str) -> QueueSpec:
    at = f"{src}: queue {q['name']!r}"
    unknown = set(q) - QUEUE_FIELDS
    if unknown:
        raise InputError(
            f"{at} has an unknown field {sorted(unknown)[0]!r} "
            f"(fields: {', '.join(sorted(QUEUE_FIELDS))})"
        )
    match = q.get("match", [])
    if isinstance(match, Mapping):
        match = [match]
    if not isinstance(match, list) or not all(isinstance(m, Mapping) and m for m in match):
        raise InputError(f"{at} field 'match' must be a list of tables like {{ vc = \"a\" }}")
    weight = q.get("weight", 1.0)
    return QueueSpec(
        path=path,
        deserved=_mapping(q.get("deserved"), f"{at} field 'deserved'"),
        limit=_mapping(q.get("limit"), f"{at} field 'limit'"),
        weight=weight,
        priority=q.get("priority", 0),
        borrowing_limit=_mapping(q.get("borrowing_limit"), f"{at} field 'borrowing_limit'"),
        lending_limit=_mapping(q.get("lending_limit"), f"{at} field 'lending_limit'"),
        preemption=_mapping(
            q.get("preemption"), f"{at} field 'preemption'", '{ reclaim_within_cohort = "Any" }'
        ),
        match=tuple({str(k): str(v) for k, v in m.items()} for m in match),
        shares=q.get("shares"),
    )


def read_queue_file(path: str | Path) -> TenancyConfig:
    """Read and check a queue file (TOML, or YAML by its suffix)."""
    p = check_input_file(path)
    src = str(p)
    data = _load(p)
    unknown = set(data) - {"tenancy", "queue"}
    if unknown:
        raise InputError(
            f"{src}: unknown top-level entry {sorted(unknown)[0]!r} (a queue file holds "
            "[tenancy] and [[queue]])"
        )
    head = _mapping(data.get("tenancy"), f"{src}: [tenancy]", '{ policy = "kai" }')
    params = {k: v for k, v in head.items() if isinstance(v, Mapping)}
    bad = set(head) - TENANCY_FIELDS - set(params)
    if bad:
        raise InputError(
            f"{src}: [tenancy] has an unknown field {sorted(bad)[0]!r} "
            f"(fields: {', '.join(sorted(TENANCY_FIELDS))}, and a table per policy)"
        )
    raw = data.get("queue", [])
    if not isinstance(raw, list) or not all(isinstance(q, dict) for q in raw):
        raise InputError(f"{src}: 'queue' must be a list of [[queue]] tables")
    paths = _paths(raw, src)
    queues = tuple(_queue(q, path, src) for q, path in zip(raw, paths, strict=True))
    unknown_tenant = head.get("unknown_tenant", "create")
    if unknown_tenant not in UNKNOWN_TENANT:
        raise InputError(
            f"{src}: [tenancy] field 'unknown_tenant' must be one of "
            f"{', '.join(UNKNOWN_TENANT)} (got {unknown_tenant!r})"
        )
    default_queue = head.get("default_queue")
    if unknown_tenant == "default-queue" and default_queue not in paths:
        raise InputError(
            f"{src}: [tenancy] field 'default_queue' must name a queue of the file when "
            f"unknown_tenant is 'default-queue' (got {default_queue!r})"
        )
    derive = head.get("derive_deserved", "none")
    if derive not in DERIVE:
        raise InputError(
            f"{src}: [tenancy] field 'derive_deserved' must be one of {', '.join(DERIVE)} "
            f"(got {derive!r})"
        )
    if head.get("deserved_schedule") is not None:
        raise InputError(
            f"{src}: [tenancy] field 'deserved_schedule' (quotas that change over time) is not "
            "supported: give fixed deserved quotas"
        )
    strict = head.get("strict_fifo", False)
    if not isinstance(strict, bool):
        raise InputError(f"{src}: [tenancy] field 'strict_fifo' must be true or false")
    policy = head.get("policy", "none")
    if not isinstance(policy, str):
        raise InputError(f"{src}: [tenancy] field 'policy' must be a policy name")
    return TenancyConfig(
        policy=policy,
        tenant_key=_text_list(head["tenant_key"], f"{src}: [tenancy] field 'tenant_key'")
        if "tenant_key" in head
        else (),
        unknown_tenant=unknown_tenant,
        default_queue=default_queue,
        queues=queues,
        params={k: dict(v) for k, v in params.items()},
        derive_deserved=derive,
        strict_fifo=strict,
        source=src,
    )
