"""Reading back what a journal's ``serve`` record says about the run: the policy it ran and its
preemption settings. Every reader of a journal (``trace import-slurm``, ``serve check``, the
live-versus-simulated comparison) rebuilds these the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schedlab.policies.wiring import PolicyChoice


def policy_choice(record: Mapping[str, Any]) -> PolicyChoice:
    """The policy the record names (``NAME+backfill``, placement, parameters, plugins)."""
    label = str(record.get("policy", ""))
    return PolicyChoice(
        label.removesuffix("+backfill"),
        str(record.get("placement", "bestfit")),
        label.endswith("+backfill"),
        {str(k): str(v) for k, v in dict(record.get("params") or {}).items()},
        plugins=tuple(str(p) for p in record.get("plugins") or ()),
    )


def journaled_seconds(raw: object) -> float:
    """A journaled number of seconds (a journal written before the field existed: 0)."""
    return float(raw) if isinstance(raw, int | float) and raw > 0 else 0.0
