"""One site of a federation: its cluster, replay engine, power meter, carbon series and prices.

The engine is the ordinary replay engine (:mod:`schedlab.engines.replay`) stepped from outside:
the federation injects the jobs that arrive at the site and withdraws copies that started
elsewhere. A :class:`SiteObserver` stands between the engine and the energy meter to bill
GPU-seconds at the site's price per model and to tell the federation which jobs just started.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from schedlab.energy.carbon import CarbonSeries
from schedlab.energy.meter import EnergyMeter
from schedlab.energy.power import ClusterPower
from schedlab.energy.spec import EnergySpec
from schedlab.engines.replay import ReplayConfig, ReplayEngine, _Run
from schedlab.errors import InputError
from schedlab.federation.config import Federation, Place
from schedlab.model.cluster import GPU_MODELS, Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation
from schedlab.perf.models import PerfModel
from schedlab.policies.api import REPLAY, never_fits
from schedlab.policies.wiring import PolicyChoice, build


class SiteObserver:
    """Forwards the engine's notifications to the meter; bills each job's GPU-seconds at the
    price of the GPUs it holds; lists the jobs placed since the federation last looked."""

    def __init__(self, meter: EnergyMeter, usd_per_gpu_s: np.ndarray, jobs: int) -> None:
        self.meter = meter
        self.price = usd_per_gpu_s  # per node
        self.compute_usd = np.zeros(jobs)
        self.rate: dict[int, tuple[float, float]] = {}  # job → ($/s, since)
        self.placed_now: list[int] = []

    def _rate(self, allocation: Allocation) -> float:
        return float(sum(len(gpus) * self.price[node] for node, gpus in allocation))

    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        self.meter.placed(now, job, allocation)
        self.rate[job] = (self._rate(allocation), now)
        self.placed_now.append(job)

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        self.meter.released(now, job, allocation)
        rate, since = self.rate.pop(job, (0.0, now))
        self.compute_usd[job] += rate * (now - since)

    def tick(self, now: float) -> None:
        self.meter.tick(now)

    def finish(self, end: float) -> None:
        self.meter.finish(end)
        for job, (rate, since) in list(self.rate.items()):
            self.compute_usd[job] += rate * (end - since)
            self.rate[job] = (rate, end)


@dataclass
class Site:
    index: int
    place: Place
    cluster: Cluster
    run: _Run
    perf: PerfModel
    observer: SiteObserver
    ci: CarbonSeries
    pue: float
    #: $ per GPU-hour and watts of one busy GPU of each GPU model the site has.
    price: dict[int, float]
    gpu_w: dict[int, float]
    feasible_cache: dict[tuple, bool] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.place.name

    def feasible(self, jobs: JobTable, job: int) -> bool:
        """Could the cluster ever hold the job (GPU count and model)?"""
        shape = (
            int(jobs.num_gpus[job]),
            int(jobs.gpu_model_mask[job]),
            int(jobs.gpus_per_node[job]),
            int(jobs.num_nodes[job]),
        )
        if shape not in self.feasible_cache:
            n, mask, per_node, nodes = shape
            why = never_fits(self.cluster, n, mask, per_node=per_node, nodes=max(nodes, 1))
            self.feasible_cache[shape] = why is None
        return self.feasible_cache[shape]

    def model_for(self, jobs: JobTable, job: int) -> int:
        """The GPU model the job would run on here: the site's first allowed model."""
        mask = int(jobs.gpu_model_mask[job])
        for m in self.price:
            if mask & (1 << m):
                return m
        return next(iter(self.price))

    def busy_gpus(self) -> int:
        r = self.run
        return self.cluster.total_gpus - r.free_gpus - r.held_gpus


def gpu_prices(place: Place, cluster: Cluster, where: str) -> dict[int, float]:
    models = sorted({int(m) for m in cluster.model[cluster.num_gpus > 0].tolist()})
    out: dict[int, float] = {}
    for m in models:
        name = GPU_MODELS[m].upper()
        if name not in place.price_gpu_hour:
            raise InputError(
                f"{where}, key 'price_gpu_hour': no price for {GPU_MODELS[m]}, which the site has"
            )
        out[m] = place.price_gpu_hour[name]
    held = {GPU_MODELS[m].upper() for m in models}
    extra = sorted(set(place.price_gpu_hour) - held)
    if extra:  # a typo, or a model the cluster spec was meant to have: not passed over
        raise InputError(
            f"{where}, key 'price_gpu_hour.{extra[0]}': the site has no {extra[0]} GPUs "
            f"(it has {', '.join(GPU_MODELS[m] for m in models)})"
        )
    return out


