"""``schedlab replay --sharing``: fractional-GPU pods with QoS classes over time (the sharing
engine), from an Alibaba-format pod list with times.

Writes pods.csv, timeseries.csv, summary.json and config.toml into ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from schedlab import __version__
from schedlab.commands.common import check_inflate, check_seconds, console, stdout
from schedlab.commands.option_scope import refuse_given
from schedlab.energy.options import energy_spec
from schedlab.energy.spec import EnergySpec, config_entries
from schedlab.engines.filler import read_fillers
from schedlab.engines.shared_time import (
    COMPRESSED,
    PACK_MODE,
    TRACE,
    SharingConfig,
    SharingResult,
    run_sharing,
)
from schedlab.errors import InputError
from schedlab.metrics.sharing_metrics import pods_frame, run_summary, timeseries_frame
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.cluster_scale import scale_cluster
from schedlab.model.shared_pods import SharedWorkload
from schedlab.output_dir import staged_dir
from schedlab.policies.api import PACK
from schedlab.policies.registry import DEFAULT_PLACEMENT
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import write_config, write_csv, write_json
from schedlab.traces import alibaba_sharing as sharing_trace
from schedlab.traces.alibaba import read_pod_list
from schedlab.traces.cluster_spec import parse_cluster_spec

if TYPE_CHECKING:
    from schedlab.energy.sharing_meter import SharingEnergyMeter

#: ``--param`` keys of the sharing engine, with how each is read.
BOOL_PARAMS = ("evict_keeps_progress", "ls_protect", "burstable_preemptible")

#: Options of a job replay that the sharing engine has no use for, with why (each is refused).
JOB_REPLAY_ONLY: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("topology", "net_sharing", "net_routing", "net_control"),
        "does not apply to 'replay --sharing': its engine has no network model",
    ),
    (
        ("policy", "backfill", "slot"),
        "does not apply to 'replay --sharing': pods wait in QoS-class order and the placement "
        "is --placement",
    ),
    (
        ("throughputs", "throughputs_fallback", "speed", "resize_overhead"),
        "does not apply to 'replay --sharing': pods run for their recorded time",
    ),
    (
        ("min_runtime", "grace", "time_limit"),
        "does not apply to 'replay --sharing': QoS classes decide evictions there",
    ),
    (("trace_format",), "does not apply to 'replay --sharing': it reads Alibaba pod lists"),
    (("config",), "does not apply to 'replay --sharing': give its options on the command line"),
)


def _mode(text: str) -> tuple[str, float]:
    if text in (TRACE, PACK_MODE):
        return text, 1.0
    name, sep, k = text.partition(":")
    if name == COMPRESSED and sep:
        try:
            return COMPRESSED, float(k)
        except ValueError:
            pass
    raise InputError(f"'--mode' must be trace, compressed:K or pack (got {text!r})")


def _params(items: list[str]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip().lower()
        if not sep or key not in BOOL_PARAMS or value not in ("true", "false"):
            raise InputError(
                f"'--param' with --sharing takes {', '.join(BOOL_PARAMS)} = true|false "
                f"(got {item!r})"
            )
        out[key] = value == "true"
    return out


def config_from_args(args: argparse.Namespace) -> tuple[SharingConfig, float]:
    """The engine config and the compression factor; every refusal before any work."""
    for dests, why in JOB_REPLAY_ONLY:
        refuse_given(args, dests, why)
    mode, k = _mode(args.mode or TRACE)
    if args.cluster is None or args.trace is None:
        raise InputError("--sharing needs --cluster and --trace")
    if args.inflate is not None and mode != PACK_MODE:
        raise InputError("'--inflate' applies to --mode pack only")
    restart = check_seconds("--restart-overhead", args.restart_overhead or 0.0)
    seed = 42 if args.seed is None else args.seed
    if seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {seed})")
    config = SharingConfig(
        policy=args.placement or DEFAULT_PLACEMENT,
        mode=mode,
        seed=seed,
        inflate=check_inflate(1.3 if args.inflate is None else args.inflate),
        overcommit=1.0 if args.overcommit is None else args.overcommit,
        interference=args.interference or 0.0,
        split_cap=10 if args.split_cap is None else args.split_cap,
        restart_overhead=restart,
        plugins=tuple(args.plugin),
        filler=read_fillers(args.filler) if args.filler else (),
        sample=args.sample or 0.0,
        **_params(args.param),
    )
    build(PACK, PolicyChoice(config.policy, plugins=config.plugins))
    return config, k


def load(args: argparse.Namespace, mode: str, k: float) -> tuple[Cluster, SharedWorkload]:
    """Cluster and pods as the load mode wants them."""
    cluster = parse_cluster_spec(args.cluster)
    if args.scale_gpus is not None:
        cluster = scale_cluster(cluster, args.scale_gpus)
    if mode == PACK_MODE:
        if args.window is not None:
            raise InputError("'--window' does not apply to --mode pack")
        return cluster, SharedWorkload.at_time_zero(read_pod_list(args.trace))
    workload = sharing_trace.read_shared_pods(args.trace, keep_unscheduled=args.keep_unscheduled)
    if args.window is not None:
        workload = sharing_trace.window(workload, *sharing_trace.parse_window(args.window))
    if mode == COMPRESSED:
        workload = sharing_trace.compress(workload, k)
    return cluster, workload


def sharing_energy(args: argparse.Namespace, mode: str) -> EnergySpec:
    """The energy options of a sharing run, checked (pack mode has no time to integrate over)."""
    spec = energy_spec(args, {})
    if spec.enabled and mode == PACK_MODE:
        option = "--power-model" if spec.power_model is not None else "--ci"
        raise InputError(
            f"'{option}' needs time, and --mode pack has none (use trace or compressed)"
        )
    return spec


def energy_meter(
    spec: EnergySpec, cluster: Cluster, workload: SharedWorkload
) -> SharingEnergyMeter | None:
    """The observer that measures a sharing run's power, or None when energy is off."""
    if not spec.enabled:
        return None
    from schedlab.energy.sharing_meter import SharingEnergyMeter

    pods = workload.pods
    return SharingEnergyMeter(spec, cluster, pods.num_gpu, pods.gpu_milli)


