"""Decisions → API calls: bind through ``pods/binding``, preempt through ``pods/eviction``, say
why a pod waits on its ``PodScheduled`` condition and in an Event.

* A start binds each pod of the job (a gang: every pod, in name order, to the allocation's
  nodes in order) with a ``Binding`` whose annotations carry the chosen GPU devices (the API
  server copies them onto the pod: ``schedlab.io/gpu-devices``). Before any call, the whole job
  is taken on a ledger of the cluster as the API objects show it, so nothing is bound that would
  put a node over its GPUs, CPU or memory, whatever the policy said.
* 409 Conflict on a bind means the pod is bound already (another instance, or a retry after a
  lost reply): accepted, never retried. 404 means the pod was deleted between the decision and
  the bind. Either way the remaining pods of a gang are still bound (pods bound stay bound; a
  gang left part-bound is completed first at the next cycle) and the journal says so.
* A preemption evicts each pod of the victim (policy/v1 Eviction, which honours
  PodDisruptionBudgets: 429 means a budget forbids it now, journaled as ``protect``), with
  ``--grace`` as the pods' termination grace period.
* A reason is written only when it differs from the one the pod shows, and its Event only then.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.objects import DEVICES_KEY, NodeInfo, PodInfo

Record = dict[str, Any]
COMPONENT = "schedlab"
#: API calls in flight at once (binds, reasons, Events).
CALLS_AT_ONCE = 16


class WriteAPI(Protocol):
    def post(self, path: str, body: Any) -> dict[str, Any]: ...
    def patch(self, path: str, body: Any, strategic: bool = False) -> dict[str, Any]: ...


def now_text(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_path(pod: PodInfo) -> str:
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"


def binding(pod: PodInfo, node: str, gpus: tuple[int, ...]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.gpus:
        meta["annotations"] = {DEVICES_KEY: ",".join(str(g) for g in gpus)}
    if pod.uid:
        meta["uid"] = pod.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def unschedulable_message(
    pod: PodInfo, nodes: list[NodeInfo], state: ClusterState, allowed: np.ndarray
) -> str:
    """Why no node takes ``pod`` now, worded as kube-scheduler words it
    (``0/4 nodes are available: 4 Insufficient nvidia.com/gpu.``); "" when some node would.
    ``allowed``: the nodes the pod's selector, affinity and tolerations let it use. Each node
    counts once, under the first reason that holds, in this order."""
    n = len(nodes)
    cordoned = np.fromiter((x.unschedulable for x in nodes), bool, n)
    unready = np.fromiter((not x.ready for x in nodes), bool, n)
    milli = pod.gpu_milli or GPU_MILLI
    fit_gpus = (state.gpu_exists & (state.gpu_free >= milli)).sum(axis=1) >= pod.gpus
    checks = (
        ("node(s) were unschedulable", cordoned),
        ("node(s) were not ready", unready),
        ("node(s) didn't match Pod's node affinity/selector or had untolerated taints", ~allowed),
        ("Insufficient nvidia.com/gpu", ~fit_gpus if pod.gpus else np.zeros(n, bool)),
        ("Insufficient cpu", state.cpu_free < pod.cpu_milli),
        ("Insufficient memory", state.mem_free < pod.memory_mib),
    )
    left = np.ones(n, bool)
    counts = []
    for why, bad in checks:
        hit = left & bad
        if hit.any():
            counts.append((why, int(hit.sum())))
        left &= ~bad
    if left.any():
        return ""
    parts = ", ".join(f"{k} {why}" for why, k in sorted(counts))
    return f"0/{n} nodes are available: {parts}."


@dataclass
class Binder:
    """Carries out one cycle's decisions; every outcome is a journal record through ``sink``."""

    api: WriteAPI
    stamp: Callable[[], Record]
    sink: Callable[[Record], None]
    shadow: bool = False
    bound: list[str] = field(default_factory=list)  # pod keys bound this cycle
    executor: ThreadPoolExecutor | None = None
    pending: list[Future[Any]] = field(default_factory=list)
    events: queue.Queue[tuple[str, dict[str, Any]]] | None = None
    last_protect: dict[str, str] = field(default_factory=dict)  # job → budget reason journaled

    def record(self, job: str | None, action: str, **fields: Any) -> Record:
        rec = {**self.stamp(), "job": job, "action": action, **fields}
        self.sink(rec)
        return rec

    def _pool(self) -> ThreadPoolExecutor:
        if self.executor is None:
            self.executor = ThreadPoolExecutor(CALLS_AT_ONCE, thread_name_prefix="kube-call")
        return self.executor

    def _later(self, call: Callable[[], Any]) -> None:
        """A call sent with the cycle's others; :meth:`flush` waits for its answer."""
        self.pending.append(self._pool().submit(call))

    def flush(self) -> None:
        """Wait for the calls started by :meth:`_later`, journaling the reasons that failed."""
        for future in self.pending:
            failure = future.result()
            if isinstance(failure, dict):
                self.record(failure["job"], "error", attempted="reason", reason=failure["reason"])
        self.pending = []

    def bind_jobs(
        self,
        plans: list[tuple[str, list[PodInfo], Allocation, dict[str, Any]]],
        names: list[str],
        ledger: ClusterState,
    ) -> list[Record]:
        """Bind every pod of each job (see the module docstring): each job is first taken on a
        trial ledger holding the jobs before it, then every bind is sent at once (the API server
        answers them in parallel, as kube-scheduler's binding cycles are); the records come in
        the jobs' order, and ``ledger`` takes the pods bound."""
        trial = ledger.copy()
        out: list[Record | None] = []
        calls: dict[tuple[int, int], Future[None] | None] = {}
        for k, (key, pods, allocation, extra) in enumerate(plans):
            if len(pods) != len(allocation):
                why = f"policy gave {len(allocation)} node(s) for a job of {len(pods)} pod(s)"
                out.append(self.record(key, "skip", reason=why, **extra))
                continue
            attempt = trial.copy()
            try:
                for pod, (node, gpus) in zip(pods, allocation, strict=True):
                    milli = pod.gpu_milli if gpus else 0
                    attempt.allocate(node, gpus, pod.cpu_milli, pod.memory_mib, milli, len(gpus))
            except ValueError as exc:
                out.append(self.record(key, "skip", reason=f"would over-commit: {exc}", **extra))
                continue
            trial = attempt
            out.append(None)
            for m, (pod, (node, gpus)) in enumerate(zip(pods, allocation, strict=True)):
                body = binding(pod, names[node], gpus)
                calls[k, m] = (
                    None
                    if self.shadow
                    else self._pool().submit(self.api.post, f"{pod_path(pod)}/binding", body)
                )
        for k, (key, pods, allocation, extra) in enumerate(plans):
            if out[k] is not None:
                continue
            placed, failed = [], []
            for m, (pod, (node, gpus)) in enumerate(zip(pods, allocation, strict=True)):
                call = calls[k, m]
                try:
                    if call is not None:
                        call.result()
                except KubeError as exc:
                    if exc.status == 409:
                        failed.append(
                            (pod.key, "conflict: already bound by someone else; left as is")
                        )
                    elif exc.status == 404:
                        failed.append((pod.key, "gone: deleted between the decision and the bind"))
                    else:
                        failed.append((pod.key, str(exc)))
                    continue
                placed.append(pod.key)
                milli = pod.gpu_milli if gpus else 0
                ledger.allocate(node, gpus, pod.cpu_milli, pod.memory_mib, milli, len(gpus))
                if not self.shadow:
                    text = f"Successfully assigned {pod.key} to {names[node]}"
                    self._event(pod, "Normal", "Scheduled", text)
            self.bound += placed
            if failed and placed:
                out[k] = self.record(
                    key, "start", partial=True, bound=placed, failed=dict(failed), **extra
                )
            elif failed:
                why = "; ".join(f"{p}: {w}" for p, w in failed)
                out[k] = self.record(key, "error", attempted="start", reason=why, **extra)
            else:
                out[k] = self.record(key, "start", **extra)
        return [r for r in out if r is not None]

    def evict(self, key: str, pods: list[PodInfo], grace: float, extra: dict[str, Any]) -> Record:
        """Evict every pod of a running job (Eviction API)."""
        blocked = []
        for pod in pods:
            if self.shadow:
                continue
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
                "deleteOptions": {"gracePeriodSeconds": int(grace)},
            }
            try:
                self.api.post(f"{pod_path(pod)}/eviction", body)
            except KubeError as exc:
                if exc.status == 404:
                    continue  # already gone
                if exc.status == 429:
                    blocked.append(pod.key)
                    continue
                return self.record(key, "error", attempted="preempt", reason=str(exc), **extra)
            self._event(
                pod,
                "Normal",
                "Preempted",
                f"Preempted by schedlab to run other work (grace {grace:g} s)",
            )
        if blocked:
            why = f"a PodDisruptionBudget forbids evicting {', '.join(blocked)} now"
            rec = {**self.stamp(), "job": key, "action": "protect", "reason": why, **extra}
            if self.last_protect.get(key) != why:  # journaled once while it lasts
                self.last_protect[key] = why
                self.sink(rec)
            return rec
        return self.record(key, "preempt", **extra)

    def show_reason(self, pod: PodInfo, reason: str, message: str, now: float) -> None:
        """Write ``PodScheduled=False`` with ``reason``/``message`` and a FailedScheduling Event,
        when the pod does not show them already (sent at once with the cycle's other calls; a
        failure is journaled at :meth:`flush`)."""
        if pod.scheduled_reason == reason and pod.scheduled_message == message:
            return
        if self.shadow:
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now_text(now),
        }

        def call() -> dict[str, str] | None:
            try:
                self.api.patch(
                    f"{pod_path(pod)}/status",
                    {"status": {"conditions": [condition]}},
                    strategic=True,
                )
            except KubeError as exc:
                return None if exc.status == 404 else {"job": pod.key, "reason": str(exc)}
            self._event(pod, "Warning", "FailedScheduling", message)
            return None

        self._later(call)

    def _event(self, pod: PodInfo, kind: str, reason: str, message: str) -> None:
        """An Event about ``pod`` from schedlab (best effort: an Event lost is not an error)."""
        stamp = datetime.now(UTC)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{pod.name}.",
                "namespace": pod.namespace,
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.uid,
            },
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "lastTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "count": 1,
        }
        self._event_queue().put((f"/api/v1/namespaces/{pod.namespace}/events", body))

    def _event_queue(self) -> queue.Queue[tuple[str, dict[str, Any]]]:
        """Events go out from a thread of their own, as kube-scheduler's broadcaster sends
        them: a cycle never waits for them."""
        if self.events is None:
            self.events = queue.Queue()
            events = self.events

            def send() -> None:
                while True:
                    path, body = events.get()
                    with contextlib.suppress(KubeError):
                        self.api.post(path, body)
                    events.task_done()

            threading.Thread(target=send, daemon=True, name="kube-events").start()
        return self.events

    def flush_events(self) -> None:
        """Wait until every Event queued so far is sent (or refused)."""
        if self.events is not None:
            self.events.join()
