"""One check of what a policy hands an engine, shared by every engine.

A policy — often a plugin — can return what no engine may apply: a start on no GPUs or on fewer
than the job asked for (its record would still say the request), a score per node that is NaN or
of the wrong length, GPU 99 or one GPU twice, a method that raises. Every engine (pack, replay,
the sharing engine, serve) takes a policy's answers through here, at one place each, so such an
answer stops the run with one line (a :class:`PolicyError`, exit 2) naming the policy, the method
and what it returned, instead of a traceback or, worse, a wrong result.

* :func:`checked_scores`, :func:`checked_gpus` and :func:`checked_keys`: a placement policy's
  ``score`` and ``pick_gpus`` (checked by the placement framework every engine shares) and an
  ordering's ``keys`` (checked by the queue scheduler).
* :class:`DecisionCheck`: a whole-cluster policy's ``decide`` and ``next_wakeup``; every
  ``Start`` and ``Resize`` must give the job what it asked for — exactly its GPU count (and its
  nodes × GPUs per node, when it fixes them) on GPUs of models it accepts — or, for a policy that
  declares itself ``elastic``, from one GPU up to all the cluster has.

The checks cost a few comparisons per decision (the engine checks node capacity itself).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from schedlab.errors import PolicyError, SchedlabError
from schedlab.model.cluster import GPU_MILLI, Cluster, ClusterState
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import (
    Decision,
    Overhead,
    Overheads,
    Pace,
    Preempt,
    Reconfigure,
    Reject,
    Resize,
    Snapshot,
    Start,
)

__all__ = [
    "DecisionCheck",
    "PolicyError",
    "checked_gpus",
    "checked_keys",
    "checked_scores",
    "guarded",
    "nan_score",
    "raised",
    "shown",
    "who",
]

T = TypeVar("T")

#: Longest rendering of a returned value in a message.
SHOWN = 80


def who(policy: object) -> str:
    """``placement 'spread' (plugin mypkg.spread:Spread)``: the policy a message blames, with
    where its class lives when it is not schedlab's own."""
    cls = type(policy)
    if hasattr(policy, "pick_gpus"):
        kind = "placement"
    elif hasattr(policy, "keys") and hasattr(policy, "static"):
        kind = "ordering"
    else:
        kind = "policy"
    name = getattr(policy, "name", cls.__name__)
    with contextlib.suppress(Exception):  # its own description ("fifo / bestfit") if it has one
        name = policy.describe()  # type: ignore[attr-defined]
    plugin = not cls.__module__.startswith("schedlab.")
    return f"{kind} {name!r}" + (f" (plugin {cls.__module__}:{cls.__qualname__})" if plugin else "")


def shown(value: object) -> str:
    """A returned value, short enough for one line."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value.ravel()[:6], precision=4, separator=", ")
        more = ", …" if value.size > 6 else ""
        return f"an array of shape {value.shape} ({value.dtype}) {text[:-1]}{more}]"
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def raised(policy: object, method: str, exc: Exception) -> PolicyError:
    """The error for a policy's method that raised ``exc``."""
    return PolicyError(f"{who(policy)}: {method}() raised {type(exc).__name__}: {exc}")


def guarded(policy: object, method: str, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, a policy's method: anything it raises (but schedlab's own one-line
    errors) becomes a PolicyError naming the policy and the method."""
    try:
        return call(*args)
    except SchedlabError:
        raise
    except Exception as exc:
        raise raised(policy, method, exc) from exc


def checked_scores(policy: object, scores: object, feasible: np.ndarray) -> np.ndarray:
    """``score()``'s answer: one real number per node (NaN nowhere a node could be chosen)."""
    if (
        isinstance(scores, np.ndarray)
        and scores.shape == feasible.shape
        and scores.dtype.kind in "biuf"
    ):
        return scores
    raise PolicyError(
        f"{who(policy)}: score() returned {shown(scores)}, not one number per node "
        f"({len(feasible)} nodes)"
    )


def nan_score(policy: object, scores: np.ndarray, feasible: np.ndarray) -> PolicyError:
    """The error for scores with a NaN where a node could be chosen."""
    node = int(np.flatnonzero(feasible & np.isnan(scores))[0])
    return PolicyError(f"{who(policy)}: score() returned NaN for node {node} ({shown(scores)})")