def run_sharing_command(args: argparse.Namespace) -> int:
    config, k = config_from_args(args)
    energy = sharing_energy(args, config.mode)
    cluster, workload = load(args, config.mode, k)
    meter = energy_meter(energy, cluster, workload)  # an unknown GPU model fails here
    rho = (
        sharing_trace.offered_load(workload, cluster.total_gpus)
        if config.mode != PACK_MODE
        else None
    )
    with staged_dir(args.out) as out:
        with console.status(f"sharing replay under {config.policy}"):
            result = run_sharing(cluster, workload, config, observer=meter)
        summary = write_sharing_run(out, args, result, k, rho, energy, meter)
    stdout.print(one_line(summary))
    console.print(f"wrote {args.out}/pods.csv, timeseries.csv, summary.json, config.toml")
    return 0


def write_sharing_run(
    out: Path,
    args: argparse.Namespace,
    result: SharingResult,
    k: float,
    rho: float | None,
    energy: EnergySpec | None = None,
    meter: SharingEnergyMeter | None = None,
) -> dict[str, object]:
    """Every output file of a sharing run; summary.json last (it marks a complete run)."""
    summary = run_summary(result)
    summary["compression"] = k
    summary["offered_load"] = None if rho is None else round(rho, 4)
    pods, series = pods_frame(result), timeseries_frame(result)
    if meter is not None:
        from schedlab.energy.replay import add_series_columns
        from schedlab.energy.replay import summary_block as energy_block

        gpu_seconds = float(result.held_milli_seconds.sum()) / GPU_MILLI
        summary["energy"] = energy_block(meter, gpu_seconds)
        pods, series = meter.add_pod_columns(pods), add_series_columns(series, meter)
    summary["schedlab_version"] = __version__
    write_csv(out / "pods.csv", pods)
    write_csv(out / "timeseries.csv", series)
    c = result.config
    settings: dict[str, object] = {
        "cluster": str(Path(args.cluster).resolve())
        if Path(args.cluster).exists()
        else args.cluster,
        "trace": str(Path(args.trace).resolve()),
        "placement": c.policy,
        "seed": c.seed,
        "mode": args.mode or TRACE,
        "overcommit": c.overcommit,
        "interference": c.interference,
        "split_cap": c.split_cap or 0,
        "restart_overhead": c.restart_overhead,
    }
    extra = (("window", args.window), ("scale_gpus", args.scale_gpus), ("filler", args.filler))
    for key, value in extra:
        if value is not None:
            settings[key] = value
    if energy is not None:
        settings.update(config_entries(energy))
    write_config(out / "config.toml", settings, f"schedlab {__version__} replay --sharing run")
    write_json(out / "summary.json", summary)
    return summary


def one_line(s: dict[str, object]) -> str:
    """What a user reads first: pods, peak, GPU-hours and the LS / BE queueing delays."""
    cl = s["cluster"]
    classes = s["classes"]
    parts = [
        f"{s['placement']} ({s['mode']}): {s['pods']} pods",
        f"peak {cl['peak_allocated_gpus']:.2f} GPUs at {cl['peak_time']:,.0f} s",  # type: ignore[index]
        f"{cl['gpu_hours']:,.2f} GPU-h",  # type: ignore[index]
    ]
    for q in ("LS", "BE"):
        row = classes.get(q)  # type: ignore[attr-defined]
        if row:
            mean = row["queueing_delay_s"]["mean"]
            parts.append(
                f"{q} wait mean {'n/a' if mean is None else f'{mean:,.1f} s'}, "
                f"{row['evictions']} evictions"
            )
    return "; ".join(parts) + f"; {s['wall_seconds']} s wall"
