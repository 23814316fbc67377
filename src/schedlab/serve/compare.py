"""Where the simulator puts each job of a recorded live run, for comparison with where it ran.

The cluster is rebuilt from the journal's ``serve`` record (node names, GPUs, models, CPUs,
memory), not from a compact spec, so placement scores see the very nodes the live policy saw; an
observer of the engine notes every start it carries out with the node names chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import is_known_model, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import REPLAY
from schedlab.policies.wiring import build
from schedlab.serve.rederive import nodes_from_record
from schedlab.serve.serve_record import journaled_seconds, policy_choice
from schedlab.serve.topology import ServeTopology
from schedlab.traces.formats import read_jobs


class StartRecorder:
    """An observer of the replay engine noting each job's starts as node-name tuples, in order:
    the starts the engine carried out (a start a minimum run held back is not one)."""

    def __init__(self, job_ids: np.ndarray, names: np.ndarray) -> None:
        self.job_ids = job_ids
        self.names = names
        self.starts: dict[str, list[tuple[str, ...]]] = {}

    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        nodes = tuple(str(self.names[n]) for n, _ in allocation)
        self.starts.setdefault(str(self.job_ids[job]), []).append(nodes)

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        """Nothing to note: only starts are compared."""

    def tick(self, now: float) -> None:
        """Nothing to note at a decision point."""

    def finish(self, end: float) -> None:
        """Nothing to note at the end."""


def cluster_from_serve(record: Mapping[str, Any]) -> Cluster:
    """The live cluster as the journal's ``serve`` record describes it."""
    try:
        names = list(record["nodes"])
        gpus = [int(g) for g in record["node_gpus"]]
    except (KeyError, TypeError, ValueError):
        raise InputError("the journal's 'serve' record does not describe the nodes") from None
    n = len(names)
    models = list(record.get("node_models") or ["GPU"] * n)
    return Cluster(
        names=np.asarray(names, dtype=object),
        cpu_milli=np.asarray(
            record["node_cpu_milli"]
            if "node_cpu_milli" in record  # serve kubernetes keeps millicores
            else [int(c) * 1000 for c in record.get("node_cpus") or [64] * n]
        ),
        memory_mib=np.asarray([int(m) for m in record.get("node_memory_mib") or [1 << 20] * n]),
        num_gpus=np.asarray(gpus, dtype=np.int64),
        model=np.asarray(
            [
                model_index(m)
                if m and is_known_model(m)
                else (-1 if g == 0 else model_index("GPU"))
                for m, g in zip(models, gpus, strict=True)
            ],
            dtype=np.int64,
        ),
        source="journal",
    )


def replay_starts(
    workload: Path | JobTable,
    serve_record: Mapping[str, Any],
    seed: int = 0,
) -> dict[str, list[tuple[str, ...]]]:
    """Replay ``workload`` under the policy (and minimum run) the journal names; every job's
    starts (node names)."""
    jobs = workload if isinstance(workload, JobTable) else read_jobs(workload).jobs
    policies = build(REPLAY, policy_choice(serve_record))
    assert policies.scheduler is not None
    cluster = cluster_from_serve(serve_record)
    config = ReplayConfig(
        seed=seed,
        min_runtime=journaled_seconds(serve_record.get("min_runtime")),
        grace=journaled_seconds(serve_record.get("grace")),
    )
    # A network placement sees the switches the journal kept, without link loads, as serve
    # gave them to it.
    topology = ServeTopology.from_record(dict(serve_record)).for_nodes(
        nodes_from_record(dict(serve_record))
    )
    engine = ReplayEngine(
        cluster,
        jobs,
        policies.scheduler,
        policies.placement,
        TraceDuration(),
        config,
        topology=topology,
    )
    recorder = StartRecorder(engine.jobs.job_id, cluster.names)
    engine.observer = recorder
    engine.run()
    return recorder.starts
