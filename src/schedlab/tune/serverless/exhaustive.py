"""Every plan of a given data-parallel degree and micro-batch count, scored with numpy.

For each way of cutting the layer chain into at most ``max_stages`` contiguous stages, the
per-stage times and memory needs are computed once per memory option; the plans of that cut are
then the product of each stage's fitting options, scored by broadcasting (no Python loop over
plans). The cost of a plan follows from its time, the sum of its memory sizes and its number of
stages, as in :mod:`.plan`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from schedlab.tune.serverless.plan import (
    MB_PER_GB,
    Plan,
    Training,
    micro_batch,
    request_usd,
    requests_cost,
    sync_time,
)
from schedlab.tune.serverless.platform import Platform
from schedlab.tune.serverless.profile import ModelProfile


@dataclass
class Scored:
    """The fitting plans of one (d, m): their times, costs and how to rebuild each plan."""

    d: int
    m: int
    t: np.ndarray
    c: np.ndarray
    #: Per plan: the cut (index into ``cuts``) and the flat index into its option grid.
    cut: np.ndarray
    flat: np.ndarray
    cuts: list[tuple[tuple[int, ...], list[np.ndarray]]]

    def plan(self, i: int) -> Plan:
        sizes, options = self.cuts[int(self.cut[i])]
        shape = tuple(len(o) for o in options)
        picks = np.unravel_index(int(self.flat[i]), shape)
        memory = tuple(int(options[s][picks[s]]) for s in range(len(sizes)))
        return Plan(sizes, memory, self.d, self.m)


def count_plans(layers: int, options: int, max_stages: int, uniform: bool = False) -> int:
    """Plans of one (d, m): cuts into 1..max_stages stages times memory assignments."""
    return sum(
        math.comb(layers - 1, s - 1) * (options if uniform else options**s)
        for s in range(1, min(max_stages, layers) + 1)
    )


def cuts_of(layers: int, max_stages: int):
    """Stage sizes of every cut of ``layers`` units into at most ``max_stages`` stages, fewer
    stages first, then in lexicographic order of the cut points."""
    for stages in range(1, min(max_stages, layers) + 1):
        for points in itertools.combinations(range(1, layers), stages - 1):
            bounds = (0, *points, layers)
            yield tuple(b - a for a, b in itertools.pairwise(bounds))


def score(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    d: int,
    m: int,
    max_stages: int,
    uniform: bool = False,
) -> Scored:
    """Every fitting plan of ``(d, m)`` with its iteration time and cost."""
    mu = micro_batch(training, d, m)
    assert mu is not None
    fwd = profile.forward_seconds(mu)
    bwd = profile.backward_seconds(mu)
    speed, size = platform.speeds, platform.memory
    per_gb = platform.price_gb_s * d / MB_PER_GB
    ts: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    cut_ids: list[np.ndarray] = []
    flats: list[np.ndarray] = []
    cuts: list[tuple[tuple[int, ...], list[np.ndarray]]] = []
    for sizes in cuts_of(len(profile), max_stages):
        starts = np.cumsum((0, *sizes[:-1]))
        ends = starts + np.asarray(sizes)
        f = np.add.reduceat(fwd, starts)[:, None] / speed[None, :]
        k = np.add.reduceat(bwd, starts)[:, None] / speed[None, :]
        params = np.add.reduceat(profile.params, starts)
        act = np.add.reduceat(profile.act, starts)
        need = training.base_mb + training.k_w * params + (training.batch / d) * act
        fits = need[:, None] <= size[None, :]
        cross = platform.latency_s + mu * profile.out[ends[:-1] - 1] / platform.bandwidth_mb_s
        up = np.append(cross, 0.0)[:, None]
        down = np.insert(cross, 0, 0.0)[:, None]
        if training.overlap:
            per = np.maximum(f, np.maximum(up, down)) + np.maximum(k, np.maximum(up, down))
        else:
            per = f + k + 2 * (up + down)
        t_sync = float(np.max(sync_time(params, d, platform, training.sync)))
        puts, gets, lists = request_usd(len(sizes), d, m, platform)
        requests = requests_cost(puts, gets, lists, platform)
        if uniform:
            ok = np.flatnonzero(fits.all(axis=0))
            if not len(ok):
                continue
            p = per[:, ok]
            t = p.sum(axis=0) + (m - 1) * p.max(axis=0) + t_sync
            c = per_gb * len(sizes) * size[ok] * t + requests
            cuts.append((sizes, [ok] * len(sizes)))
            # A uniform plan's "grid" is the diagonal: index j picks option ok[j] everywhere.
            flat = np.ravel_multi_index(
                tuple(np.arange(len(ok)) for _ in sizes), (len(ok),) * len(sizes)
            )
        else:
            options = [np.flatnonzero(fits[s]) for s in range(len(sizes))]
            if any(len(o) == 0 for o in options):
                continue
            grids = np.ix_(*(per[s, o] for s, o in enumerate(options)))
            mems = np.ix_(*(size[o] for o in options))
            total = sum(grids, start=np.zeros(()))
            peak = grids[0]
            for g in grids[1:]:
                peak = np.maximum(peak, g)
            memory = sum(mems, start=np.zeros(()))
            t = (total + (m - 1) * peak + t_sync).ravel()
            c = (per_gb * memory * (total + (m - 1) * peak + t_sync) + requests).ravel()
            cuts.append((sizes, options))
            flat = np.arange(t.size)
        ts.append(t)
        cs.append(c)
        cut_ids.append(np.full(t.size, len(cuts) - 1, dtype=np.int64))
        flats.append(flat)
    if not ts:
        empty = np.zeros(0)
        return Scored(d, m, empty, empty, empty.astype(np.int64), empty.astype(np.int64), [])
    return Scored(
        d, m, np.concatenate(ts), np.concatenate(cs), np.concatenate(cut_ids),
        np.concatenate(flats), cuts,
    )  # fmt: skip
