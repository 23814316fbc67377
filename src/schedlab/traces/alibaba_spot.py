"""The node list of the Alibaba spot-GPU trace v2026 (GFS, ASPLOS '26) as a replay cluster.

``node_info_df.csv`` has one row per node: ``gpu_model,gpu_capacity_num,cpu_num,node_name`` —
4,278 nodes of six GPU types, 1 to 8 GPUs each (``shared/traces/alibaba-spot-2026/README.md``).
``--cluster`` takes the file as it is; the header tells it from an openb node list.

Choices (the file does not say): ``cpu_num`` is vCPUs, read as that many whole cores of CPU
(``cpu_milli`` = 1000 × vCPUs); the file has no memory column, so each node gets 64 GiB per GPU,
as compact cluster specs do (memory never limits a job that asks none); every node is its own
rack; ``A100-SXM4-80GB`` is schedlab's ``A100-80G`` and ``A800-SXM4-80GB`` its ``A800``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS, is_known_model, model_index
from schedlab.traces.columns import int_column, line_of, read_text_table, unique_names

COLUMNS = ["gpu_model", "gpu_capacity_num", "cpu_num", "node_name"]
#: The trace's model names that schedlab knows under another name.
MODEL_NAMES = {"A100-SXM4-80GB": "A100-80G", "A800-SXM4-80GB": "A800"}
#: Memory per GPU given to each node (the file has none), as compact cluster specs.
MEMORY_GIB_PER_GPU = 64
MAX_GPUS_PER_NODE = 64


def is_spot_node_list(path: Path) -> bool:
    """Whether the CSV at ``path`` has this node list's header (False if it cannot be read:
    the openb reader then says why)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return set(COLUMNS) <= {c.strip() for c in header}


def read_spot_node_list(path: str | Path) -> Cluster:
    """Read ``node_info_df.csv`` (see the module docstring)."""
    path = Path(path)
    frame = read_text_table(path, COLUMNS)
    names = unique_names(frame, "node_name", path)
    gpus = int_column(frame, "gpu_capacity_num", path, low=0, high=MAX_GPUS_PER_NODE)
    vcpus = int_column(frame, "cpu_num", path, low=1, high=1_000_000)
    model = np.full(len(frame), -1, dtype=np.int64)
    for i, raw in enumerate(frame["gpu_model"].str.strip()):
        name = MODEL_NAMES.get(raw, raw)
        if not is_known_model(name):
            raise InputError(
                f"unknown GPU model {raw!r} (known: {', '.join([*GPU_MODELS, *MODEL_NAMES])})",
                path=str(path),
                row=line_of(frame, i),
                column="gpu_model",
            )
        model[i] = model_index(name) if gpus[i] > 0 else -1
    if not gpus.any():
        raise InputError("no node has a GPU (every 'gpu_capacity_num' is 0)", path=str(path))
    return Cluster(
        names=np.asarray([f"node-{n}" for n in names], dtype=object),
        cpu_milli=vcpus.astype(np.int64) * 1000,
        memory_mib=np.maximum(gpus, 1).astype(np.int64) * MEMORY_GIB_PER_GPU * 1024,
        num_gpus=gpus.astype(np.int64),
        model=model,
        source=str(path),
    )
