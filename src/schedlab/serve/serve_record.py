"""Reading back what a journal's ``serve`` record says about the run: the policy it ran and its
preemption settings. Every reader of a journal (``trace import-slurm``, ``serve check``, the
live-versus-simulated comparison) rebuilds these the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schedlab.errors import InputError
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


def refuse_tenancy(record: Mapping[str, Any]) -> None:
    """``serve check`` re-derives an ordering's decisions from the jobs alone; a run under a
    share policy also decided on queues and usage it does not rebuild: refused, not misjudged."""
    tenancy = record.get("tenancy")
    if tenancy:
        raise InputError(
            "serve check: this run served queues under a share policy "
            f"(--tenancy/--queues {tenancy.get('queues') or tenancy.get('policy')}); re-deriving "
            "tenancy decisions from the journal is not supported"
        )


def journaled_seconds(raw: object) -> float:
    """A journaled number of seconds (a journal written before the field existed: 0)."""
    return float(raw) if isinstance(raw, int | float) and raw > 0 else 0.0
