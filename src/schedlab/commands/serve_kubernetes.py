"""``schedlab serve kubernetes``: run a schedlab policy as a Kubernetes scheduler.

Only the parser lives at import time; the HTTP client and everything Kubernetes is imported when
the command runs, so no other command pays for it.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from schedlab.commands.common import add_plugin_option, console
from schedlab.commands.tenancy_options import add_tenancy_options
from schedlab.errors import InputError
from schedlab.policies.registry import ordering_names, placement_names


def add_kubernetes_parser(targets: argparse._SubParsersAction) -> None:
    k = targets.add_parser(
        "kubernetes",
        help="schedule pods that name schedlab as their scheduler (pods/binding, Eviction API)",
        description=(
            "Watch the pods whose spec.schedulerName is schedlab's (--scheduler-name) and the "
            "nodes, build at every change the snapshot the replay simulator gives a policy, ask "
            "the policy, and bind its starts through pods/binding (gangs all or nothing; GPU "
            "devices written back as an annotation); preempt through the Eviction API. Pods "
            "that wait say why on their PodScheduled condition. One instance acts at a time "
            "(a Lease); state is re-read from the API server, so it may be killed and "
            "restarted at any time. SIGTERM or Ctrl-C stop it after the current cycle."
        ),
        epilog=(
            "examples:\n"
            "  schedlab serve kubernetes --policy fifo --placement fgd --journal serve.jsonl\n"
            "  schedlab serve kubernetes --config /etc/schedlab/serve.toml\n\n"
            "The API server is found the usual way (--kubeconfig, KUBECONFIG, ~/.kube/config, "
            "or the pod's service account)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k.add_argument("--config", type=Path, default=None, metavar="FILE", help="TOML settings")
    k.add_argument("--policy", default=None, help=f"ordering: {', '.join(ordering_names())}")
    k.add_argument(
        "--placement", default="bestfit", help=f"placement: {', '.join(placement_names())}"
    )
    k.add_argument("--backfill", action="store_true", help="EASY backfill behind a blocked head")
    k.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    k.add_argument(
        "--scheduler-name",
        default="schedlab",
        help="the spec.schedulerName of the pods to schedule (default schedlab)",
    )
    k.add_argument("--interval", type=float, default=1.0, help="least seconds between cycles")
    k.add_argument("--until-idle", action="store_true", help="exit once nothing waits or runs")
    k.add_argument("--journal", type=Path, default=None, help="append-only JSONL journal")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--metrics-port", type=int, default=None, metavar="PORT")
    k.add_argument("--shadow", action="store_true", help="decide and journal; bind nothing")
    k.add_argument("--min-runtime", type=float, default=0.0, metavar="SECONDS")
    k.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="termination grace period of evicted pods (default 30)",
    )
    k.add_argument("--kubeconfig", type=Path, default=None, metavar="FILE")
    k.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    k.add_argument("--lease-namespace", default="default", help="namespace of the Lease")
    k.add_argument("--lease-name", default="schedlab", help="name of the Lease")
    k.add_argument("--lease-seconds", type=float, default=15.0, help="lease duration")
    k.add_argument("--identity", default=None, help="this instance's Lease identity")
    k.add_argument(
        "--topology-labels",
        default="schedlab.io/leaf,schedlab.io/spine",
        metavar="KEYS",
        help="node label keys naming the network's levels, lowest first, for network "
        "placements (default schedlab.io/leaf,schedlab.io/spine)",
    )
    k.add_argument(
        "--extender",
        action="store_true",
        help="answer kube-scheduler's extender calls (filter, prioritize, bind) with --placement "
        "instead of scheduling pods itself",
    )
    k.add_argument(
        "--listen",
        default=None,
        metavar="HOST:PORT",
        help="where --extender listens (default 127.0.0.1:8888)",
    )
    k.add_argument("--quiet", action="store_true")
    add_tenancy_options(k)
    k.add_argument(
        "--queues-from-cluster",
        action="store_true",
        help="read the queues from the cluster: Kueue ClusterQueues, LocalQueues and Cohorts, "
        "KAI Queues, namespace ResourceQuotas (requests.nvidia.com/gpu, as a limit); a queue "
        "file given with --queues lays its quotas over them",
    )
    add_plugin_option(k)
    k.set_defaults(run=run_kubernetes, serve_parser=k)


def _config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from schedlab.commands.replay import parse_params
    from schedlab.commands.serve import merge_config_file
    from schedlab.policies.api import SERVE
    from schedlab.policies.wiring import build
    from schedlab.serve.config_file import KUBE_KEYS, check_port
    from schedlab.serve.kubernetes.lease import default_identity
    from schedlab.serve.kubernetes.server import KubeConfig
    from schedlab.tenancy.live import KUBE_ATTRIBUTES
    from schedlab.tenancy.replay import spec_from as tenancy_spec
    from schedlab.tenancy.serve import wrap_live

    merge_config_file(args, KUBE_KEYS)
    if not args.policy:
        raise InputError("'--policy' is required (on the command line or in --config)")
    if not (args.interval > 0 and math.isfinite(args.interval)):
        raise InputError(f"'--interval' must be > 0 seconds and finite (got {args.interval})")
    for name in ("min_runtime", "grace"):
        value = getattr(args, name)
        if not 0 <= value < float("inf"):
            raise InputError(f"'--{name.replace('_', '-')}' must be ≥ 0 seconds (got {value})")
    if not 2 <= args.lease_seconds < float("inf"):
        raise InputError(f"'--lease-seconds' must be ≥ 2 and finite (got {args.lease_seconds})")
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    if args.metrics_port is not None:
        check_port(args.metrics_port, "'--metrics-port'")
    if args.listen is not None:
        raise InputError("'--listen' is where '--extender' listens: it needs '--extender'")
    config = KubeConfig(
        policy=args.policy,
        placement=args.placement,
        backfill=args.backfill,
        params=parse_params(args.param),
        plugins=tuple(args.plugin),
        scheduler_name=args.scheduler_name,
        interval=args.interval,
        seed=args.seed,
        until_idle=args.until_idle,
        shadow=args.shadow,
        min_runtime=args.min_runtime,
        grace=args.grace,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_seconds=args.lease_seconds,
        identity=args.identity or default_identity(),
        topology_labels=tuple(k.strip() for k in args.topology_labels.split(",") if k.strip()),
        tenancy=tenancy_spec(lambda key: getattr(args, key, None)),
        queues_from_cluster=bool(args.queues_from_cluster),
    )
    if config.queues_from_cluster and not config.tenancy.enabled:
        raise InputError("'--queues-from-cluster' needs '--tenancy POLICY' or '--queues FILE'")
    # Every refusal (the policy, the queue file) before anything is opened.
    wrap_live(config.tenancy, build(SERVE, config.choice), None, KUBE_ATTRIBUTES, ("queue",))
    return config


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise InputError(f"'--listen' must be HOST:PORT (got {text!r})")
    return host or "127.0.0.1", int(port)


def run_extender(args: argparse.Namespace) -> int:
    import signal
    import threading

    from schedlab.commands.serve import merge_config_file
    from schedlab.output_dir import check_out_file
    from schedlab.policies.api import SERVE
    from schedlab.policies.registry import make_placement
    from schedlab.serve.config_file import KUBE_KEYS
    from schedlab.serve.journal import Journal
    from schedlab.serve.kubernetes.api import KubeAPI, KubeError
    from schedlab.serve.kubernetes.extender import Extender, serve_extender
    from schedlab.serve.kubernetes.kubeconfig import load_credentials

    merge_config_file(args, KUBE_KEYS)
    listen = args.listen or "127.0.0.1:8888"
    host, port = listen_address(listen)
    make_placement(args.placement, SERVE)  # a bad name before anything is opened
    if args.journal is not None:
        check_out_file(args.journal, "'--journal'")
    api = KubeAPI(load_credentials(args.kubeconfig, args.context))
    extender = Extender(api, args.placement, Journal(args.journal), seed=args.seed)
    try:
        extender.start()
    except KubeError as exc:
        raise InputError(f"Kubernetes API: {exc}") from None
    try:
        server = serve_extender(extender, host, port)
    except OSError as exc:
        raise InputError(f"'--listen' {listen}: cannot listen ({exc.strerror})") from None
    done = threading.Event()
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    if not args.quiet:
        console.print(f"kube-scheduler extender on {host}:{port} with placement {args.placement}")
    try:
        done.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        server.shutdown()
        extender.stop()
        extender.journal.close()
        api.close()
    return 0


def run_kubernetes(args: argparse.Namespace) -> int:
    if args.extender:
        if args.tenancy or args.queues or args.queues_from_cluster:
            raise InputError(
                "'--tenancy'/'--queues' need schedlab to schedule the pods; with '--extender' "
                "kube-scheduler does (its placement only is schedlab's)"
            )
        return run_extender(args)
    from schedlab.output_dir import check_out_file
    from schedlab.serve.journal import Journal
    from schedlab.serve.kubernetes.api import KubeAPI, KubeError
    from schedlab.serve.kubernetes.kubeconfig import load_credentials
    from schedlab.serve.kubernetes.server import KubeServer
    from schedlab.serve.loop import CycleReport
    from schedlab.serve.metrics import Metrics, serve_metrics

    config = _config(args)
    if args.journal is not None:
        check_out_file(args.journal, "'--journal'")
    api = KubeAPI(load_credentials(args.kubeconfig, args.context))
    metrics = Metrics()
    endpoint = None
    if args.metrics_port is not None:
        try:
            endpoint = serve_metrics(metrics, args.metrics_port)
        except OSError as exc:
            raise InputError(
                f"'--metrics-port' {args.metrics_port}: cannot listen on 127.0.0.1 ({exc.strerror})"
            ) from None
    server = KubeServer(api, config, Journal(args.journal))

    def report(r: CycleReport) -> None:
        metrics.update(r)
        if not args.quiet and (r.started or r.errors):
            console.print(
                f"cycle {r.cycle}: {r.started} started, {r.queued} queued, {r.running} running"
                + (f", {r.errors} failed (see the journal)" if r.errors else "")
            )

    if not args.quiet:
        console.print(
            f"serving Kubernetes ({api.creds.server}, pods of scheduler "
            f"'{config.scheduler_name}') with {config.label}/{config.placement}"
            + (f"; journal {args.journal}" if args.journal else "")
        )
    try:
        status = server.run(report)
    except KubeError as exc:
        raise InputError(f"Kubernetes API: {exc}") from None
    finally:
        if endpoint is not None:
            endpoint.shutdown()
        api.close()
    if not args.quiet:
        console.print(f"stopped after {server.cycle_no} cycles ({server.stop_reason})")
    return status


# -- schedlab trace import-kubernetes (registered by the trace command) -----------------------
def add_import_kubernetes_parser(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "import-kubernetes",
        help="turn a 'serve kubernetes' journal into a workload CSV",
        description=(
            "Build a schedlab workload (generic CSV) from the journal of a 'schedlab serve "
            "kubernetes' run, on the scheduler's own clock (arrivals at the cycle that first saw "
            "a job, run times from its bind to the cycle that saw it end), so 'schedlab replay' "
            "meets the live run's decision points. Prints the replay command."
        ),
        epilog="example:\n  schedlab trace import-kubernetes --journal serve.jsonl --out run.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--journal", type=Path, required=True, help="the serve journal (JSONL)")
    p.add_argument("--out", type=Path, required=True, help="workload CSV to write")
    p.set_defaults(run=run_import_kubernetes)


def run_import_kubernetes(args: argparse.Namespace) -> int:
    import shlex

    from schedlab.commands.serve import topology_file
    from schedlab.input_files import check_input_file
    from schedlab.output_dir import check_out_file
    from schedlab.results import atomic_write
    from schedlab.serve.kubernetes.import_run import import_kubernetes, replay_command

    check_input_file(args.journal, "journal")
    check_out_file(args.out)
    result = import_kubernetes(args.journal)
    tree = None
    if result.serve.get("topology_toml"):
        tree = topology_file(args.out)
        check_out_file(tree)
        text = str(result.serve["topology_toml"])
        atomic_write(tree, lambda fh: fh.write(text))
    atomic_write(args.out, lambda fh: result.frame.to_csv(fh, index=False))
    skipped = ", ".join(f"{n} {why}" for why, n in result.left_out.items())
    console.print(
        f"wrote {args.out}: {len(result.frame)} jobs"
        + (f" (left out: {skipped})" if skipped else ""),
        soft_wrap=True,
    )
    command = replay_command(result, Path(shlex.quote(str(args.out))), tree)
    console.print(f"replay it: {command}", soft_wrap=True)
    return 0


def run_kube_status(args: argparse.Namespace) -> int:
    """``serve status --kubernetes``: 0 when a scheduler holds the Lease, 3 when none does."""
    import json
    import time

    from schedlab.serve.config_file import KUBE_KEYS, read_config
    from schedlab.serve.kubernetes.api import KubeAPI, KubeError
    from schedlab.serve.kubernetes.kubeconfig import load_credentials
    from schedlab.serve.kubernetes.status import gather, render, running

    settings = read_config(args.config, KUBE_KEYS) if args.config is not None else {}

    def pick(name: str, default: object) -> object:
        value = getattr(args, name)
        return value if value is not None else settings.get(name, default)

    journal = pick("journal", None)
    kubeconfig = pick("kubeconfig", None)
    api = KubeAPI(load_credentials(Path(str(kubeconfig)) if kubeconfig else None, args.context))
    try:
        status = gather(
            api,
            str(pick("scheduler_name", "schedlab")),
            (str(pick("lease_namespace", "default")), str(pick("lease_name", "schedlab"))),
            Path(str(journal)) if journal else None,
            pick("metrics_port", None),  # type: ignore[arg-type]
            time.time(),
        )
    except KubeError as exc:
        raise InputError(f"Kubernetes API: {exc}") from None
    finally:
        api.close()
    if args.json:
        print(json.dumps(status, indent=2, default=str))
    else:
        print("\n".join(render(status)))
    return 0 if running(status) else 3
