"""The columns only LLM training jobs have, aligned with a :class:`~schedlab.model.jobs.JobTable`.

A row whose ``model`` is None is not an LLM job (a trace may mix both); for the others the work is
``tokens`` and the speed on an allocation comes from the planner (:mod:`schedlab.perf.llm`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class LLMJobs:
    model: np.ndarray  # object: ModelConfig or None
    batch: np.ndarray  # int64: global batch in sequences
    tokens: np.ndarray  # float64: tokens to train (the work)
    min_gpus: np.ndarray  # int64: elastic range
    max_gpus: np.ndarray  # int64
    profile: np.ndarray  # object: calibration profile name ("" = the run's)
    plan: np.ndarray  # object: tuple of (field, value) a fixed plan sets (() = free)
    flexible: np.ndarray  # bool: round the batch to a multiple of d·b
    gpu_model: np.ndarray  # object: GPU model the planner assumes ("" = the node's)
    ckpt_policy: np.ndarray  # object: per-job checkpoint policy ("" = the run's)
    ckpt_bytes_per_param: np.ndarray  # float64
    job_type: np.ndarray  # object: pretrain, sft, eval, debug, mllm, other
    restart_s: np.ndarray  # float64: fixed restart overhead (NaN: the failure model's)

    def __len__(self) -> int:
        return len(self.model)

    def take(self, index: np.ndarray) -> LLMJobs:
        return LLMJobs(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def is_llm(self, job: int) -> bool:
        return self.model[job] is not None
