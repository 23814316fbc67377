"""The canonical pod table: one row per pod (a task that asks for CPU, memory and GPUs).

Columns are numpy arrays so that engines index them without per-row objects. The schema carries a
version: anything that stores pods (event tables, caches) records it, so a later change of meaning
is detected instead of silently misread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from schedlab.model.cluster import GPU_MILLI
from schedlab.model.gpu_models import ANY_MODEL_MASK, mask_to_models

POD_SCHEMA_VERSION = 1

#: Column name → dtype of the canonical pod schema.
POD_COLUMNS: dict[str, str] = {
    "name": "str",
    "cpu_milli": "int64",
    "memory_mib": "int64",
    "num_gpu": "int64",
    "gpu_milli": "int64",
    "model_mask": "int64",
}


@dataclass(frozen=True)
class PodTable:
    """Pods in canonical form.

    ``gpu_milli`` is the share needed on *each* of ``num_gpu`` GPUs (< 1000 only when
    ``num_gpu`` is 1); ``model_mask`` is a bitmask over GPU models the pod may use.
    """

    name: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    model_mask: np.ndarray
    source: str = field(default="<memory>")
    schema_version: int = POD_SCHEMA_VERSION

    def __post_init__(self) -> None:
        n = len(self.name)
        for col in POD_COLUMNS:
            if len(getattr(self, col)) != n:
                raise ValueError(f"PodTable.{col} has {len(getattr(self, col))} rows, not {n}")

    def __len__(self) -> int:
        return len(self.name)

    @classmethod
    def from_columns(cls, source: str = "<memory>", **cols: object) -> PodTable:
        """Build from any sequences; ``model_mask`` defaults to "any model"."""
        n = len(cols["name"])  # type: ignore[arg-type]
        mask = cols.get("model_mask")
        return cls(
            name=np.asarray(cols["name"], dtype=object),
            cpu_milli=np.asarray(cols["cpu_milli"], dtype=np.int64),
            memory_mib=np.asarray(cols["memory_mib"], dtype=np.int64),
            num_gpu=np.asarray(cols["num_gpu"], dtype=np.int64),
            gpu_milli=np.asarray(cols["gpu_milli"], dtype=np.int64),
            model_mask=(
                np.full(n, ANY_MODEL_MASK, dtype=np.int64)
                if mask is None
                else np.asarray(mask, dtype=np.int64)
            ),
            source=source,
        )

    def take(self, index: np.ndarray, names: np.ndarray | None = None) -> PodTable:
        """Rows at ``index`` (repeats allowed), optionally renamed."""
        return replace(
            self,
            name=self.name[index] if names is None else names,
            cpu_milli=self.cpu_milli[index],
            memory_mib=self.memory_mib[index],
            num_gpu=self.num_gpu[index],
            gpu_milli=self.gpu_milli[index],
            model_mask=self.model_mask[index],
        )

    @property
    def gpu_request_milli(self) -> np.ndarray:
        """Total milli-GPU each pod asks for (num_gpu × per-GPU share)."""
        return self.num_gpu * self.gpu_milli

    def sorted_by_name(self) -> PodTable:
        order = np.argsort(self.name.astype(str), kind="stable")
        return self.take(order)

    def stats(self) -> dict[str, object]:
        """The counts the trace READMEs publish, to check a file at a glance."""
        gpu = self.num_gpu > 0
        sharing = gpu & (self.gpu_milli < GPU_MILLI)
        by_count = {
            str(k): int((self.num_gpu == k).sum()) for k in sorted(set(self.num_gpu.tolist()))
        }
        constrained = int((self.model_mask != ANY_MODEL_MASK).sum())
        return {
            "pods": len(self),
            "cpu_only": int((~gpu).sum()),
            "gpu_sharing": int(sharing.sum()),
            "by_num_gpu": by_count,
            "with_model_constraint": constrained,
            "gpu_request": float(self.gpu_request_milli.sum() / GPU_MILLI),
        }

    def models_of(self, i: int) -> list[str]:
        return mask_to_models(int(self.model_mask[i]))
