"""Writing run outputs so that a folder is either complete or untouched.

Every file is written to a temporary name beside its final one and moved into place with
``os.replace`` (atomic on POSIX), so an interrupted run never leaves a half-written file that a
later analysis would read as valid. Numbers are formatted with a fixed precision so that the same
config and seed give byte-identical files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from schedlab.model.gpu_models import mask_to_models
from schedlab.output_dir import umask
from schedlab.table_csv import FLOAT_FORMAT as FLOAT_FORMAT  # where it was always found
from schedlab.table_csv import csv_text

if TYPE_CHECKING:
    from schedlab.engines.pack import PackResult


def atomic_write(path: Path, write: Callable[[IO], None], binary: bool = False) -> None:
    """Run ``write`` on a temporary file next to ``path`` and move it into place (a text file,
    or with ``binary`` a bytes one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        fh_args = {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, **fh_args) as fh:
            write(fh)
        # mkstemp makes the file private (0600); results are meant to be shared, so give them the
        # permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Mapping[str, object]) -> None:
    atomic_write(path, lambda fh: fh.write(json.dumps(data, indent=2, sort_keys=False) + "\n"))


def write_csv(path: Path, table: Mapping[str, Any]) -> None:
    """``table`` (columns by name: a dict of arrays or a DataFrame) as CSV, floats with six
    decimals (see :mod:`schedlab.table_csv`)."""
    text = csv_text(table)
    atomic_write(path, lambda fh: fh.write(text))


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def write_config(path: Path, config: Mapping[str, object], comment: str) -> None:
    """The flat run config as TOML, so the run can be repeated with ``--config``."""
    lines = [f"# {comment}"] + [f"{k} = {_toml_value(v)}" for k, v in config.items()]
    atomic_write(path, lambda fh: fh.write("\n".join(lines) + "\n"))


def pack_events(result: PackResult) -> dict[str, Any]:
    """One row per pod in the order placed: what it asked for, where it went, and the cluster
    measures right after it (columns by name)."""
    from schedlab.engines.pack import NO_NODE  # pack's outputs only

    pods, cluster = result.pods, result.cluster
    placed = result.node != NO_NODE
    node_names = np.where(placed, cluster.names[np.maximum(result.node, 0)], "")
    return {
        "seq": np.arange(len(pods)),
        "pod": pods.name,
        "cpu_milli": pods.cpu_milli,
        "memory_mib": pods.memory_mib,
        "num_gpu": pods.num_gpu,
        "gpu_milli": pods.gpu_milli,
        "gpu_spec": ["|".join(mask_to_models(int(m))) for m in pods.model_mask],
        "node": node_names,
        "gpus": ["|".join(str(g) for g in gs) for gs in result.gpus],
        "arrived_pct": result.arrived_pct,
        "unallocated_gpu_pct": result.unallocated_pct,
        "frag_amount_pct": result.frag_amount_pct,
        "frag_ratio_pct": result.frag_ratio_pct,
    }
