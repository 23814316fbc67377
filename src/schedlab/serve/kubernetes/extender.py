"""``serve kubernetes --extender``: schedlab's placement as a kube-scheduler extender.

For operators who keep kube-scheduler: it calls this HTTP service for each pod it schedules
(the extender protocol of ``k8s.io/kube-scheduler/extender/v1``; configure it with
``nodeCacheCapable: true``, so requests name nodes rather than carry them):

* ``POST /filter`` (``ExtenderArgs`` → ``ExtenderFilterResult``): the candidate nodes where the
  pod's GPUs (whole, or a share of one GPU), CPU and memory fit now, given every bound pod;
  the others with kube-scheduler-style reasons (``Insufficient nvidia.com/gpu``);
* ``POST /prioritize`` (``ExtenderArgs`` → ``HostPriorityList``): the placement policy's score
  of each candidate (``fgd``, ``bestfit``, … exactly as pack and replay score), scaled to
  0–10 (kube-scheduler's ``MaxExtenderPriority``) over the candidates;
* ``POST /bind`` (``ExtenderBindingArgs`` → ``ExtenderBindingResult``, optional): the policy
  chooses the GPU devices on the node kube-scheduler chose, and the pod is bound with them in
  its ``schedlab.io/gpu-devices`` annotation, as ``serve kubernetes`` binds.

It sees one pod at a time: no gangs, no queue order, no preemption (kube-scheduler's own).
Cluster state comes from the same watch-fed caches as the scheduler; pods this extender bound
count at once, before the watch shows them bound.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.model.pods import PodTable
from schedlab.policies.api import SERVE
from schedlab.policies.placement.base import PodRequest
from schedlab.policies.registry import make_placement
from schedlab.policies.wiring import Policies
from schedlab.serve.journal import Journal
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.binder import binding, pod_path
from schedlab.serve.kubernetes.cache import Cache
from schedlab.serve.kubernetes.objects import PodInfo, parse_node, parse_pod
from schedlab.serve.kubernetes.view import KubeView, build_view

#: kube-scheduler's highest extender score.
MAX_PRIORITY = 10


def request_of(pod: PodInfo) -> PodRequest:
    return PodRequest(pod.cpu_milli, pod.memory_mib, pod.gpus, pod.gpu_milli, ANY_MODEL_MASK)


def _fails(pod: PodInfo, state: ClusterState, node: int) -> str:
    """Why ``pod`` does not fit on node index ``node`` now ("" when it does)."""
    if pod.gpus:
        free = state.gpu_exists[node] & (state.gpu_free[node] >= (pod.gpu_milli or GPU_MILLI))
        if int(free.sum()) < pod.gpus:
            return "Insufficient nvidia.com/gpu"
    if state.cpu_free[node] < pod.cpu_milli:
        return "Insufficient cpu"
    if state.mem_free[node] < pod.memory_mib:
        return "Insufficient memory"
    return ""


class Extender:
    """The extender's decisions over the caches (see the module docstring)."""

    def __init__(
        self,
        api: Any,
        placement: str,
        journal: Journal,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.policies = Policies(SERVE, make_placement(placement, SERVE))
        self.placement = placement
        self.journal = journal
        self.seed = seed
        self.clock = clock
        self.changed = threading.Event()
        self.pods = Cache(api, "/api/v1/pods", "pods", changed=self.changed)
        self.nodes = Cache(api, "/api/v1/nodes", "nodes", changed=self.changed)
        self.assumed: dict[str, dict[str, Any]] = {}  # pod key → the object as bound here
        self.lock = threading.Lock()
        self.requests = 0

    def start(self, watch: bool = True) -> None:
        self.pods.relist()
        self.nodes.relist()
        self._write(
            None, "serve", engine="kubernetes-extender", placement=self.placement, seed=self.seed
        )
        if watch:
            self.pods.start()
            self.nodes.start()

    def stop(self) -> None:
        self.pods.stop()
        self.nodes.stop()

    def view(self) -> KubeView:
        """Every node and bound pod as the caches show them, with the pods bound here and not
        yet seen bound by the watch."""
        objects = {
            f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": o
            for o in self.pods.items()
        }
        for key, obj in list(self.assumed.items()):
            seen = objects.get(key)
            if seen is not None and (seen.get("spec") or {}).get("nodeName"):
                del self.assumed[key]  # the watch caught up
            else:
                objects[key] = obj
        pods = [parse_pod(o) for o in objects.values()]
        return build_view(pods, [parse_node(o) for o in self.nodes.items()], self.clock(), "")

    def _start_policy(self, view: KubeView, pod: PodInfo) -> None:
        """Start the placement on the cluster, its typical pods from the pods there now."""
        known = [p for p in view.pods.values() if p.gpus and not p.terminal] or [pod]
        table = PodTable.from_columns(
            name=[p.key for p in known],
            cpu_milli=[p.cpu_milli for p in known],
            memory_mib=[p.memory_mib for p in known],
            num_gpu=[p.gpus for p in known],
            gpu_milli=[p.gpu_milli for p in known],
        )
        self.policies.start(
            view.cluster, np.random.default_rng(self.seed), target=TargetWorkload.from_pods(table)
        )

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        pod = parse_pod(args.get("Pod") or {})
        names = list(args.get("NodeNames") or [])
        if pod.problem:
            return {
                "NodeNames": [],
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": dict.fromkeys(names, pod.problem),
                "Error": "",
            }
        with self.lock:
            view = self.view()
        where = {n.name: i for i, n in enumerate(view.nodes)}
        allowed = view.masks.of(pod) if view.masks is not None else None
        ok, failed, never = [], {}, {}
        state = view.snapshot.state
        for name in names:
            i = where.get(name)
            if i is None:
                never[name] = "node not known to schedlab"
            elif allowed is not None and not allowed[i]:
                never[name] = (
                    "node(s) didn't match Pod's node affinity/selector or had untolerated taints"
                )
            elif pod.gpus > view.cluster.num_gpus[i]:
                never[name] = (
                    f"node has {int(view.cluster.num_gpus[i])} GPUs, the pod asks for {pod.gpus}"
                )
            elif why := _fails(pod, state, i):
                failed[name] = why
            else:
                ok.append(name)
        return {
            "NodeNames": ok,
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": never,
            "Error": "",
        }

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        pod = parse_pod(args.get("Pod") or {})
        names = list(args.get("NodeNames") or [])
        with self.lock:
            view = self.view()
            self._start_policy(view, pod)
            state = view.snapshot.state
            where = {n.name: i for i, n in enumerate(view.nodes)}
            index = [where[n] for n in names if n in where]
            feasible = np.zeros(view.cluster.size, bool)
            for i in index:
                feasible[i] = not _fails(pod, state, i)
            if not feasible.any():
                return [{"Host": n, "Score": 0} for n in names]
            scores = np.asarray(
                self.policies.placement.score(request_of(pod), state, feasible), dtype=float
            )
        top, low = scores[feasible].max(), scores[feasible].min()
        out = []
        for n in names:
            i = where.get(n)
            if i is None or not feasible[i]:
                out.append({"Host": n, "Score": 0})
                continue
            scaled = MAX_PRIORITY if top == low else (scores[i] - low) / (top - low) * MAX_PRIORITY
            out.append({"Host": n, "Score": round(float(scaled))})
        return out

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        ns, name, node = (
            str(args.get("PodNamespace")),
            str(args.get("PodName")),
            str(args.get("Node")),
        )
        key = f"{ns}/{name}"
        with self.lock:
            objects = {
                f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": o
                for o in self.pods.items()
            }
            obj = objects.get(key)
            if obj is None:
                try:
                    obj = self.api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
                except KubeError as exc:
                    return {"Error": str(exc)}
            pod = parse_pod(obj)
            view = self.view()
            where = {n.name: i for i, n in enumerate(view.nodes)}
            if node not in where:
                return {"Error": f"node {node} is not known to schedlab"}
            i = where[node]
            if why := _fails(pod, view.snapshot.state, i):
                return {"Error": f"{key} no longer fits on {node}: {why}"}
            gpus: tuple[int, ...] = ()
            if pod.gpus:
                self._start_policy(view, pod)
                gpus = tuple(
                    self.policies.placement.pick_gpus(request_of(pod), view.snapshot.state, i)
                )
            try:
                self.api.post(f"{pod_path(pod)}/binding", binding(pod, node, gpus))
            except KubeError as exc:
                self._write(key, "error", attempted="bind", reason=str(exc))
                return {"Error": str(exc)}
            bound = json.loads(json.dumps(obj))
            bound["spec"]["nodeName"] = node
            bound["metadata"].setdefault("annotations", {})["schedlab.io/gpu-devices"] = ",".join(
                map(str, gpus)
            )
            self.assumed[key] = bound
            self._write(
                key,
                "start",
                pods=[key],
                nodes=[node],
                gpu_idx=[list(gpus)],
                gpus=pod.gpus,
                extender=True,
                **({"gpu_milli": pod.gpu_milli} if pod.fractional else {}),
            )
        return {"Error": ""}

    def _write(self, job: str | None, action: str, **fields: Any) -> None:
        self.journal.write(
            {"time": round(self.clock(), 3), "cycle": 0, "job": job, "action": action, **fields}
        )
        self.journal.sync()

    def handle(self, verb: str, body: dict[str, Any]) -> Any:
        self.requests += 1
        if verb == "filter":
            return self.filter(body)
        if verb == "prioritize":
            return self.prioritize(body)
        if verb == "bind":
            return self.bind(body)
        raise KeyError(verb)


def serve_extender(extender: Extender, host: str, port: int) -> ThreadingHTTPServer:
    """Answer the extender verbs on ``host:port`` in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            verb = self.path.strip("/").split("/")[-1]
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                answer = extender.handle(verb, body)
            except KeyError:
                self.send_error(404, f"no verb {verb!r} (filter, prioritize, bind)")
                return
            except (ValueError, TypeError) as exc:
                self.send_error(400, f"bad request: {exc}")
                return
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="extender").start()
    return server
