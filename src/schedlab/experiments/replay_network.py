"""The network side of a replay run: build the engine's network model from the run's options, and
turn its record into jobs.csv columns, timeseries.csv columns and the summary's ``network`` block.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.engines.replay import ReplayRecord
from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation
from schedlab.network.generators import parse_topology
from schedlab.network.jobcomm import job_comm
from schedlab.network.metrics import utilisation_by_tier, window_mean
from schedlab.network.options import check_routing, check_rule
from schedlab.network.replay_state import BaseTime, NetworkModel, PlannedComm
from schedlab.network.routing import Routing
from schedlab.network.topology import SPINE, Topology, cluster_for
from schedlab.network.topology_limits import unreachable_leaves
from schedlab.perf.models import PerfModel, ThroughputTable, interpolate
from schedlab.traces.formats import detect_format


def topology_cluster(topology: str, cluster: Cluster | None) -> tuple[Topology, Cluster]:
    """The topology and the cluster to simulate on it (built from the topology when no
    ``--cluster`` is given; checked against it otherwise)."""
    topo = parse_topology(topology)
    if topo.ocs is not None and not len(topo.fabric_src):
        topo = topo.with_circuits(static_circuits(topo))
    return topo, cluster_for(topo, cluster)


def check_static_wiring(topo: Topology, spec: str, placement: object) -> None:
    """Refuse an optical switch whose static wiring (:func:`static_circuits`) leaves hosts
    unable to reach each other, unless the placement sets up each job's circuits itself (as
    ocs-vclos does): the first job across two islands would have no route."""
    if topo.ocs is None or getattr(placement, "needs_ocs", False):
        return
    apart = unreachable_leaves(topo.num_switches, topo.fabric_src, topo.fabric_dst, topo.host_leaf)
    if apart is not None:
        a, b = (topo.switch_names[s] for s in apart)
        spines = int((topo.switch_level == SPINE).sum())
        raise InputError(
            f"the static OCS wiring of topology spec {spec!r} leaves leaf {b!r} unable to reach "
            f"{a!r}: each leaf's {topo.ocs.leaf_ports} uplink ports are dealt round-robin over "
            f"{spines} spines (make hosts_per_leaf × m at least 'spines', or place with a policy "
            "that sets up circuits, such as ocs-vclos)"
        )


def static_circuits(topo: Topology) -> list[tuple[int, int]]:
    """The OCS wiring replay starts from (no policy reconfigures it yet): the leaves' uplink
    ports dealt round-robin over the spines, leaf by leaf, so each spine gets its port count and
    a leaf with at least as many ports as there are spines reaches every spine."""
    assert topo.ocs is not None
    spines = [int(s) for s in np.flatnonzero(topo.switch_level == SPINE)]
    out: list[tuple[int, int]] = []
    k = 0
    for leaf in topo.leaves.tolist():
        for _ in range(topo.ocs.leaf_ports):
            out.append((int(leaf), spines[k % len(spines)]))
            k += 1
    return out


#: Why ``--topology`` and measured ``--throughputs`` tables do not go together.
MEASURED_TABLES_WITH_TOPOLOGY = (
    "--topology works with trace durations or '--throughputs builtin': measured "
    "throughput tables already include communication"
)


def base_time(perf: PerfModel, jobs: JobTable, compute: BaseTime, builtin: bool) -> BaseTime | None:
    """The iteration time a job's performance-model rate already assumes on n GPUs.

    Trace durations are run times measured with the trace's own network: None, for the network
    state's reference time (the job alone on a compact placement, see
    :mod:`schedlab.network.reference`), so that alone there a job takes its trace duration. The
    builtin scaling model's rate includes its own all-reduce term, which the network replaces:
    its own iteration time 1/rate. Measured tables include a communication time the model cannot
    take apart, so they are refused.
    """
    if isinstance(perf, ThroughputTable):
        if not builtin:
            raise InputError(MEASURED_TABLES_WITH_TOPOLOGY)

        def from_table(job: int, gpus: int) -> float:
            curve = perf.curve(jobs, job)
            if curve is None:
                return compute(job, gpus)
            rate = interpolate(curve, gpus)
            return 1.0 / rate if rate > 0 else compute(job, gpus)

        return from_table
    return None


def _is_generic(trace: str, fmt: str | None) -> bool:
    """Only schedlab's own format carries the per-job communication columns."""
    if fmt is not None:
        return fmt == "generic"
    return Path(trace).is_file() and detect_format(trace) == "generic"


