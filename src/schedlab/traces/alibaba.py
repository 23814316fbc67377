"""Reader for the Alibaba GPU cluster trace v2023 ("openb"): node lists and pod lists.

Node lists: ``sn,cpu_milli,memory_mib,gpu,model``. Pod lists: ``name,cpu_milli,memory_mib,num_gpu,
gpu_milli`` plus, except in the ``multigpu*`` variants, ``gpu_spec`` (``|``-separated models,
blank = any) and times that the pack experiment does not use.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import (
    GPU_MODELS,
    is_known_model,
    model_index,
    parse_gpu_spec,
    spec_mask,
)
from schedlab.model.pods import PodTable
from schedlab.traces.columns import (
    TextTable,
    fail_at_first,
    int_column,
    line_of,
    read_text_table,
    unique_names,
)

NODE_COLUMNS = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_COLUMNS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]
POD_OPTIONAL = ["gpu_spec"]

#: Most GPUs a single node or pod may have in this format.
MAX_GPUS_PER_NODE = 64


def _unknown_model(frame: TextTable, value: str, path: Path, index: int, column: str) -> InputError:
    return InputError(
        f"unknown GPU model {value!r} in '{column}' (known: {', '.join(GPU_MODELS)})",
        path=str(path),
        row=line_of(frame, index),
        column=column,
    )


def read_node_list(path: str | Path, *, gpu_only: bool = False) -> Cluster:
    """Read an ``openb_node_list_*.csv`` file; ``gpu_only`` drops nodes without GPUs."""
    path = Path(path)
    frame = read_text_table(path, NODE_COLUMNS)
    names = unique_names(frame, "sn", path)
    cpu = int_column(frame, "cpu_milli", path, low=0)
    mem = int_column(frame, "memory_mib", path, low=0)
    gpus = int_column(frame, "gpu", path, low=0, high=MAX_GPUS_PER_NODE)
    model = np.full(len(frame), -1, dtype=np.int64)
    for i, raw in enumerate(frame.stripped("model").tolist()):
        if raw == "":
            if gpus[i] > 0:
                raise InputError(
                    f"node has {gpus[i]} GPU(s) but no 'model'",
                    path=str(path),
                    row=line_of(frame, i),
                    column="model",
                )
            continue
        if not is_known_model(raw):
            raise _unknown_model(frame, raw, path, i, "model")
        model[i] = model_index(raw)
    if not gpus.any():
        # Nothing to place on or schedule: every pod or job would fail, quietly.
        raise InputError("no node has a GPU (every 'gpu' is 0)", path=str(path), column="gpu")
    keep = gpus > 0 if gpu_only else np.ones(len(frame), dtype=bool)
    return Cluster(
        names=names[keep],
        cpu_milli=cpu[keep],
        memory_mib=mem[keep],
        num_gpus=gpus[keep],
        model=model[keep],
        source=str(path),
    )


def read_pod_list(path: str | Path) -> PodTable:
    """Read an ``openb_pod_list_*.csv`` file into the canonical pod table."""
    path = Path(path)
    frame = read_text_table(path, POD_COLUMNS, POD_OPTIONAL)
    names = unique_names(frame, "name", path)
    cpu = int_column(frame, "cpu_milli", path, low=0)
    mem = int_column(frame, "memory_mib", path, low=0)
    num_gpu = int_column(frame, "num_gpu", path, low=0, high=MAX_GPUS_PER_NODE)
    gpu_milli = int_column(frame, "gpu_milli", path, low=0, high=GPU_MILLI)
    for failing, message in (
        ((num_gpu > 1) & (gpu_milli < GPU_MILLI), "a pod with num_gpu > 1 must take whole GPUs"),
        ((num_gpu > 0) & (gpu_milli == 0), "a GPU pod must ask for a share above 0"),
        ((num_gpu == 0) & (gpu_milli > 0), "a CPU-only pod (num_gpu 0) cannot ask for GPU share"),
    ):
        fail_at_first(
            frame,
            failing,
            path,
            "gpu_milli",
            lambda i, message=message: (
                f"{message} (got num_gpu={num_gpu[i]}, gpu_milli={gpu_milli[i]})"
            ),
        )
    masks = np.empty(len(frame), dtype=np.int64)
    specs = frame["gpu_spec"].tolist() if "gpu_spec" in frame.columns else None
    cache: dict[str, int] = {}
    for i in range(len(frame)):
        raw = "" if specs is None else specs[i]
        if raw not in cache:
            models = parse_gpu_spec(raw)
            for m in models:
                if not is_known_model(m):
                    raise _unknown_model(frame, m, path, i, "gpu_spec")
            cache[raw] = spec_mask(models)
        masks[i] = cache[raw]
    return PodTable(
        name=names,
        cpu_milli=cpu,
        memory_mib=mem,
        num_gpu=num_gpu,
        gpu_milli=gpu_milli,
        model_mask=masks,
        source=str(path),
    )
