"""The tenancy options of a replay (``--tenancy``, ``--queues`` and their refinements), apart
from the tenancy layer itself (:mod:`schedlab.tenancy.replay`): a run without tenancy parses,
checks and records them without importing the schedulers and metrics it does not use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.tenancy.config import DERIVE, UNKNOWN_TENANT
from schedlab.tenancy.registry import NONE, check_share_policy

#: Keys of config.toml for the tenancy options.
CONFIG_KEYS: dict[str, type] = {
    "tenancy": str,
    "queues": str,
    "tenant_column": list,
    "derive_deserved": str,
    "unknown_tenant": str,
}


@dataclass(frozen=True)
class TenancySpec:
    """The tenancy options of a run (``policy = "none"``: no tenancy)."""

    policy: str = NONE
    queues: str | None = None
    tenant_key: tuple[str, ...] = ()
    derive_deserved: str | None = None
    unknown_tenant: str | None = None

    @property
    def enabled(self) -> bool:
        return self.policy != NONE or self.queues is not None

    def check(self) -> TenancySpec:
        check_share_policy(self.policy)
        if self.derive_deserved is not None and self.derive_deserved not in DERIVE:
            raise InputError(
                f"'--derive-deserved' must be one of {', '.join(DERIVE)} "
                f"(got {self.derive_deserved!r})"
            )
        if self.unknown_tenant is not None and self.unknown_tenant not in UNKNOWN_TENANT:
            raise InputError(
                f"'--unknown-tenant' must be one of {', '.join(UNKNOWN_TENANT)} "
                f"(got {self.unknown_tenant!r})"
            )
        if not self.enabled and (self.tenant_key or self.derive_deserved or self.unknown_tenant):
            raise InputError(
                "'--tenant-column', '--derive-deserved' and '--unknown-tenant' need "
                "'--tenancy POLICY' or '--queues FILE'"
            )
        return self


def config_entries(spec: TenancySpec) -> dict[str, object]:
    """What config.toml records of the tenancy options (nothing without tenancy)."""
    if not spec.enabled:
        return {}
    return {
        **({"tenancy": spec.policy} if spec.policy != NONE else {}),  # else: the file's
        **({"queues": str(Path(spec.queues).resolve())} if spec.queues else {}),
        **({"tenant_column": list(spec.tenant_key)} if spec.tenant_key else {}),
        **({"derive_deserved": spec.derive_deserved} if spec.derive_deserved else {}),
        **({"unknown_tenant": spec.unknown_tenant} if spec.unknown_tenant else {}),
    }


def spec_from(pick: Any) -> TenancySpec:
    """The tenancy options from a ``pick(key)`` of command line over config."""
    key = pick("tenant_column")
    if key and len(set(key)) != len(key):
        twice = next(k for k in key if list(key).count(k) > 1)
        raise InputError(f"'--tenant-column' names {twice!r} twice (each level of the path once)")
    policy = pick("tenancy")
    if policy is not None and not policy:
        raise InputError("'--tenancy' needs a policy name (or 'none')")
    if policy == NONE and pick("queues"):
        raise InputError(
            "'--tenancy none' is the run without tenancy, and '--queues' does not apply with "
            "it: leave '--tenancy' out to run the queue file's policy, or name another"
        )
    return TenancySpec(
        policy=policy or NONE,
        queues=pick("queues") or None,
        tenant_key=tuple(key) if key else (),
        derive_deserved=pick("derive_deserved") or None,
        unknown_tenant=pick("unknown_tenant") or None,
    ).check()