def checked_gpus(
    policy: object, gpus: object, state: ClusterState, node: int, num_gpu: int, milli: int
) -> tuple[int, ...]:
    """``pick_gpus()``'s answer: ``num_gpu`` distinct GPUs of ``node`` (none for a pod without
    GPUs), each with ``milli`` free (a slot the node does not have has none free)."""
    if type(gpus) is tuple and len(gpus) == num_gpu:  # the usual answer, checked in a loop
        row = state.gpu_free[node]
        width = len(row)
        for g in gpus:
            if type(g) is not int or not 0 <= g < width or row[g] < milli:
                break
        else:
            if num_gpu < 2 or len(set(gpus)) == num_gpu:
                return gpus
    try:  # anything else: numpy integers are fine, the rest is named
        picked = tuple(int(g) for g in gpus)  # type: ignore[attr-defined]
        exact = all(isinstance(g, int | np.integer) for g in gpus)  # type: ignore[attr-defined]
    except (TypeError, ValueError, OverflowError):
        picked, exact = (), False
    width = state.gpu_free.shape[1]
    free, exists = state.gpu_free[node], state.gpu_exists[node]
    ok = exact and len(picked) == num_gpu and len(set(picked)) == num_gpu
    ok = ok and all(0 <= g < width and exists[g] and free[g] >= milli for g in picked)
    if ok:
        return picked
    want = f"{num_gpu} distinct GPU(s) of node {node}" if num_gpu else "no GPU"
    share = f" with {milli} milli-GPU free" if 0 < milli < GPU_MILLI else " free"
    raise PolicyError(
        f"{who(policy)}: pick_gpus() returned {shown(gpus)} for a pod asking "
        f"{want}{share if num_gpu else ''} (the node has GPUs 0..{int(exists.sum()) - 1}, "
        f"free shares {free[exists].tolist()})"
    )


def checked_keys(policy: object, keys: object, count: int) -> np.ndarray:
    """``keys()``'s answer: one real number per job asked about, none NaN."""
    if isinstance(keys, np.ndarray) and keys.shape == (count,):
        kind = keys.dtype.kind
        if (kind == "f" and not _has_nan(keys)) or kind in "biu":
            return keys
    raise PolicyError(
        f"{who(policy)}: keys() returned {shown(keys)}, not one number (no NaN) per job "
        f"({count} jobs)"
    )


def _each_gpu_once(allocation: Any) -> bool:
    """No GPU given twice where a node comes in several entries (a node may: rank order)."""
    nodes = [node for node, _ in allocation]
    if len(set(nodes)) == len(nodes):
        return True
    pairs = [(node, g) for node, gpus in allocation for g in gpus]
    return len(set(pairs)) == len(pairs)


def _has_nan(values: np.ndarray) -> bool:
    """A NaN among ``values``: a Python loop for the few keys of one arrival (numpy's per-call
    cost would dominate), numpy for a whole queue."""
    if len(values) > 16:
        return bool(np.isnan(values).any())
    for v in values.tolist():  # noqa: SIM110 - a plain loop: no generator on the hot path
        if v != v:
            return True
    return False


_VERBS = {Start: "started", Resize: "resized"}
_OTHERS = (Preempt, Reject, Overhead, Overheads, Pace, Reconfigure)