def carbon_series(place: Place, offset: float, where: str) -> CarbonSeries:
    """The site's series with simulated time 0 at ``offset`` seconds into it; a CSV series
    does not wrap (a run beyond it is refused, never extrapolated)."""
    if place.ci is None:
        return CarbonSeries.constant(0.0, "none")
    try:
        series = EnergySpec(ci=place.ci, ci_wrap=False).series()
    except InputError as exc:
        raise InputError(f"{where}, key 'ci': {exc}") from None
    assert series is not None
    if series.is_constant and series.wrap:
        return series
    return replace(series, times=series.times - offset, end=series.end - offset, wrap=False)  # type: ignore[call-arg]


def build_site(
    index: int,
    place: Place,
    fed: Federation,
    jobs: JobTable,
    perf: PerfModel,
    config: ReplayConfig,
    energy: EnergySpec,
) -> Site:
    """Cluster, policies, meter and engine of one site (``jobs`` in submit order)."""
    from schedlab.traces.cluster_spec import parse_cluster_spec

    where = f"{fed.path}: [[site]] {place.name!r}"
    network = None
    try:
        cluster = parse_cluster_spec(place.cluster) if place.cluster else None
        if place.topology is not None:
            from schedlab.experiments.replay_network import network_model, topology_cluster

            topo, cluster = topology_cluster(place.topology, cluster)
            network = network_model(
                topo, jobs, perf, rule="random-phase", routing="ecmp", seed=config.seed,
                trace=None, fmt=None, builtin=False,
            )  # fmt: skip
    except InputError as exc:
        key = "topology" if place.topology is not None and cluster is not None else "cluster"
        raise InputError(f"{where}, key '{key}': {exc}") from None
    assert cluster is not None
    try:
        policies = build(
            REPLAY,
            PolicyChoice(place.ordering, place.placement, place.backfill, place.params, None, ()),
        )
    except InputError as exc:
        raise InputError(f"{where}, key 'ordering'/'placement': {exc}") from None
    price = gpu_prices(place, cluster, where)
    ci = carbon_series(place, fed.ci_offset_s, where)
    settings = replace(energy, pue=place.pue).settings()
    power = ClusterPower.build(cluster, settings)
    gpu_w = {}
    for m in price:
        nodes = np.flatnonzero((cluster.model == m) & (cluster.num_gpus > 0))
        gpu_w[m] = float(power.tdp_w[nodes[0]])
    meter = EnergyMeter(cluster, jobs, power, ci, np.full(len(jobs), settings.power_limit))
    per_node = np.array(
        [price.get(int(m), 0.0) / 3600.0 for m in cluster.model.tolist()], dtype=np.float64
    )
    observer = SiteObserver(meter, per_node, len(jobs))
    assert policies.scheduler is not None
    engine = ReplayEngine(
        cluster, jobs, policies.scheduler, policies.placement, perf, config, network, observer
    )
    return Site(index, place, cluster, _Run(engine), perf, observer, ci, place.pue, price, gpu_w)


def estimated_seconds(site: Site, jobs: JobTable, job: int, work: float, factor: float) -> float:
    """``R_k``: the job's run time on its GPUs of this site (× the estimate's factor)."""
    n = int(jobs.num_gpus[job])
    rate = site.perf.rate(jobs, job, max(n, 1), site.model_for(jobs, job))
    return factor * (work / rate if rate > 0 else np.inf)


def describe(site: Site) -> dict[str, Any]:
    return {
        "name": site.name,
        "gpus": site.cluster.total_gpus,
        "ordering": site.place.ordering + ("+backfill" if site.place.backfill else ""),
        "placement": site.place.placement,
        "ci": site.ci.label,
        "pue": site.pue,
    }
