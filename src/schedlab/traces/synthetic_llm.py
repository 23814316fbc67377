"""A generated LLM-job trace in the ``llm`` format, for demos and tests (``synthetic-llm``).

Job types are drawn with AcmeTrace Seren's shares of GPU jobs (job-type figure of the AcmeTrace
repository: Eval 64.9 %, SFT 14.9 %, Pretrain 0.9 %, renormalised over these three). Everything
else is ours, round figures of the right order: per type a model, GPUs, a global batch and a
token budget —

| type | models | GPUs | batch tokens | tokens |
|---|---|---|---|---|
| pretrain | llama3-8b, internlm-7b, llama3-70b | 64, 128, 256 | 4 Mi | 2e10 … 2e11 |
| sft | llama3-8b, internlm-7b | 8, 16, 32 | 1 Mi | 2e8 … 4e9 |
| eval | llama3-8b, internlm-7b | 8 | 256 Ki | 1e7 … 2e8 |

— with log-uniform token budgets and Poisson arrivals (``mean_gap`` seconds). Each column has its
own random stream derived from ``seed``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ACME_SEREN_SHARES = {"eval": 64.9, "sft": 14.9, "pretrain": 0.9}
SHAPES: dict[str, dict[str, object]] = {
    "pretrain": {
        "models": ("llama3-8b", "internlm-7b", "llama3-70b"),
        "gpus": (64, 128, 256),
        "batch_tokens": 4 * 2**20,
        "tokens": (2e10, 2e11),
    },
    "sft": {
        "models": ("llama3-8b", "internlm-7b"),
        "gpus": (8, 16, 32),
        "batch_tokens": 2**20,
        "tokens": (2e8, 4e9),
    },
    "eval": {
        "models": ("llama3-8b", "internlm-7b"),
        "gpus": (8,),
        "batch_tokens": 2**18,
        "tokens": (1e7, 2e8),
    },
}


def generate_llm_jobs(jobs: int, seed: int = 0, mean_gap: float = 120.0) -> pd.DataFrame:
    """``jobs`` rows of an ``llm`` trace (see the module docstring)."""
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1 (got {jobs})")
    if not mean_gap > 0:
        raise ValueError(f"mean_gap must be > 0 (got {mean_gap})")
    streams = [np.random.default_rng([seed, k]) for k in range(5)]
    types = list(ACME_SEREN_SHARES)
    weights = np.array([ACME_SEREN_SHARES[t] for t in types])
    kind = streams[0].choice(len(types), size=jobs, p=weights / weights.sum())
    submit = np.cumsum(streams[1].exponential(mean_gap, size=jobs)) - mean_gap
    rows = []
    for i in range(jobs):
        name = types[int(kind[i])]
        shape = SHAPES[name]
        models, gpus = shape["models"], shape["gpus"]
        lo, hi = shape["tokens"]  # type: ignore[misc]
        rows.append(
            {
                "job_id": f"llm{i}",
                "submit_time": round(max(0.0, float(submit[i])), 3),
                "num_gpus": int(gpus[int(streams[2].integers(len(gpus)))]),  # type: ignore[index,arg-type]
                "model": models[int(streams[3].integers(len(models)))],  # type: ignore[index,arg-type]
                "batch_tokens": shape["batch_tokens"],
                "tokens": float(f"{np.exp(streams[4].uniform(np.log(lo), np.log(hi))):.4g}"),
                "job_type": name,
            }
        )
    return pd.DataFrame(rows)
