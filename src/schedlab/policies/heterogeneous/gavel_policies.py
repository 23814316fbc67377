"""Gavel's policies as replay policies: each is the round mechanism around one allocation.

Names follow Gavel's (``max_min_fairness_perf`` → ``gavel-max-min-fairness-perf``); the
``-perf`` ones see per-type throughputs, the others are heterogeneity-agnostic. Every one takes
``slot`` (round seconds, 360), ``reset_interval`` (1920 s) and ``shuffle_seed``.
"""

from __future__ import annotations

from types import ModuleType

from schedlab.policies.heterogeneous.allocation import AllocationPolicy, Fifo, FifoPerf, Isolated
from schedlab.policies.heterogeneous.gavel import DEFAULT_RESET_INTERVAL, GavelRounds


def _lp() -> ModuleType:
    """The LP family, imported when a policy that solves one is built (it loads scipy's
    optimisers, which the FIFO and isolated policies never need)."""
    from schedlab.policies.heterogeneous import gavel_lp

    return gavel_lp


class GavelFifoPerf(GavelRounds):
    name = "gavel-fifo-perf"
    summary = "Gavel: FIFO onto each job's fastest type with room, in 360 s rounds (OSDI '20)"

    def make_allocation(self) -> AllocationPolicy:
        return FifoPerf()


class GavelFifo(GavelRounds):
    """``compat`` copies Gavel's quirk (the random type draw is not the type used)."""

    name = "gavel-fifo"
    summary = "Gavel: FIFO onto a random type with room (heterogeneity-agnostic), 360 s rounds"

    def __init__(
        self,
        slot: float | None = None,
        reset_interval: float = DEFAULT_RESET_INTERVAL,
        shuffle_seed: int = -1,
        compat: bool = False,
    ) -> None:
        self.compat = compat
        super().__init__(slot, reset_interval, shuffle_seed)

    def make_allocation(self) -> AllocationPolicy:
        return Fifo(compat=self.compat)


class GavelIsolated(GavelRounds):
    name = "gavel-isolated"
    summary = "Gavel: an equal share of every GPU type per job (the reference of FTF's ρ)"

    def make_allocation(self) -> AllocationPolicy:
        return Isolated()


class _TieBroken(GavelRounds):
    """Max-min policies take ``tiebreak`` (``sum``: among the LP's optima, the one with the
    largest total normalised throughput; ``none``: HiGHS's vertex)."""

    perf = True

    def __init__(
        self,
        slot: float | None = None,
        reset_interval: float = DEFAULT_RESET_INTERVAL,
        shuffle_seed: int = -1,
        tiebreak: str = "sum",
    ) -> None:
        self.tiebreak = tiebreak
        super().__init__(slot, reset_interval, shuffle_seed)

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MaxMinFairness(perf=self.perf, tiebreak=self.tiebreak)


class GavelLasPerf(_TieBroken):
    name = "gavel-max-min-fairness-perf"
    summary = "Gavel: heterogeneity-aware max-min fairness (LAS) over GPU types, an LP by HiGHS"


class GavelLas(_TieBroken):
    name = "gavel-max-min-fairness"
    summary = "Gavel: max-min fairness (LAS) blind to GPU types, in 360 s rounds"
    perf = False


class GavelFtfPerf(GavelRounds):
    name = "gavel-finish-time-fairness-perf"
    summary = "Gavel: heterogeneity-aware finish-time fairness (min max ρ by bisection of LPs)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().FinishTimeFairness(perf=True)


class GavelFtf(GavelRounds):
    name = "gavel-finish-time-fairness"
    summary = "Gavel: finish-time fairness blind to GPU types (V100 speed everywhere)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().FinishTimeFairness(perf=False)


class GavelMakespanPerf(GavelRounds):
    name = "gavel-min-total-duration-perf"
    summary = "Gavel: heterogeneity-aware minimum makespan (smallest feasible horizon, LPs)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MinTotalDuration(perf=True)


class GavelMakespan(GavelRounds):
    name = "gavel-min-total-duration"
    summary = "Gavel: minimum makespan blind to GPU types (V100 speed everywhere)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MinTotalDuration(perf=False)


class GavelMaxThroughputPerf(GavelRounds):
    name = "gavel-max-sum-throughput-perf"
    summary = "Gavel: maximum total steps/s over GPU types (an LP by HiGHS)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MaxSumThroughput()


class GavelCostPerf(GavelRounds):
    name = "gavel-max-sum-throughput-normalized-by-cost-perf"
    summary = "Gavel: maximum total steps per dollar (GCP prices: v100 0.74, p100 0.43, k80 0.135)"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MaxSumThroughput(cost=True)


class GavelCostSloPerf(GavelRounds):
    name = "gavel-max-sum-throughput-normalized-by-cost-perf-slos"
    summary = "Gavel: maximum steps per dollar with each job's deadline as a throughput floor"

    def make_allocation(self) -> AllocationPolicy:
        return _lp().MaxSumThroughput(slos=True)


class _Hierarchical(GavelRounds):
    """Water-filling takes ``entities`` (``none``: every job for itself; ``fairness`` or
    ``fifo``: jobs grouped by user, the user's weight shared or handed down in job order) and
    ``entity_weights`` (``"alice=2,bob=1"``; 1 for a user not named)."""

    perf = True

    def __init__(
        self,
        slot: float | None = None,
        reset_interval: float = DEFAULT_RESET_INTERVAL,
        shuffle_seed: int = -1,
        entities: str = "none",
        entity_weights: str = "",
    ) -> None:
        self.entities, self.entity_weights = entities, entity_weights
        super().__init__(slot, reset_interval, shuffle_seed)

    def make_allocation(self) -> AllocationPolicy:
        return _lp().WaterFilling(
            perf=self.perf, entities=self.entities, weights=self.entity_weights
        )


class GavelWaterFillingPerf(_Hierarchical):
    name = "gavel-max-min-fairness-water-filling-perf"
    summary = "Gavel: hierarchical max-min fairness by water-filling (LPs and a MILP, HiGHS)"


class GavelWaterFilling(_Hierarchical):
    name = "gavel-max-min-fairness-water-filling"
    summary = "Gavel: water-filling max-min fairness blind to GPU types"
    perf = False


#: Every Gavel policy, in listing order.
GAVEL_POLICIES: tuple[type[GavelRounds], ...] = (
    GavelFifo,
    GavelFifoPerf,
    GavelLas,
    GavelLasPerf,
    GavelFtf,
    GavelFtfPerf,
    GavelMakespan,
    GavelMakespanPerf,
    GavelMaxThroughputPerf,
    GavelCostPerf,
    GavelCostSloPerf,
    GavelWaterFilling,
    GavelWaterFillingPerf,
    GavelIsolated,
)
