"""Finish-time fairness ρ (Themis, NSDI '20; Gavel's Fig. 10): how much longer a job took under a
policy than it would have with its fair slice of the cluster to itself.

Per job, ``ρ = JCT under the policy / JCT of the same job under the isolated policy`` (every
active job an equal share of every GPU type; :class:`~schedlab.policies.heterogeneous.
gavel_policies.GavelIsolated`) on the same trace and cluster — Gavel's definition. ρ ≤ 1: the
job did at least as well as on its fair share; the policies that are fair in this sense keep the
largest ρ small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def ftf_rho(jct: pd.Series, isolated_jct: pd.Series) -> pd.Series:
    """ρ per job id (the index of both series); NaN where either run did not finish the job."""
    ref = isolated_jct.reindex(jct.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = jct.astype(float) / ref.astype(float)
    return rho.where(ref > 0)


def ftf_summary(rho: pd.Series) -> dict[str, float]:
    """Mean, median, 90th percentile and largest ρ, and the share of jobs with ρ > 1."""
    values = rho.dropna().to_numpy(dtype=np.float64)
    if len(values) == 0:
        return {"jobs": 0}
    return {
        "jobs": len(values),
        "mean": float(values.mean()),
        "p50": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
        "share_above_1": float((values > 1.0).mean()),
    }
