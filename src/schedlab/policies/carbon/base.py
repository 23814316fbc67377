"""What every carbon-aware policy shares: the run's carbon series and GPU power, and slack.

The replay run hands a policy its energy set-up through ``use_energy(run)`` before it starts
(:func:`schedlab.energy.replay.attach_policy`). Without energy options a policy plans against a
constant intensity of 1 and 1 W per GPU, so it still runs (and then never waits for carbon).
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.energy.carbon import CarbonSeries
from schedlab.model.snapshot import Snapshot
from schedlab.policies.api import REPLAY_ONLY
from schedlab.policies.scheduler import SchedulingPolicy, check_slot, next_round

#: Default slack of a job without a deadline (ours): a day.
DEFAULT_SLACK = 24 * 3600.0


class CarbonAware:
    """Mixin: the carbon series, per-GPU watts and slack a carbon-aware policy plans with."""

    energy_run: object | None = None

    def use_energy(self, run: object) -> None:
        """Take the run's energy set-up (:class:`schedlab.energy.replay.EnergyRun`)."""
        self.energy_run = run

    @property
    def carbon(self) -> CarbonSeries:
        ci = getattr(self.energy_run, "ci", None)
        return ci if ci is not None else CarbonSeries.constant(1.0, "unit")

    def gpu_watts(self) -> float:
        """Busy watts of one GPU, for planning (the mean TDP over the cluster's GPUs)."""
        power = getattr(self.energy_run, "power", None)
        if power is None:
            return 1.0
        busy = power.tdp_w[power.tdp_w > 0]
        return float(busy.mean()) if len(busy) else 1.0

    @staticmethod
    def oracle_seconds(snap: Snapshot, job: int) -> float:
        """d: run time at the requested size on the reference GPU."""
        rate = float(snap.reference_rate[job])
        return float(snap.work[job]) / rate if rate > 0 else math.inf

    def slack_of(self, snap: Snapshot, job: int, default: float) -> float:
        """deadline − submit − d when the job has a deadline, else ``default``; never < 0."""
        deadline = float(snap.jobs.deadline[job])
        if np.isfinite(deadline):
            submit = float(snap.jobs.submit_time[job])
            return max(0.0, deadline - submit - self.oracle_seconds(snap, job))
        return default


def check_slack(slack: float) -> float:
    if not (math.isfinite(slack) and slack >= 0):
        raise ValueError(f"'slack' must be seconds ≥ 0 (got {slack})")
    return float(slack)


class SlackScheduler(CarbonAware, SchedulingPolicy):
    """Base of the policies that shift work in time within each job's slack (replay only:
    they hold and resume jobs on a simulated carbon clock)."""

    engines = REPLAY_ONLY
    stateful = True

    def __init__(self, slack: float = DEFAULT_SLACK, slot: float | None = None) -> None:
        """``slack``: seconds a job without a deadline may wait or stretch for cleaner power;
        ``slot``: decide only once per round of that many seconds (None: at every event)."""
        self.slack = check_slack(slack)
        self.slot = check_slot(slot)

    def round_wakeup(self, snap: Snapshot, wake: float) -> float:
        """``wake``, or the next round boundary if that is sooner and anything is active."""
        if self.slot is not None and (snap.pending_set or snap.running_set):
            return min(wake, next_round(snap.now, self.slot))
        return wake

    def describe(self) -> str:
        return self.name
