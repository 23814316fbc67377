"""``schedlab serve slurm``: run a schedlab policy as the external scheduler of a Slurm cluster."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shlex
import sys
import time
from pathlib import Path

from schedlab.commands.common import add_plugin_option, console
from schedlab.commands.replay import parse_params
from schedlab.commands.serve_kubernetes import add_kubernetes_parser
from schedlab.commands.tenancy_options import add_tenancy_options
from schedlab.errors import InputError, SchedlabError
from schedlab.input_files import check_input_file
from schedlab.output_dir import check_out_file
from schedlab.policies.api import SERVE
from schedlab.policies.catalog import names
from schedlab.policies.wiring import build
from schedlab.results import atomic_write
from schedlab.serve.client import SlurmClient, SubprocessSlurm
from schedlab.serve.config_file import PATH_KEYS, check_port, read_config
from schedlab.serve.import_slurm import TIMINGS, import_slurm, load_sacct
from schedlab.serve.journal import Journal
from schedlab.serve.lock import PartitionLock, default_state_dir
from schedlab.serve.loop import CycleReport, ServeConfig, Server, load_network
from schedlab.serve.metrics import Metrics, serve_metrics
from schedlab.serve.queue_view import queue_path
from schedlab.serve.rederive import rederive
from schedlab.serve.status import as_json, gather, render
from schedlab.serve.topology import ServeTopology
from schedlab.tenancy.replay import spec_from as tenancy_spec

#: Rotated journal files kept by default.
JOURNAL_KEEP = 5
#: Replay's network options that need control of NICs or switches, which Slurm does not give.
SIMULATOR_ONLY = ("--net-control", "--net-routing", "--net-sharing")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="drive a live cluster (Slurm) with a schedlab policy",
        description="Run a schedlab policy as the scheduler of a live cluster.",
    )
    p.set_defaults(run=lambda args: _usage(p))
    targets = p.add_subparsers(title="targets", dest="serve_target", metavar="TARGET")
    slurm = targets.add_parser(
        "slurm",
        help="place held Slurm jobs (ReqNodeList + release), requeue to preempt",
        description=(
            "Every cycle: read jobs and nodes from Slurm (squeue -O, sinfo --json), build the same "
            "snapshot the replay simulator gives a policy, ask the policy, and apply its "
            "decisions with scontrol. Jobs must be submitted held (sbatch --hold); schedlab pins "
            "each to the nodes the policy chose and releases it. Every decision goes to the "
            "journal. State is re-read from Slurm each cycle, so the scheduler may be killed and "
            "restarted at any time. SIGTERM or Ctrl-C stop it after the current cycle."
        ),
        epilog=(
            "examples:\n"
            "  schedlab serve slurm --policy fifo --journal serve.jsonl\n"
            "  schedlab serve slurm --policy fifo --backfill --placement consolidate "
            "--partition gpu --interval 2\n"
            "  schedlab serve slurm --policy tiresias --until-idle --journal run.jsonl\n\n"
            "Slurm is found the usual way (commands on PATH, SLURM_CONF)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    slurm.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="TOML file of these settings (keys: the long options; params as a table); the "
        "command line wins",
    )
    slurm.add_argument(
        "--policy",
        default=None,
        help=f"ordering: {', '.join(names('ordering', SERVE) + names('sizing', SERVE))} (the "
        "others run in simulated time only: 'schedlab policies')",
    )
    slurm.add_argument(
        "--placement",
        default="bestfit",
        help=f"placement (default bestfit): {', '.join(names('placement', SERVE))}",
    )
    slurm.add_argument(
        "--backfill", action="store_true", help="EASY backfill behind a blocked head"
    )
    slurm.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="ordering parameter, e.g. thresholds=3600,36000 (repeatable)",
    )
    slurm.add_argument(
        "--partition",
        default=None,
        help="manage only this partition's jobs and nodes (default: all)",
    )
    slurm.add_argument(
        "--interval", type=float, default=1.0, help="seconds between cycles (default 1)"
    )
    slurm.add_argument(
        "--until-idle",
        action="store_true",
        help="exit (status 0) once nothing is queued, launching or running",
    )
    slurm.add_argument(
        "--journal", type=Path, default=None, help="append-only JSONL record of every decision"
    )
    slurm.add_argument(
        "--journal-max-mib",
        type=float,
        default=None,
        metavar="MIB",
        help="rotate the journal once it reaches this size (JOURNAL.1, .2, …; default never)",
    )
    slurm.add_argument(
        "--journal-keep",
        type=int,
        default=JOURNAL_KEEP,
        metavar="N",
        help="rotated journal files to keep (default 5); readers read them all, oldest first",
    )
    slurm.add_argument("--seed", type=int, default=0, help="random seed (default 0, as replay)")
    slurm.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="answer GET /metrics (Prometheus text) on 127.0.0.1:PORT",
    )
    slurm.add_argument(
        "--shadow",
        action="store_true",
        help="compute and journal the decisions without sending any of them to Slurm",
    )
    slurm.add_argument(
        "--min-runtime",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="a run lasts this long before the policy may preempt it (default 0)",
    )
    slurm.add_argument(
        "--grace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="SIGTERM a victim this long before requeueing it, as Slurm's GraceTime (default 0)",
    )
    slurm.add_argument(
        "--topology",
        default=None,
        metavar="FILE|SPEC",
        help="the network under the partition, for network placements: a Slurm topology.conf, "
        "or any topology 'schedlab replay' takes (hosts = the partition's nodes in order); "
        "default: Slurm's own tree ('scontrol show topology')",
    )
    for option in SIMULATOR_ONLY:  # accepted only to say why they cannot apply here
        slurm.add_argument(option, default=None, help=argparse.SUPPRESS)
    slurm.add_argument("--quiet", action="store_true", help="no per-cycle status lines on stderr")
    slurm.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where the one-scheduler-per-partition lock lives (default: "
        "$XDG_STATE_HOME/schedlab, /var/lib/schedlab for root)",
    )
    add_tenancy_options(slurm)
    slurm.add_argument(
        "--associations",
        action="store_true",
        help="read the queue tree from Slurm's accounts and associations (sacctmgr); a queue "
        "file given with --queues lays its quotas over it",
    )
    add_plugin_option(slurm)
    slurm.set_defaults(run=run_slurm, serve_parser=slurm)
    add_kubernetes_parser(targets)
    add_status_parser(targets)
    add_check_parser(targets)


def add_check_parser(targets: argparse._SubParsersAction) -> None:
    check = targets.add_parser(
        "check",
        help="re-derive every start a journal records: same policy, same nodes?",
        description=(
            "Walk a 'serve slurm' journal and, at every cycle that started jobs, rebuild the "
            "cluster and queue that cycle saw from the journal alone and ask the same policy "
            "again: every journaled start must be the policy's, on the same nodes, and a cycle "
            "that ran to its end must have journaled every start the policy makes. Exit "
            "status 0 when all agree, 1 when some do not (each is listed)."
        ),
        epilog="example:\n  schedlab serve check --journal /var/log/schedlab/serve.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("--journal", type=Path, required=True, help="the scheduler's journal")
    check.set_defaults(run=run_check)


def run_check(args: argparse.Namespace) -> int:
    check_input_file(args.journal, "journal")
    from schedlab.serve.kubernetes.check import check, is_kubernetes_journal

    result = check(args.journal) if is_kubernetes_journal(args.journal) else rederive(args.journal)
    for m in result.mismatches:
        live = ",".join(m.live) if m.live is not None else "not started"
        derived = ",".join(m.derived) if m.derived is not None else "not started"
        print(f"run {m.process} cycle {m.cycle} job {m.job}: live {live}; policy {derived}")
    verdict = "all on the same nodes" if result.agree else f"{len(result.mismatches)} differ"
    print(f"{result.starts} starts in {result.cycles} cycles re-derived: {verdict}")
    return 0 if result.agree else 1


def add_status_parser(targets: argparse._SubParsersAction) -> None:
    status = targets.add_parser(
        "status",
        help="is a scheduler running on this partition, what did it do last, what waits",
        description=(
            "Report on the scheduler of a partition without changing anything: who holds its "
            "lock and since when, its last cycle (from /metrics, else the journal), the "
            "partition's jobs as serve sorts them and the reasons written on held jobs "
            "(from squeue), the queue in the policy's order with each job's reason and "
            "estimated start (from the file serve writes each cycle), and the journal's "
            "size. Give the scheduler's own --config, or the options it runs with. Exit "
            "status 0 when a scheduler runs, 3 when none does."
        ),
        epilog=(
            "examples:\n"
            "  schedlab serve status --config /etc/schedlab/serve.toml\n"
            "  schedlab serve status --partition gpu --journal serve.jsonl --metrics-port 9310\n"
            "  schedlab serve status --partition gpu --json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument(
        "--config", type=Path, default=None, metavar="FILE", help="the scheduler's TOML settings"
    )
    status.add_argument("--partition", default=None, help="the partition (default: all)")
    status.add_argument(
        "--state-dir", type=Path, default=None, help="where the scheduler's lock lives"
    )
    status.add_argument("--journal", type=Path, default=None, help="the scheduler's journal")
    status.add_argument(
        "--metrics-port", type=int, default=None, metavar="PORT", help="its /metrics port"
    )
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    status.add_argument(
        "--kubernetes",
        action="store_true",
        help="the scheduler of 'serve kubernetes': its Lease, pods and queue from the API server",
    )
    status.add_argument("--kubeconfig", type=Path, default=None, help="(--kubernetes)")
    status.add_argument("--context", default=None, help="(--kubernetes) kubeconfig context")
    status.add_argument("--scheduler-name", default=None, help="(--kubernetes) default schedlab")
    status.add_argument("--lease-namespace", default=None, help="(--kubernetes) default default")
    status.add_argument("--lease-name", default=None, help="(--kubernetes) default schedlab")
    status.set_defaults(run=run_status)


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def merge_config_file(args: argparse.Namespace, keys: dict | None = None) -> None:
    """Take every setting the command line left at its default from ``--config`` (``keys``:
    the command's TOML keys, ``serve slurm``'s by default)."""
    if args.config is None:
        return
    settings = read_config(args.config) if keys is None else read_config(args.config, keys)
    parser = args.serve_parser
    for name, value in settings.items():
        if name == "params":
            pairs = [f"{k}={v}" for k, v in value.items()]
            args.param = pairs + list(args.param)
        elif name == "plugins":
            args.plugin = [str(p) for p in value] + list(args.plugin)
        elif name in PATH_KEYS:
            if getattr(args, name) is None:
                setattr(args, name, Path(value))
        elif getattr(args, name) == parser.get_default(name):
            setattr(args, name, value)


def refuse_simulator_options(args: argparse.Namespace) -> None:
    """Paths, sharing rules, priorities and in-network aggregation are the simulator's: Slurm
    only chooses nodes, so serve says so instead of running without them."""
    for option in SIMULATOR_ONLY:
        value = getattr(args, option.removeprefix("--").replace("-", "_"), None)
        if value is not None and not (option != "--net-sharing" and value == "ecmp"):
            # ECMP is what a live fabric does by itself: accepted, as in replay.
            raise InputError(
                f"'{option} {value}' needs control of NICs and switches, which Slurm does not "
                "give (serve only chooses nodes): it runs in 'schedlab replay' only"
            )


def config_from_args(args: argparse.Namespace) -> ServeConfig:
    merge_config_file(args)
    refuse_simulator_options(args)
    if not args.policy:
        raise InputError("'--policy' is required (on the command line or in --config)")
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    if not (args.interval > 0 and math.isfinite(args.interval)):
        raise InputError(f"'--interval' must be > 0 seconds and finite (got {args.interval})")
    if args.metrics_port is not None:
        check_port(args.metrics_port, "'--metrics-port'")
    mib = args.journal_max_mib
    if mib is not None and not (0 < mib < float("inf")):
        raise InputError(f"'--journal-max-mib' must be > 0 (got {mib})")
    if args.journal_keep < 1:
        raise InputError(f"'--journal-keep' must be ≥ 1 (got {args.journal_keep})")
    # Journal rotation without a journal, or a count of rotated files without rotation, would
    # change nothing.
    if mib is not None and args.journal is None:
        raise InputError("'--journal-max-mib' needs '--journal'")
    if args.journal_keep != JOURNAL_KEEP and mib is None:
        raise InputError("'--journal-keep' needs '--journal-max-mib' (nothing rotates without it)")
    for name in ("min_runtime", "grace"):
        value = getattr(args, name)
        if not 0 <= value < float("inf"):
            raise InputError(f"'--{name.replace('_', '-')}' must be ≥ 0 seconds (got {value})")
    config = ServeConfig(
        policy=args.policy,
        placement=args.placement,
        backfill=args.backfill,
        params=parse_params(args.param),
        partition=args.partition,
        interval=args.interval,
        seed=args.seed,
        until_idle=args.until_idle,
        plugins=tuple(args.plugin),
        min_runtime=args.min_runtime,
        grace=args.grace,
        shadow=args.shadow,
        topology=args.topology,
        tenancy=tenancy_spec(lambda key: getattr(args, key, None)),
        associations=args.associations,
    )
    build(SERVE, config.choice)  # every refusal before the journal is opened
    return config


def run_slurm(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.journal is not None:  # a journal that can never be written is bad input, lock or not
        check_out_file(args.journal, "'--journal'")
    client = SubprocessSlurm()
    # A network placement without a network is refused before anything else happens.
    network = load_network(config, client, build(SERVE, config.choice).placement)
    # The lock comes before the journal is opened: a second instance changes nothing at all.
    state_dir = args.state_dir or default_state_dir()
    with PartitionLock(state_dir, config.partition):
        return _serve(args, config, client, network, queue_path(state_dir, config.partition))


def _serve(
    args: argparse.Namespace,
    config: ServeConfig,
    client: SlurmClient,
    network: ServeTopology,
    queue_file: Path,
) -> int:
    metrics = Metrics()
    endpoint = None
    if args.metrics_port is not None:
        try:
            endpoint = serve_metrics(metrics, args.metrics_port)
        except OSError as exc:
            raise InputError(
                f"'--metrics-port' {args.metrics_port}: cannot listen on 127.0.0.1 ({exc.strerror})"
            ) from None
    limit = args.journal_max_mib
    max_bytes = None if limit is None else max(1, int(limit * 2**20))
    fresh = args.journal is not None and not args.journal.exists()
    journal = Journal(args.journal, max_bytes=max_bytes, keep=args.journal_keep)
    try:
        return _serve_with(args, config, client, network, queue_file, journal, metrics)
    except SchedlabError:
        if fresh:  # refused before a record was written: leave no empty journal behind
            journal.close()
            with contextlib.suppress(OSError):
                if args.journal.stat().st_size == 0:
                    args.journal.unlink()
        raise
    finally:
        if endpoint is not None:
            endpoint.shutdown()


def _serve_with(
    args: argparse.Namespace,
    config: ServeConfig,
    client: SlurmClient,
    network: ServeTopology,
    queue_file: Path,
    journal: Journal,
    metrics: Metrics,
) -> int:
    """The serving loop proper, once the journal is open."""
    server = Server(client, config, journal, network=network, queue_file=queue_file)

    def report(r: CycleReport) -> None:
        metrics.update(r)
        if args.quiet or not (r.started or r.errors or not r.ok):
            return
        if not r.ok:
            console.print(f"cycle {r.cycle}: could not read Slurm (see the journal)")
            return
        console.print(
            f"cycle {r.cycle}: {r.started} started, {r.queued - r.started} queued, "
            f"{r.running} running" + (f", {r.errors} failed (see the journal)" if r.errors else "")
        )

    if not args.quiet:
        where = f"partition {config.partition}" if config.partition else "all partitions"
        console.print(
            f"serving Slurm ({where}) with {config.label}/{config.placement}, "
            f"every {config.interval:g} s" + (f"; journal {args.journal}" if args.journal else "")
        )
    status = server.run(report)
    if not args.quiet:
        console.print(f"stopped after {server.cycle_no} cycles ({server.stop_reason})")
    return status


def run_status(args: argparse.Namespace) -> int:
    if args.kubernetes:
        from schedlab.commands.serve_kubernetes import run_kube_status

        return run_kube_status(args)
    settings = read_config(args.config) if args.config is not None else {}
    partition = args.partition or settings.get("partition")
    state_dir = args.state_dir or (
        Path(settings["state_dir"]) if "state_dir" in settings else default_state_dir()
    )
    journal = args.journal or (Path(settings["journal"]) if "journal" in settings else None)
    port = args.metrics_port if args.metrics_port is not None else settings.get("metrics_port")
    if args.metrics_port is not None:
        check_port(args.metrics_port, "'--metrics-port'")
    now = time.time()
    status = gather(state_dir, partition, SubprocessSlurm(), journal, port, now)
    if args.json:
        print(json.dumps(as_json(status), indent=2, default=str))
    else:
        print("\n".join(render(status, now)))
    return 0 if status.running else 3


# -- schedlab trace import-slurm (registered by the trace command) ----------------------------
def add_import_slurm_parser(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "import-slurm",
        help="turn a 'serve slurm' journal and sacct -c records into a workload CSV",
        description=(
            "Build a schedlab workload (generic CSV) from the journal of a 'schedlab serve slurm' "
            "run and Slurm's completion records, so the run can be replayed with "
            "'schedlab replay' under the same policy. GPU counts and placements come from the "
            "journal; run times from the completion records."
        ),
        epilog=(
            "examples:\n"
            "  schedlab trace import-slurm --journal serve.jsonl --out run.csv\n"
            "  sacct -c -a -P -S 2024-01-01 -o JobID,State,Start,End,NodeList > runs.txt\n"
            "  schedlab trace import-slurm --journal serve.jsonl --sacct runs.txt "
            "--timing observed --out run.csv"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--journal", type=Path, required=True, help="the serve journal (JSONL)")
    p.add_argument(
        "--sacct",
        type=Path,
        default=None,
        help="saved 'sacct -c -P' output or the jobcomp file (default: run 'sacct -c' here)",
    )
    p.add_argument(
        "--timing",
        choices=TIMINGS,
        default="slurm",
        help="slurm: submit times and run times from Slurm (default); observed: the scheduler's "
        "own cycle times, so a replay meets the same decision points",
    )
    p.add_argument("--out", type=Path, required=True, help="workload CSV to write")
    p.set_defaults(run=run_import_slurm)


def topology_file(out: Path) -> Path:
    """Where import-slurm keeps a live run's switch tree for the replay: beside the workload."""
    return out.with_name(out.stem + ".topology.toml")