class DecisionCheck:
    """A whole-cluster policy's answers in one run (or one serve cycle): built once from the
    cluster and the job table, then asked at every decision point."""

    def __init__(self, policy: Any, cluster: Cluster, jobs: JobTable) -> None:
        self.policy = policy
        self.elastic = bool(getattr(policy, "elastic", False))
        self.size = cluster.size
        self.total = cluster.total_gpus
        bits = np.where(cluster.model >= 0, np.left_shift(1, np.maximum(cluster.model, 0)), 0)
        self.bits_list: list[int] = bits.tolist()
        self.width: list[int] = cluster.num_gpus.tolist()
        self.asked: list[int] = jobs.num_gpus.tolist()
        self.per_node: list[int] = jobs.gpus_per_node.tolist()
        self.nodes: list[int] = jobs.num_nodes.tolist()
        self.mask: list[int] = jobs.gpu_model_mask.tolist()

    def decide(self, snap: Snapshot) -> list[Decision]:
        """The policy's decisions at ``snap``, each checked (see the module docstring)."""
        try:  # not guarded(): a call less at every decision point
            decisions = self.policy.decide(snap)
        except SchedlabError:
            raise
        except Exception as exc:
            raise raised(self.policy, "decide", exc) from exc
        if not isinstance(decisions, list):
            raise self._wrong(f"decide() returned {shown(decisions)}, not a list of decisions")
        for d in decisions:
            kind = type(d)
            if kind is Start or kind is Resize:
                self.allocation(d.job, d.allocation, _VERBS[kind])
            elif not isinstance(d, _OTHERS):
                raise self._wrong(f"decide() returned {shown(d)}, which is not a decision")
            elif kind is Overhead:
                self._charge(d.job, d.seconds)  # type: ignore[union-attr]
            elif kind is Overheads:
                self._overheads(d)  # type: ignore[arg-type]
            elif kind is Pace and not (0 <= d.rate < math.inf and 0 <= d.remaining < math.inf):
                raise self._wrong(
                    f"decide() paced job {d.job} at {d.rate!r} units/s with {d.remaining!r} left"
                )
            elif kind is Reject and not isinstance(d.reason, str):
                raise self._wrong(f"decide() rejected job {d.job} with reason {shown(d.reason)}")
        return decisions

    def _overheads(self, d: Overheads) -> None:
        """Job numbers and as many charges, each finite and not negative."""
        try:
            jobs, charges = list(d.jobs), list(d.seconds)
        except TypeError:
            raise self._wrong(
                f"decide() returned {shown(d)}: its jobs and seconds must be sequences"
            ) from None
        if len(jobs) != len(charges):
            raise self._wrong(
                f"decide() charged {len(jobs)} job(s) {len(charges)} overhead(s) in one Overheads"
            )
        if all(type(j) is int for j in jobs) and all(type(s) is float for s in charges):
            seconds = np.fromiter(charges, np.float64, len(charges))
            if ((seconds >= 0) & (seconds < math.inf)).all():
                return  # the usual case, in one pass
        for job, s in zip(jobs, charges, strict=True):
            self._charge(job, s)

    def _charge(self, job: object, seconds: object) -> None:
        """One overhead charge: a job number, and a number of seconds, finite and not
        negative (what :class:`Overhead` holds, and each pair of an :class:`Overheads`)."""
        if isinstance(job, bool) or not isinstance(job, int | np.integer):
            raise self._wrong(f"decide() charged an overhead to {shown(job)}, not a job")
        number = int | float | np.integer | np.floating
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, number)
            or not 0 <= seconds < math.inf
        ):
            raise self._wrong(f"decide() charged job {job} {seconds!r} s of overhead")

    def next_wakeup(self, snap: Snapshot) -> float:
        """When the policy wants to be asked again: a time, or inf (never NaN)."""
        try:
            wake = self.policy.next_wakeup(snap)
        except SchedlabError:
            raise
        except Exception as exc:
            raise raised(self.policy, "next_wakeup", exc) from exc
        if type(wake) is float and wake == wake:
            return wake
        if isinstance(wake, bool) or not isinstance(wake, int | float) or wake != wake:
            raise self._wrong(f"next_wakeup() returned {shown(wake)}, not a time")
        return float(wake)

    def allocation(self, job: int, allocation: object, verb: str) -> None:
        """``allocation`` gives ``job`` what it asked for (or, elastic, 1..all GPUs)."""
        if not 0 <= job < len(self.asked):
            wanted = "pending" if verb == "started" else "running"
            raise self._wrong(f"{verb} job {job}, which is not {wanted}")
        given = entries = 0
        mask, width, bits = self.mask[job], self.width, self.bits_list
        try:
            for node, gpus in allocation:  # type: ignore[attr-defined]
                if not 0 <= node < self.size:
                    raise ValueError
                n = len(gpus)
                if n:  # a node may come twice (rank order), a GPU only once
                    if n == 1:
                        if not 0 <= gpus[0] < width[node]:
                            raise ValueError
                    elif min(gpus) < 0 or max(gpus) >= width[node] or len(set(gpus)) != n:
                        raise ValueError
                    if not bits[node] & mask:
                        raise self._wrong(
                            f"{verb} job {job} on node {node}, whose GPU model the job does "
                            f"not accept ({shown(allocation)})"
                        )
                given += n
                entries += 1
            if entries > 1 and not _each_gpu_once(allocation):
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise self._wrong(
                f"{verb} job {job} on {shown(allocation)}, not nodes of the cluster each with "
                "its GPUs (distinct, of the node)"
            ) from None
        asked = self.asked[job]
        if not entries:
            raise self._wrong(f"{verb} job {job} ({asked} GPUs asked) on an empty allocation")
        per_node = self.per_node[job]
        if self.elastic:
            ok = given == 0 if asked == 0 else 1 <= given <= self.total
        else:
            ok = given == asked and (per_node <= 0 or self._shaped(job, allocation))
        if not ok:
            if self.elastic:
                wanted = "no GPU" if asked == 0 else f"1..{self.total} GPUs (elastic)"
            else:
                nodes = max(self.nodes[job], 1)
                shape = f" as {nodes} node(s) × {per_node}" if per_node else ""
                wanted = f"{asked} GPU(s){shape}"
            on = len({node for node, _ in allocation})  # type: ignore[attr-defined]
            raise self._wrong(
                f"{verb} job {job} on {given} GPU(s) over {on} node(s) "
                f"({shown(allocation)}); it asked for {wanted}"
            )

    def _shaped(self, job: int, allocation: Any) -> bool:
        """The job's fixed geometry: its number of nodes, each with its GPUs per node."""
        on: dict[int, int] = {}
        for node, gpus in allocation:
            on[node] = on.get(node, 0) + len(gpus)
        per_node = self.per_node[job]
        return len(on) == max(self.nodes[job], 1) and all(n == per_node for n in on.values())

    def _wrong(self, what: str) -> PolicyError:
        return PolicyError(f"{who(self.policy)}: {what}")
