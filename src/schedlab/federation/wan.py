"""Data moving between sites over WAN links.

A transfer of ``x`` GB from ``u`` to ``v ≠ u`` first waits the link's round-trip time, then
moves its bytes at the link's rate: alone (``none``: ``rtt/1000 + 8x/gbps`` seconds), or
sharing the directed pair's rate equally with the other transfers moving bytes on it
(``fair``: processor sharing, rates recomputed at every start and end).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedlab.federation.config import Link

INF = math.inf


@dataclass
class Transfer:
    key: int  # the caller's handle
    src: str
    dst: str
    gb: float
    link: Link
    began: float
    bytes_from: float  # when its bytes start moving (after the round trip)
    left: float  # GB still to move
    finish: float = INF


class Wan:
    """Every transfer under way; the caller asks :meth:`next_time` and calls :meth:`advance`."""

    def __init__(self, sharing: str) -> None:
        self.sharing = sharing
        self.active: dict[int, Transfer] = {}
        self.last = 0.0
        self.sharers: dict[tuple[str, str], int] = {}

    def start(self, key: int, src: str, dst: str, gb: float, link: Link, now: float) -> None:
        self._progress(now)
        t = Transfer(key, src, dst, gb, link, now, now + link.rtt_ms / 1000.0, gb)
        self.active[key] = t
        self._rates()

    def next_time(self) -> float:
        """The next end of a transfer, or start of its bytes under ``fair`` (rates change)."""
        out = INF
        for t in self.active.values():
            out = min(out, t.finish)
            if self.sharing == "fair" and t.bytes_from > self.last:
                out = min(out, t.bytes_from)
        return out

    def advance(self, now: float) -> list[Transfer]:
        """Move time to ``now``; the transfers that ended (removed), in order of their end."""
        done: list[Transfer] = []
        while True:
            step = self.next_time()
            if step > now:
                break
            self._progress(step)
            ended = sorted(
                (t for t in self.active.values() if t.finish <= step), key=lambda t: t.key
            )
            for t in ended:
                del self.active[t.key]
                t.left = 0.0
            done += ended
            self._rates()
        self._progress(now)
        return done

    def expected_end(self, key: int) -> float:
        """When transfer ``key`` ends if rates stay as they are (its bytes at the rate it would
        get once they start moving); INF if there is no such transfer."""
        t = self.active.get(key)
        if t is None:
            return INF
        if math.isfinite(t.finish):
            return t.finish
        sharers = self.sharers.get((t.src, t.dst), 0) + 1 if self.sharing == "fair" else 1
        return max(self.last, t.bytes_from) + t.left / (t.link.gbps / 8.0 / sharers)

    def _progress(self, now: float) -> None:
        """Bank the bytes moved since the last change (no rate changes in between)."""
        if now <= self.last:
            return
        for t in self.active.values():
            start = max(self.last, t.bytes_from)
            if now > start and t.left > 0:
                t.left = max(0.0, t.left - self._rate(t) * (now - start))
        self.last = now

    def _rate(self, t: Transfer) -> float:
        gb_s = t.link.gbps / 8.0
        if self.sharing == "none":
            return gb_s
        return gb_s / max(1, self.sharers.get((t.src, t.dst), 1))

    def _rates(self) -> None:
        """Each transfer's end if rates stay as they are now: under ``fair`` a pair's rate is
        split among its transfers whose bytes are moving."""
        self.sharers = {}
        if self.sharing == "fair":
            for t in self.active.values():
                if t.bytes_from <= self.last:
                    pair = (t.src, t.dst)
                    self.sharers[pair] = self.sharers.get(pair, 0) + 1
        for t in self.active.values():
            if self.sharing == "none":
                # alone on its link: exact from its start, whatever else happens
                t.finish = t.bytes_from + t.gb / (t.link.gbps / 8.0)
            elif t.bytes_from > self.last:
                t.finish = INF  # its rate is known once its bytes start (an event of its own)
            else:
                t.finish = self.last + t.left / self._rate(t) if t.left > 0 else self.last