def network_model(
    topo: Topology,
    jobs: JobTable,
    perf: PerfModel,
    *,
    rule: str,
    routing: str,
    seed: int,
    trace: str | None,
    fmt: str | None,
    builtin: bool,
    control: str = "",
    planned: Callable[[JobTable, int, Allocation], PlannedComm | None] | None = None,
) -> NetworkModel:
    """The engine's network model for one run (``jobs`` in the engine's order); ``planned``
    gives LLM jobs' plan traffic (see :class:`~schedlab.network.replay_state.PlannedComm`)."""
    comm = job_comm(jobs, seed, trace if trace is not None and _is_generic(trace, fmt) else None)

    def compute(job: int, gpus: int) -> float:
        return comm.compute(job, int(jobs.num_gpus[job]), gpus)

    return NetworkModel(
        topology=topo,
        rule=check_rule(rule),
        routing=Routing("policy" if control == "crux" else check_routing(routing), seed=seed),
        comm=comm,
        base_time=base_time(perf, jobs, compute, builtin),
        control=control,
        planned=planned,
    )


def add_job_columns(frame: pd.DataFrame, record: ReplayRecord) -> pd.DataFrame:
    """jobs.csv's network columns (spec §6), after the existing ones."""
    net = record.network
    if net is None:
        return frame
    ran = net.collective != ""
    out = frame.copy()
    out["hosts"] = np.where(ran, net.hosts, 0)
    out["leaves"] = np.where(ran, net.leaves, 0)
    out["collective"] = net.collective
    out["comm_share"] = net.comm_share
    out["cross_host_bytes"] = net.cross_host_bytes
    out["cross_leaf_bytes"] = net.cross_leaf_bytes
    out["net_slowdown"] = net.net_slowdown
    return out


def add_series_columns(series: pd.DataFrame, record: ReplayRecord) -> pd.DataFrame:
    """timeseries.csv's network columns: machines, fragmentation, compute and link utilisation."""
    net = record.network
    if net is None:
        return series
    out = series.copy()
    out["machines_used"] = net.ts_machines_used
    out["machine_frag_rate"] = net.ts_machine_frag_rate
    out["compute_util"] = net.ts_compute_util
    for tier, values in net.ts_link_util.items():
        out[f"link_util_{tier.replace('-', '_')}"] = values
    return out


def _time_average(series: pd.DataFrame, column: str | np.ndarray) -> float | None:
    """Mean of a series column (or values aligned with the series) over the run's decision
    points, first to last."""
    t = series["time"].to_numpy(dtype=np.float64)
    if len(t) < 2 or t[-1] <= t[0]:
        return None
    v = series[column].to_numpy(dtype=np.float64) if isinstance(column, str) else column
    mean = window_mean(t, v, float(t[0]), float(t[-1]))
    return mean if np.isfinite(mean) else None


def _stats(values: np.ndarray) -> dict[str, float | None]:
    v = values[np.isfinite(values)]
    if not len(v):
        return {"mean": None, "p50": None, "p99": None}
    return {
        "mean": float(v.mean()),
        "p50": float(np.percentile(v, 50)),
        "p99": float(np.percentile(v, 99)),
    }


def network_block(
    record: ReplayRecord, jobs: pd.DataFrame, series: pd.DataFrame
) -> dict[str, object]:
    """summary.json's ``network`` block (spec §6)."""
    net = record.network
    assert net is not None
    done = jobs["status"] == "completed"
    submit = jobs["submit_time"].to_numpy(dtype=np.float64)
    start = jobs["start_time"].to_numpy(dtype=np.float64)
    end = jobs["end_time"].to_numpy(dtype=np.float64)
    jwt = start - submit
    jrt = np.where(done, end - start, np.nan)
    jct = np.where(done, end - submit, np.nan)
    started = np.isfinite(jwt)
    source = {}
    if net.routing == "source":  # hops where no free reserved path existed
        source["source_shared_hops"] = int(net.extra["shared_hops"])
    if "circuit_moves" in net.extra:  # running jobs re-wired to make room (ocs-vclos migrate)
        source["circuit_moves"] = int(net.extra["circuit_moves"])
    if "crux_plans" in net.extra:  # --net-control crux: how often it re-planned and re-routed
        source["control"] = "crux"
        source["crux_plans"] = int(net.extra["crux_plans"])
        source["crux_reroutes"] = int(net.extra["crux_reroutes"])
    return {
        "topology": net.topology.name,
        "sharing": net.rule,
        "routing": net.routing,
        "machines_used": _time_average(series, "machines_used"),
        "machine_frag_rate": _time_average(series, "machine_frag_rate"),
        "machine_frag_share": _time_average(series, net.ts_machine_frag_share),
        "compute_util": _time_average(series, "compute_util"),
        "link_utilisation": utilisation_by_tier(net.topology, net.link_util_avg),
        "jct": _stats(jct),
        "jrt": _stats(jrt),
        "jwt": _stats(jwt),
        "share_waiting_over_10s": float((jwt[started] > 10).mean()) if started.any() else None,
        "comm_share": _stats(net.comm_share),
        "net_slowdown": _stats(net.net_slowdown),
        "cross_host_bytes": float(np.nansum(net.cross_host_bytes)),
        "cross_leaf_bytes": float(np.nansum(net.cross_leaf_bytes)),
        "footprints": net.footprints,
        "solves": net.solves,
        "solver_rounds": net.solver_rounds,
        **source,
    }
