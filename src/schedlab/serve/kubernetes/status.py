"""``schedlab serve status --kubernetes``: what the scheduler of a set of pods is doing.

Read without changing anything: the Lease (who holds it, when it was renewed, whether it is
still valid — a standby takes over once it is not), ``/metrics`` when a port is given, the
journal (the scheduler's settings, its last cycle that changed something, a stop), and the API
server: the pods of the scheduler by state, the reasons on the waiting ones (their
``PodScheduled`` messages, most frequent first) and the queue in the policy's order, computed
by the policy the journal names on the snapshot the scheduler would build now; with a share
policy, each queue's deserved GPUs, fair share, GPUs held, borrowed and waiting, computed alike.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.policies.api import SERVE
from schedlab.policies.wiring import build
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.objects import parse_node, parse_pod, timestamp
from schedlab.serve.kubernetes.server import refresh_queues, refused_jobs
from schedlab.serve.kubernetes.view import build_view
from schedlab.serve.loop import saved_policy_state
from schedlab.serve.serve_record import policy_choice
from schedlab.serve.status import journal_summary, read_metrics, render_tenancy
from schedlab.tenancy.live import KUBE_ATTRIBUTES
from schedlab.tenancy.registry import NONE
from schedlab.tenancy.replay import TenancySpec
from schedlab.tenancy.serve import wrap_live

Record = dict[str, Any]
#: Queued jobs shown in the text (all in --json).
SHOWN = 15


def gather(
    api: Any,
    scheduler: str,
    lease: tuple[str, str],
    journal: Path | None,
    port: int | None,
    now: float,
) -> Record:
    out: Record = {"scheduler": scheduler, "lease": None, "metrics": None, "journal": None}
    ns, name = lease
    try:
        obj = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        spec = obj.get("spec") or {}
        renewed = timestamp(spec.get("renewTime"))
        duration = float(spec.get("leaseDurationSeconds") or 0)
        out["lease"] = {
            "name": f"{ns}/{name}",
            "holder": spec.get("holderIdentity") or "",
            "renewed_ago": round(now - renewed, 1),
            "duration": duration,
            "valid": bool(spec.get("holderIdentity")) and now < renewed + duration,
            "transitions": int(spec.get("leaseTransitions") or 0),
        }
    except KubeError as exc:
        out["lease_error"] = str(exc)
    if port is not None:
        try:
            out["metrics"] = read_metrics(port)
        except OSError as exc:
            out["metrics_error"] = f"127.0.0.1:{port}: {exc}"
    serve: Record | None = None
    if journal is not None and journal.exists():
        summary, serve, cycle, stop = journal_summary(journal)
        out["journal"] = {**summary, "serve": serve, "cycle": cycle, "stop": stop}
    pods = [parse_pod(o) for o in api.list("/api/v1/pods")[0]]
    mine = [p for p in pods if p.scheduler == scheduler]
    states: Counter[str] = Counter()
    reasons: dict[str, list[str]] = {}
    for p in mine:
        if p.terminal:
            states[p.phase] += 1
        elif p.bound:
            states["bound, " + p.phase] += 1
        else:
            states["waiting"] += 1
            if p.scheduled_message:
                reasons.setdefault(p.scheduled_message, []).append(p.key)
    out["pods"] = dict(states)
    out["reasons"] = sorted(
        ([len(keys), text, keys] for text, keys in reasons.items()), key=lambda r: (-r[0], r[1])
    )
    out["queue"], queues = _queue(
        serve, pods, [parse_node(o) for o in api.list("/api/v1/nodes")[0]], scheduler, now, journal
    )
    if queues is not None:
        out["tenancy"] = queues
    return out


def _queue(
    serve: Record | None,
    pods: list[Any],
    nodes: list[Any],
    scheduler: str,
    now: float,
    journal: Path | None = None,
) -> tuple[list[Record], list[Record] | None]:
    """The waiting jobs in the policy's order (the journal's policy; submit order without a
    journal or for a policy that does not rank), and with a share policy each queue's row
    (deserved, fair share, held, waiting; time-based usage from the journaled policy state)."""
    view = build_view(pods, nodes, now, scheduler)
    pending = list(view.snapshot.pending_set)
    order = pending
    queues: list[Record] | None = None
    if serve is not None and (pending or serve.get("tenancy")):
        policies = build(SERVE, policy_choice(serve))
        tenancy = serve.get("tenancy")
        if tenancy:
            spec = TenancySpec(
                policy=str(tenancy.get("policy") or NONE),
                queues=tenancy.get("queues"),
                tenant_key=tuple(tenancy.get("tenant_key") or ()),
                unknown_tenant=tenancy.get("unknown_tenant"),
            )
            live = wrap_live(spec, policies, None, KUBE_ATTRIBUTES, ("queue",))
            assert live is not None
            # As the server sees it: jobs no queue takes are not the policy's.
            view = build_view(pods, nodes, now, scheduler, refuse=partial(refused_jobs, live))
            pending = order = list(view.snapshot.pending_set)
            refresh_queues(live, view)
        policies.start(
            view.cluster,
            np.random.default_rng(int(serve.get("seed") or 0)),
            jobs=view.snapshot.jobs,
        )
        if tenancy:
            identity = {
                "policy": serve.get("policy"),
                "placement": serve.get("placement"),
                "params": dict(serve.get("params") or {}),
                "seed": serve.get("seed"),
                "tenancy": tenancy.get("policy"),
            }
            policies.import_state(saved_policy_state(journal, identity))
            queues = policies.scheduler.queue_status(view.snapshot)  # type: ignore[union-attr]
        ranking = getattr(policies.scheduler, "ranking", None)
        if ranking is not None and pending:
            ranked = [i for i in ranking(view.snapshot) if i in view.snapshot.pending_set]
            order = ranked + [i for i in pending if i not in set(ranked)]
    rows = []
    for i in order:
        job = view.jobs[i]
        head = job.head
        rows.append(
            {
                "job": job.key,
                "pods": len(job.pods),
                "gpus": job.num_gpus,
                "queue": job.queue,
                "waiting": round(now - job.submit, 1),
                "reason": head.scheduled_message,
            }
        )
    rows += [
        {
            "job": p.key,
            "pods": 1,
            "gpus": p.gpus,
            "gpu_milli": p.gpu_milli,
            "queue": p.queue,
            "waiting": round(now - p.created, 1),
            "reason": p.scheduled_message,
        }
        for p in view.fractional
    ]
    return rows, queues


def render(status: Record) -> list[str]:
    lines = []
    lease = status.get("lease")
    if lease is None:
        lines.append(f"lease: {status.get('lease_error', 'none')}")
    else:
        held = "held" if lease["valid"] else "expired (no scheduler renews it)"
        lines.append(
            f"lease {lease['name']}: {held} by {lease['holder'] or 'nobody'}, renewed "
            f"{lease['renewed_ago']:g} s ago (duration {lease['duration']:g} s, "
            f"{lease['transitions']} takeovers)"
        )
    journal = status.get("journal")
    if journal and journal.get("serve"):
        s = journal["serve"]
        lines.append(
            f"server: {s.get('policy')} / {s.get('placement')}, "
            f"pods of scheduler '{s.get('scheduler_name')}'"
        )
        if journal.get("cycle"):
            c = journal["cycle"]
            lines.append(
                f"last cycle that changed something: cycle {c['cycle']}, {c.get('started', 0)} "
                f"started, {c.get('seconds', 0):g} s"
            )
        if journal.get("stop"):
            lines.append(f"stopped: {journal['stop'].get('reason')}")
    metrics = status.get("metrics")
    if metrics:
        m = metrics
        lines.append(
            f"metrics: {m.get('cycles_total', 0):g} cycles, last {m.get('cycle_seconds', 0):.3f} "
            f"s, {m.get('started_total', 0):g} started, {m.get('errors_total', 0):g} errors"
        )
    pods = status.get("pods") or {}
    lines.append("pods: " + (", ".join(f"{n} {k}" for k, n in sorted(pods.items())) or "none"))
    if status.get("reasons"):
        lines.append("reasons on waiting pods:")
        for count, text, keys in status["reasons"]:
            shown = ", ".join(keys[:3]) + (", …" if len(keys) > 3 else "")
            lines.append(f"  {count:5d}  {text}  [{shown}]")
    queue = status.get("queue") or []
    if queue:
        lines.append("queue in the policy's order:")
        lines.append(f"  {'#':>3}  {'job':40} {'pods':>4} {'GPUs':>5}  {'waiting':>9}  queue")
        for k, row in enumerate(queue[:SHOWN], 1):
            gpus = (
                f"{row['gpus']}×{row['gpu_milli']}m"
                if row.get("gpu_milli", 1000) < 1000
                else str(row["gpus"])
            )
            job, waited = row["job"][:40], f"{row['waiting']:.0f}s"
            lines.append(
                f"  {k:>3}  {job:40} {row['pods']:>4} {gpus:>5}  {waited:>9}  {row['queue']}"
            )
        if len(queue) > SHOWN:
            lines.append(f"  … {len(queue) - SHOWN} more (--json lists all)")
    return lines + render_tenancy(status)


def running(status: Record) -> bool:
    """A scheduler holds the Lease now (it renews it)."""
    lease = status.get("lease")
    return bool(lease and lease["valid"])
