"""What failures did, as jobs.csv columns and the summary's ``failures`` block."""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedlab.failures.runtime import FailureRecord


def add_job_columns(frame: pd.DataFrame, rec: FailureRecord) -> pd.DataFrame:
    """Per job: interruptions and their causes, restarts, rolled-back GPU-seconds, seconds in
    checkpoints, in restarts and queued after an interruption, and ETTR."""
    out = frame.copy()
    out["failures"] = rec.failures
    out["failure_causes"] = [
        ";".join(f"{k}:{v}" for k, v in sorted(c.items())) for c in rec.by_category
    ]
    out["restarts"] = rec.restarts
    out["lost_gpu_seconds"] = rec.lost_gpu_seconds
    out["ckpt_time_s"] = rec.ckpt_seconds
    out["restart_time_s"] = rec.restart_seconds
    out["repair_wait_s"] = rec.wait_seconds
    out["ettr"] = rec.ettr
    return out


def summary_block(rec: FailureRecord, jobs: pd.DataFrame, busy_gpu_seconds: float) -> dict:
    """Cluster view: interruptions by cause and class, goodput, GPU-hours lost by cause."""
    gpus = jobs["num_gpus"].to_numpy(dtype=np.float64)
    useful = float((rec.useful_seconds * gpus).sum())
    ran = np.isfinite(rec.ettr)
    weights = gpus[ran]
    ettr = (
        float(np.average(rec.ettr[ran], weights=weights)) if ran.any() and weights.sum() else None
    )
    return {
        "reaction": rec.reaction,
        "spares": rec.spares,
        "interruptions": int(rec.failures.sum()),
        "interruptions_by_cause": dict(rec.interruptions.most_common()),
        "interruptions_by_class": dict(rec.by_class.most_common()),
        "component_failures": dict(rec.component_failures.most_common()),
        "restarts": int(rec.restarts.sum()),
        "ettr_gpu_weighted": ettr,
        "goodput": useful / busy_gpu_seconds if busy_gpu_seconds > 0 else None,
        "gpu_hours_lost": {k: v / 3600.0 for k, v in rec.gpu_seconds_lost.items()},
    }
