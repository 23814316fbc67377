"""Sia's per-round ILP (SOSP '23), solved with HiGHS through ``scipy.optimize.milp``.

Binary X[j, c]: job j runs in configuration c. With p < 0 the coefficients A = G^p are costs:

    minimise  Σ A[j,c]·X[j,c] + λ_n·(J − Σ X[j,c])

(λ_n = 1.1 > 1: running beats idling; the constant λ_n·J is dropped), subject to at most one
configuration per job, each type's GPUs (Σ GPUs(c)·X[j,c] over its configurations), and
X[j, current] = 1 for jobs still inside a checkpoint-restore. With p > 0 the coefficients are
values: maximise Σ (A + λ_n)·X. Rigid jobs (a fixed GPU count) choose only a GPU type: their
own binaries Y[r, k] with cost/value B[r, k] against the same capacity rows.

HiGHS stops at a relative MIP gap of 1e-4 (the artifact: CBC at 0.01 %). A solve that fails
returns None, so the caller can keep the previous allocation and say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

#: The idling penalty (Sia's ``--mip_lambda_n``).
LAMBDA_N = 1.1
MIP_REL_GAP = 1e-4


@dataclass(frozen=True)
class IlpResult:
    #: Chosen configuration per adaptive job (-1: none).
    config: np.ndarray
    #: Chosen GPU type index per rigid job (-1: none).
    pool: np.ndarray
    objective: float


def solve_sia(
    coeff: np.ndarray,
    config_gpus: np.ndarray,
    config_pool: np.ndarray,
    capacity: np.ndarray,
    *,
    p: float = -0.5,
    lambda_n: float = LAMBDA_N,
    locked: dict[int, int] | None = None,
    rigid_coeff: np.ndarray | None = None,
    rigid_gpus: np.ndarray | None = None,
    time_limit: float | None = None,
) -> IlpResult | None:
    """Solve one round. ``coeff``: jobs × configurations (A); ``config_gpus``/``config_pool``:
    GPUs and type index of each configuration; ``capacity``: GPUs per type; ``locked``: job →
    configuration it must keep; ``rigid_coeff``: rigid jobs × types (B) with ``rigid_gpus``
    GPUs each. None when HiGHS finds no solution."""
    coeff = np.asarray(coeff, dtype=float)
    n_jobs, n_cfg = coeff.shape
    n_pools = len(capacity)
    rigid_coeff = (
        np.zeros((0, n_pools)) if rigid_coeff is None else np.asarray(rigid_coeff, dtype=float)
    )
    rigid_gpus = np.zeros(0) if rigid_gpus is None else np.asarray(rigid_gpus, dtype=float)
    n_rigid = len(rigid_coeff)
    nx, ny = n_jobs * n_cfg, n_rigid * n_pools
    if nx + ny == 0:
        return IlpResult(np.full(0, -1), np.full(0, -1), 0.0)
    sign = 1.0 if p < 0 else -1.0  # milp minimises
    c = np.concatenate(
        [sign * (coeff.ravel() - sign * lambda_n), sign * (rigid_coeff.ravel() - sign * lambda_n)]
    )
    rows, cols, vals = [], [], []
    # one configuration per job, one type per rigid job
    for j in range(n_jobs):
        rows += [j] * n_cfg
        cols += list(range(j * n_cfg, (j + 1) * n_cfg))
        vals += [1.0] * n_cfg
    for r in range(n_rigid):
        rows += [n_jobs + r] * n_pools
        cols += list(range(nx + r * n_pools, nx + (r + 1) * n_pools))
        vals += [1.0] * n_pools
    base = n_jobs + n_rigid
    # GPUs of each type
    for k in range(n_pools):
        for j in range(n_jobs):
            for i in np.flatnonzero(np.asarray(config_pool) == k):
                rows.append(base + k)
                cols.append(j * n_cfg + int(i))
                vals.append(float(config_gpus[i]))
        for r in range(n_rigid):
            rows.append(base + k)
            cols.append(nx + r * n_pools + k)
            vals.append(float(rigid_gpus[r]))
    a = coo_matrix((vals, (rows, cols)), shape=(base + n_pools, nx + ny)).tocsr()
    upper = np.concatenate([np.ones(base), np.asarray(capacity, dtype=float)])
    lo = np.zeros(nx + ny)
    for j, cfg in (locked or {}).items():
        lo[j * n_cfg + cfg] = 1.0
    options = {"mip_rel_gap": MIP_REL_GAP, "disp": False}
    if time_limit is not None:
        options["time_limit"] = time_limit
    res = milp(
        c,
        constraints=LinearConstraint(a, -np.inf, upper),
        integrality=np.ones(nx + ny),
        bounds=Bounds(lo, np.ones(nx + ny)),
        options=options,
    )
    if res.x is None or res.status not in (0, 1):  # 1: a limit, with a feasible answer
        return None
    x = np.round(res.x).astype(np.int64)
    xs = x[:nx].reshape(n_jobs, n_cfg)
    ys = x[nx:].reshape(n_rigid, n_pools)
    config = np.where(xs.any(axis=1), xs.argmax(axis=1), -1)
    pool = np.where(ys.any(axis=1), ys.argmax(axis=1), -1)
    return IlpResult(config, pool, objective(coeff, config, rigid_coeff, pool, p, lambda_n))


def objective(
    coeff: np.ndarray,
    config: np.ndarray,
    rigid_coeff: np.ndarray,
    pool: np.ndarray,
    p: float = -0.5,
    lambda_n: float = LAMBDA_N,
) -> float:
    """The round's objective for a given choice (what :func:`solve_sia` optimises, with the
    constant λ_n·J kept): for p < 0 a cost to minimise, for p > 0 a value to maximise."""
    chosen = [coeff[j, k] for j, k in enumerate(config) if k >= 0]
    chosen += [rigid_coeff[r, k] for r, k in enumerate(pool) if k >= 0]
    idle = len(config) + len(pool) - len(chosen)
    if p < 0:
        return float(sum(chosen) + lambda_n * idle)
    return float(sum(chosen) - lambda_n * idle)
