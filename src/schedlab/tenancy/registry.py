"""Share policies by name, imported only when used (a command imports only what it runs)."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any

from schedlab.errors import InputError
from schedlab.tenancy.policy import SharePolicy

#: ``--tenancy`` without tenancy: the run is exactly what it was without the option.
NONE = "none"

#: Name → (module, class, one-line summary) of every share policy.
SHARE_POLICIES: dict[str, tuple[str, str, str]] = {
    "kai": ("schedlab.tenancy.kai", "KaiPolicy", "KAI: deserved, over-quota weight, time-aware"),
    "kueue-classic": (
        "schedlab.tenancy.kueue",
        "KueueClassic",
        "Kueue: nominal quota, cohort borrowing and lending, classic preemption",
    ),
    "kueue-fair": (
        "schedlab.tenancy.kueue",
        "KueueFair",
        "Kueue fair sharing: dominant resource share, S2-a / S2-b preemption",
    ),
    "volcano-proportion": (
        "schedlab.tenancy.volcano",
        "VolcanoProportion",
        "Volcano proportion: weighted deserved, guarantee, capability",
    ),
    "drf": ("schedlab.tenancy.volcano", "Drf", "dominant resource fairness between queues"),
    "hdrf": ("schedlab.tenancy.volcano", "Hdrf", "hierarchical DRF (Volcano's hierarchy)"),
    "yunikorn": (
        "schedlab.tenancy.yunikorn",
        "YuniKorn",
        "YuniKorn: guaranteed/max queues, preemption towards guarantees",
    ),
    "slurm-classic": (
        "schedlab.tenancy.slurm_fairshare",
        "SlurmClassic",
        "Slurm classic fair-share factor (decayed usage over shares)",
    ),
    "slurm-fairtree": (
        "schedlab.tenancy.slurm_fairshare",
        "SlurmFairTree",
        "Slurm Fair Tree: level fair-share, depth-first ranking",
    ),
    "gavel-wf": (
        "schedlab.tenancy.gavel",
        "GavelWaterFilling",
        "Gavel hierarchical max-min water-filling, per 360 s round",
    ),
}


def share_policy_names() -> list[str]:
    return list(SHARE_POLICIES)


def check_share_policy(name: str) -> str:
    """``name`` if it is ``none`` or a share policy, else an error with the nearest names."""
    if name == NONE or name in SHARE_POLICIES:
        return name
    near = difflib.get_close_matches(name, [NONE, *SHARE_POLICIES], n=2)
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    raise InputError(
        f"unknown tenancy policy {name!r}{hint} (known: {NONE}, {', '.join(SHARE_POLICIES)})"
    )


def make_share_policy(
    name: str, settings: Mapping[str, Any] | None = None, source: str = ""
) -> SharePolicy:
    """A fresh share policy object (settings from the queue file's ``[tenancy.<name>]``)."""
    check_share_policy(name)
    if name == NONE:
        raise InputError("tenancy 'none' has no share policy object")
    module, cls, _ = SHARE_POLICIES[name]
    policy_cls = getattr(importlib.import_module(module), cls)
    return policy_cls(settings, source)
