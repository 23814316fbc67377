"""Time ``serve kubernetes`` cycles: 1,000 pending pods on 500 nodes, and binds per second.

In-memory (default): the API server is :class:`schedlab.serve.kubernetes.fake.FakeKube` (calls
are dictionary operations), so the figure is schedlab's own work per cycle — parsing every pod
and node object, building the snapshot, the policy, the binds' ledger, the reasons. The cluster:
``--nodes`` nodes × 8 GPUs, each node half taken by pods of another scheduler; ``--pending``
pending pods of 1–8 GPUs (a tenth in gangs of 4 pods, a tenth GPU shares). Printed: the first
cycle (it binds what fits and writes a reason on every pod left), then the median of
``--repeat`` steady cycles (nothing changed: no call at all). Goal: ≤ 0.5 s.

``--live``: the same against the dev control plane (KUBECONFIG, scripts/k8s-dev-cluster.sh
started with ``--nodes 500``), in a fresh namespace, through the real REST client, watch-fed
caches and the scheduler's RBAC identity (SCHEDLAB_KUBECONFIG); also the binds per second of
the first cycle (pods that all fit, bound one ``pods/binding`` call each), then the cycle with
``--pending`` pods waiting on the nodes, cordoned so nothing is bound (they are uncordoned at the
end). Goal: ≥ 100 binds/s.

    python benchmarks/kube_cycle.py [--pending 1000] [--nodes 500] [--repeat 5] [--live]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kube_objects import node, pod
from schedlab.serve.journal import Journal
from schedlab.serve.kubernetes.fake import FakeKube
from schedlab.serve.kubernetes.server import KubeConfig, KubeServer

SIZES = [1, 1, 1, 2, 2, 4, 8]


def pending_pods(count: int, ns: str, scheduler: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    k = 0
    while len(out) < count:
        stamp = f"2027-01-15T08:{k // 60 % 60:02d}:{k % 60:02d}Z"
        if k % 10 == 3 and len(out) <= count - 4:
            out += [
                pod(
                    f"g{k}-{m}",
                    2,
                    ns=ns,
                    scheduler=scheduler,
                    group=f"g{k}",
                    min_member=4,
                    created=stamp,
                )
                for m in range(4)
            ]
        elif k % 10 == 7:
            out.append(
                pod(f"f{k}", ns=ns, scheduler=scheduler, milli=250 + 250 * (k % 3), created=stamp)
            )
        else:
            out.append(
                pod(f"p{k}", SIZES[k % len(SIZES)], ns=ns, scheduler=scheduler, created=stamp)
            )
        k += 1
    return out


def fake_cluster(nodes: int, pending: int) -> FakeKube:
    api = FakeKube()
    for i in range(1, nodes + 1):
        api.add_node(node(f"node{i}"))
        api.add_pod(
            pod(
                f"busy{i}",
                4,
                ns="other",
                scheduler="default-scheduler",
                node=f"node{i}",
                phase="Running",
            )
        )
    for obj in pending_pods(pending, "bench", "schedlab"):
        api.add_pod(obj)
    return api


def timed_cycles(server: KubeServer, repeat: int, refresh: bool) -> tuple[float, int, list[float]]:
    def one() -> Any:
        if refresh:
            for cache in (server.pods, server.nodes, server.groups):
                if cache is not None:
                    cache.run_once()
        return server.cycle()

    first = one()
    steady = [one().seconds for _ in range(repeat)]
    return first.seconds, first.started, steady


def run_fake(args: argparse.Namespace) -> None:
    api = fake_cluster(args.nodes, args.pending)
    config = KubeConfig(policy=args.policy, placement=args.placement, identity="bench")
    server = KubeServer(api, config, Journal(None), watch=False)
    server.start_watches()
    first, started, steady = timed_cycles(server, args.repeat, refresh=True)
    print(
        f"in-memory API, {args.nodes} nodes × 8 GPUs (half taken), {args.pending} pending pods, "
        f"{args.policy}/{args.placement}:"
    )
    print(f"  first cycle: {first:.3f} s ({started} jobs bound, a reason on each pod left)")
    print(f"  steady cycle: median {statistics.median(steady):.3f} s (min {min(steady):.3f})")


def run_live(args: argparse.Namespace) -> None:
    from schedlab.serve.kubernetes.api import KubeAPI
    from schedlab.serve.kubernetes.kubeconfig import load_credentials

    admin = KubeAPI(load_credentials(Path(os.environ["KUBECONFIG"])))
    nodes = admin.list("/api/v1/nodes")[0]
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    admin.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    scheduler = ns
    sched = KubeAPI(load_credentials(Path(os.environ["SCHEDLAB_KUBECONFIG"])))
    config = KubeConfig(
        policy=args.policy,
        placement=args.placement,
        identity=ns,
        scheduler_name=scheduler,
        lease_name=ns,
    )
    # Binds per second: as many 1-GPU pods as there are nodes' GPUs (all fit).
    gpus = sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", 0)) for n in nodes)
    fit = min(gpus, args.binds)
    for obj in pending_pods(0, ns, scheduler) + [
        pod(f"b{k}", 1, ns=ns, scheduler=scheduler) for k in range(fit)
    ]:
        obj["metadata"].pop("creationTimestamp")
        admin.post(f"/api/v1/namespaces/{ns}/pods", obj)
    server = KubeServer(sched, config, Journal(None))
    server.start_watches()
    t = time.perf_counter()
    report = server.cycle()
    took = time.perf_counter() - t
    print(
        f"live API server, {len(nodes)} nodes, {gpus} GPUs: bound {report.started} pods in "
        f"{took:.2f} s = {report.started / took:.0f} binds/s (one cycle)"
    )
    # Cycle time: 1,000 pods pending on the 500 nodes, cordoned so that none is bound (the
    # cycle does all its work: read, snapshot, policy, reasons).
    for n in nodes:
        admin.patch(f"/api/v1/nodes/{n['metadata']['name']}", {"spec": {"unschedulable": True}})
    for obj in pending_pods(args.pending, ns, scheduler):
        obj["metadata"].pop("creationTimestamp")
        admin.post(f"/api/v1/namespaces/{ns}/pods", obj)
    time.sleep(3)  # the watches catch up
    t = time.perf_counter()
    first = server.cycle()
    took = time.perf_counter() - t
    print(
        f"  {first.queued} pending pods on {len(nodes)} cordoned nodes: first cycle {took:.3f} s "
        "(a reason written on each)"
    )
    steady = []
    for _ in range(args.repeat):
        time.sleep(0.5)
        t = time.perf_counter()
        server.cycle()
        steady.append(time.perf_counter() - t)
    print(f"  steady cycle: median {statistics.median(steady):.3f} s (min {min(steady):.3f})")
    for n in nodes:
        admin.patch(f"/api/v1/nodes/{n['metadata']['name']}", {"spec": {"unschedulable": None}})
    for cache in (server.pods, server.nodes, server.groups):
        if cache is not None:
            cache.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--binds", type=int, default=1000, help="most pods bound in --live")
    p.add_argument("--policy", default="fifo")
    p.add_argument("--placement", default="bestfit")
    p.add_argument("--live", action="store_true")
    args = p.parse_args()
    (run_live if args.live else run_fake)(args)


if __name__ == "__main__":
    main()