def run_import_slurm(args: argparse.Namespace) -> int:
    check_input_file(args.journal, "journal")  # before sacct runs
    check_out_file(args.out)
    result = import_slurm(args.journal, load_sacct(args.sacct), args.timing)
    topology = shlex.quote(result.topology_spec) if result.topology_spec else ""
    if result.topology_toml:
        tree = topology_file(args.out)
        check_out_file(tree)
        atomic_write(tree, lambda fh: fh.write(result.topology_toml))
        topology = shlex.quote(str(tree))
    atomic_write(args.out, lambda fh: result.frame.to_csv(fh, index=False))
    skipped = ", ".join(f"{n} {why}" for why, n in result.left_out.items())
    console.print(
        f"wrote {args.out}: {len(result.frame)} jobs"
        + (f" (left out: {skipped})" if skipped else ""),
        soft_wrap=True,
    )
    if result.cluster:
        policy = result.policy.removesuffix("+backfill")
        backfill = " --backfill" if result.policy.endswith("+backfill") else ""
        plugins = "".join(f" --plugin {p}" for p in result.plugins)
        params = "".join(f" --param {shlex.quote(f'{k}={v}')}" for k, v in result.params.items())
        network = f" --topology {topology}" if topology else ""
        if result.min_runtime:
            params += f" --min-runtime {result.min_runtime:g}"
        if result.grace:
            params += f" --grace {result.grace:g}"
        console.print(
            f"replay it: schedlab replay --cluster {result.cluster}{network} --trace {args.out} "
            f"--policy {policy}{backfill}{params} --placement {result.placement}{plugins} "
            "--out <folder>",
            soft_wrap=True,
        )
        if result.topology_toml:
            console.print(f"wrote {topology_file(args.out)}: the live run's switch tree")
    return 0
