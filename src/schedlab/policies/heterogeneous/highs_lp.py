"""``min c·z`` subject to ``A z ≤ b`` and ``z ≥ lower``, solved through HiGHS's own
Python bindings (``highspy``).

Gavel's policies solve thousands of small LPs a run (≈ 50 jobs × 3 types, a few hundred
simplex iterations each). Through ``scipy.optimize.linprog`` each call paid for input checks, a
fresh solver, its option parsing, presolve and a result object — more than the solve itself.
Here one solver per thread is kept and handed the CSR rows as they are, and the options suit
these LPs: no presolve (nothing to remove in a model this small), no scaling (coefficients are
throughputs and GPU counts, already within a few orders of magnitude), and the primal simplex.
Each model is passed whole, so every solve starts from the slack basis and the optimum is the
vertex the primal simplex reaches from there. Gavel's max-min LPs have ties (many allocations
reach the same fair share), and the vertex decides which one a run gets: the dual simplex from
the slack basis (with Dantzig pricing, kept for the rare solve HiGHS hands to it) returned the
vertex ``linprog(method="highs")`` returns, but took 0.75 s longer over G2's 5,840 LPs; the
primal's vertex moves G2's average JCT by 0.02 % (docs/gavel.md). Neither is the artifact's:
its ECOS interior-point solver stops inside the optimal face.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import highspy
import numpy as np

if TYPE_CHECKING:  # only a type here: scipy's import is not paid by the max-min runs
    from scipy import sparse

#: Options set on every solver this module makes (see the module docstring for why).
OPTIONS: dict[str, object] = {
    "output_flag": False,
    "presolve": "off",
    "simplex_scale_strategy": 0,
    "simplex_strategy": 4,  # primal
    "simplex_dual_edge_weight_strategy": 0,
}
INF = highspy.kHighsInf
_local = threading.local()


class CsrRows(NamedTuple):
    """A constraint matrix as the three CSR arrays HiGHS reads (row-wise), and its shape: what
    :func:`solve_lp` needs of a ``scipy.sparse.csr_matrix``, which it also accepts."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class LPResult:
    """``status``: "optimal", "infeasible" or HiGHS's words for anything else; ``x`` when
    optimal."""

    status: str
    x: np.ndarray | None


def _solver() -> highspy._Highs:
    """This thread's solver: the bare binding (``highspy`` exports it as ``_Highs``) rather than
    ``highspy.Highs``, whose constructor registers Python callbacks and so prints HiGHS's banner
    before ``output_flag`` can be turned off — and would call back into Python on every solve."""
    highs = getattr(_local, "highs", None)
    if highs is None:
        highs = highspy._Highs()
        for name, value in OPTIONS.items():
            highs.setOptionValue(name, value)
        _local.highs = highs
    return highs


def solve_lp(
    cost: np.ndarray,
    a_ub: sparse.csr_matrix | CsrRows,
    b_ub: np.ndarray,
    lower: np.ndarray | float = 0.0,
) -> LPResult:
    """Minimise ``cost·z`` over ``a_ub z ≤ b_ub``, ``z ≥ lower`` (−inf: free below)."""
    cols, rows = len(cost), a_ub.shape[0]
    # HiGHS reads any bound at or past its infinity (IEEE's, in highspy) as none: no clipping.
    if np.ndim(lower) == 0:
        col_lower = np.full(cols, float(lower))  # type: ignore[arg-type]
    else:
        col_lower = np.ascontiguousarray(np.broadcast_to(lower, (cols,)), dtype=np.float64)
    highs = _solver()
    passed = highs.passModel(
        cols,
        rows,
        a_ub.nnz,
        int(highspy.MatrixFormat.kRowwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        np.ascontiguousarray(cost, dtype=np.float64),
        col_lower,
        np.full(cols, INF),
        np.full(rows, -INF),
        np.ascontiguousarray(b_ub, dtype=np.float64),
        a_ub.indptr.astype(np.int32, copy=False),
        a_ub.indices.astype(np.int32, copy=False),
        a_ub.data.astype(np.float64, copy=False),
        np.zeros(cols, dtype=np.int32),  # HiGHS reads one integrality flag per column
    )
    if passed == highspy.HighsStatus.kError:
        return LPResult("HiGHS refused the model", None)
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        return LPResult("optimal", np.array(highs.getSolution().col_value))
    if status == highspy.HighsModelStatus.kInfeasible:
        return LPResult("infeasible", None)
    return LPResult(highs.modelStatusToString(status), None)
