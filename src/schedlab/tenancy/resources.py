"""The resources tenancy divides: ``gpu``, ``gpu:<model>``, ``cpu`` (cores) and ``memory`` (GiB).

Each is divided independently unless a share policy combines them (the DRF family). A job's
demand of each comes from the job table: all its GPUs count as ``gpu``; they also count as
``gpu:<model>`` when the job may run on that model only (pending) or runs on it (running); CPU
is ``cpu_milli`` / 1000 and memory ``memory_mib`` / 1024.
"""

from __future__ import annotations

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation

GPU, CPU, MEMORY = "gpu", "cpu", "memory"
BASE_RESOURCES = (GPU, CPU, MEMORY)


def check_resource(key: object, where: str) -> str:
    """A resource key as written in a queue file: ``gpu``, ``cpu``, ``memory`` or
    ``gpu:<model>`` with a known model; anything else is an error naming ``where``."""
    if not isinstance(key, str):
        raise InputError(f"{where}: resource names are text (got {key!r})")
    name = key.strip()
    if name in BASE_RESOURCES:
        return name
    kind, sep, model = name.partition(":")
    if kind == GPU and sep and model:
        try:
            model_index(model)
        except (KeyError, ValueError):
            raise InputError(
                f"{where}: unknown GPU model {model!r} in resource {key!r} "
                f"(known: {', '.join(GPU_MODELS)})"
            ) from None
        return f"{GPU}:{GPU_MODELS[model_index(model)]}"
    raise InputError(f"{where}: unknown resource {key!r} (use gpu, gpu:<model>, cpu or memory)")


def resource_order(keys: set[str]) -> tuple[str, ...]:
    """``gpu`` first, then the per-model GPU keys by name, then ``cpu`` and ``memory``: the
    column order of every per-resource array (``gpu`` is always present)."""
    models = sorted(k for k in keys if k.startswith(f"{GPU}:"))
    rest = [k for k in (CPU, MEMORY) if k in keys]
    return (GPU, *models, *rest)


def _model_of(key: str) -> int:
    return model_index(key.partition(":")[2])


def capacity(cluster: Cluster, resources: tuple[str, ...]) -> np.ndarray:
    """What the cluster has of each resource (GPUs, cores, GiB)."""
    out = np.zeros(len(resources))
    for r, key in enumerate(resources):
        if key == GPU:
            out[r] = float(cluster.num_gpus.sum())
        elif key == CPU:
            out[r] = float(cluster.cpu_milli.sum()) / 1000.0
        elif key == MEMORY:
            out[r] = float(cluster.memory_mib.sum()) / 1024.0
        else:
            out[r] = float(cluster.num_gpus[cluster.model == _model_of(key)].sum())
    return out


def job_demand(jobs: JobTable, resources: tuple[str, ...]) -> np.ndarray:
    """Each job's request of each resource while it waits: ``[jobs, resources]``."""
    out = np.zeros((len(jobs), len(resources)))
    for r, key in enumerate(resources):
        if key == GPU:
            out[:, r] = jobs.num_gpus
        elif key == CPU:
            out[:, r] = jobs.cpu_milli / 1000.0
        elif key == MEMORY:
            out[:, r] = jobs.memory_mib / 1024.0
        else:
            only = jobs.gpu_model_mask == (1 << _model_of(key))
            out[:, r] = np.where(only, jobs.num_gpus, 0)
    return out


def held(
    demand: np.ndarray,
    resources: tuple[str, ...],
    cluster: Cluster,
    allocation: Allocation,
) -> np.ndarray:
    """What a running job holds of each resource: its demand, with per-model GPU keys taken
    from the model it actually runs on."""
    if len(resources) <= 1 or not any(k.startswith(f"{GPU}:") for k in resources):
        return demand
    out = demand.copy()
    model = int(cluster.model[allocation[0][0]]) if allocation else -1
    for r, key in enumerate(resources):
        if key.startswith(f"{GPU}:"):
            out[r] = demand[0] if model == _model_of(key) else 0.0
    return out
