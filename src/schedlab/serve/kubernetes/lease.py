"""One active scheduler: leader election on a ``coordination.k8s.io/v1`` Lease.

The instance whose identity is the Lease's ``holderIdentity`` acts; every other one waits. The
holder renews (``renewTime``) every third of the lease duration; a standby takes the Lease over
once ``renewTime + leaseDurationSeconds`` has passed without renewal (the holder was killed or
lost the API server). Every write carries the resourceVersion read, so two standbys racing for
an expired Lease cannot both win: the API server refuses the second update with 409 Conflict. A
holder that cannot renew for a whole lease duration stops acting by itself (it may be cut off
from the API server while a standby has already taken over).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.objects import timestamp


class LeaseAPI(Protocol):
    def get(self, path: str, params: Any = None) -> dict[str, Any]: ...
    def post(self, path: str, body: Any) -> dict[str, Any]: ...
    def put(self, path: str, body: Any) -> dict[str, Any]: ...


def micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


@dataclass
class LeaseState:
    holder: str
    renewed: float
    duration: float


class Lease:
    """Acquire and renew one Lease; :meth:`hold` says whether this instance may act now."""

    def __init__(
        self, api: LeaseAPI, namespace: str, name: str, identity: str, duration: float = 15.0
    ) -> None:
        self.api = api
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.name = name
        self.identity = identity
        self.duration = duration
        self.held_since: float | None = None
        self.last_renew = 0.0
        self.last_seen: LeaseState | None = None
        self.error = ""

    def _body(self, now: float, current: dict[str, Any] | None) -> dict[str, Any]:
        spec = dict((current or {}).get("spec") or {})
        taking = spec.get("holderIdentity") != self.identity
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self.duration),
            renewTime=micro_time(now),
        )
        if taking:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if current is not None else 0
            )
        meta: dict[str, Any] = {"name": self.name}
        if current is not None:
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": spec,
        }

    def hold(self, now: float) -> bool:
        """Try to hold the Lease at ``now``: True when this instance is the leader."""
        self.error = ""
        if self.held_since is not None and 0 <= now - self.last_renew < self.duration / 3:
            return True  # renewed lately: a renewal every third of the duration is enough
        try:
            try:
                current = self.api.get(f"{self.path}/{self.name}")
            except KubeError as exc:
                if exc.status != 404:
                    raise
                current = None
            if current is None:
                self.api.post(self.path, self._body(now, None))
            else:
                spec = current.get("spec") or {}
                holder = str(spec.get("holderIdentity") or "")
                renewed = timestamp(spec.get("renewTime"))
                duration = float(spec.get("leaseDurationSeconds") or self.duration)
                self.last_seen = LeaseState(holder, renewed, duration)
                if holder and holder != self.identity and now < renewed + duration:
                    self.held_since = None
                    return False
                self.api.put(f"{self.path}/{self.name}", self._body(now, current))
        except KubeError as exc:
            self.error = str(exc)
            if exc.status == 409:  # another instance wrote first
                self.held_since = None
                return False
            # Cut off: act only while the lease we renewed last is surely still ours.
            if self.held_since is not None and now - self.last_renew < self.duration:
                return True
            self.held_since = None
            return False
        if self.held_since is None:
            self.held_since = now
        self.last_renew = now
        return True

    def release(self) -> None:
        """Give the Lease up on a clean stop, so a standby takes over at once."""
        if self.held_since is None:
            return
        try:
            current = self.api.get(f"{self.path}/{self.name}")
            if (current.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            body = self._body(self.last_renew, current)
            body["spec"]["renewTime"] = micro_time(0.0)
            self.api.put(f"{self.path}/{self.name}", body)
        except KubeError:
            pass  # it expires by itself
        self.held_since = None
