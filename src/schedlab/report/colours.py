"""One look per policy in every figure and report: a colour and a dash pattern fixed by its name.

Figures used to take colours in the order the runs came (or alphabetically, in one figure), so a
policy changed colour from figure to figure. Here a built-in policy's look comes from its place
in a fixed list (orderings with and without backfill, then the whole-cluster policies; placement
policies have their own list, for pack figures, where they are the compared policies): the
colour cycles through twelve colours told apart with common colour-vision deficiencies, the dash
pattern changes every twelve. Any other name (a plugin, a variant) takes a look from a hash of
the name. Within one figure, two labels that would look alike (two placements of one policy, two
hashed names) are told apart by giving the later one, in sorted order, the next free look — so
the assignment never depends on the order in which runs are listed.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

#: Okabe–Ito, then Tol's: twelve colours told apart with common colour-vision deficiencies.
COLOURS = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
    "#332288", "#882255", "#117733", "#999933", "#AA4499", "#000000",
)  # fmt: skip
DASHES = ("-", "--", ":", "-.")

#: Replay policies in a fixed order (each keeps its look in every report). The first twelve,
#: the ones most often compared with each other (the queue orderings with and without backfill,
#: the deadline study's), have a colour each; the rest repeat those colours with a dash pattern.
REPLAY_POLICIES = (
    "fifo", "sjf", "srtf", "tiresias", "edf", "fifo+backfill", "sjf+backfill", "elasticflow",
    "edf-greedy", "edf-ac", "edf-elastic", "gandiva", "themis", "chronus", "lcs",
    "suspend-resume", "carbon-scaler", "greenflow", "powerflow", "edf+backfill",
)  # fmt: skip
#: Placement policies in a fixed order (their look in pack figures and reports).
PLACEMENT_POLICIES = (
    "random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd", "consolidate",
    "pwr", "pwr+fgd", "ina", "titan", "locality", "bestfit-machine", "vclos",
    "fragments-first", "ocs-vclos", "tiresias-skew", "hived",
)  # fmt: skip
LOOKS = len(COLOURS) * len(DASHES)


@dataclass(frozen=True)
class Look:
    """How one policy is drawn."""

    colour: str
    dash: str

    @property
    def line(self) -> dict[str, str]:
        """Keyword arguments of a matplotlib line."""
        return {"color": self.colour, "linestyle": self.dash}


def policy_name(label: str) -> str:
    """The policy a label names: ``fifo+backfill/bestfit thresholds=1 · run-3`` → the part
    before any folder note, variant or placement."""
    return label.split(" · ")[0].split(" ")[0].split("/")[0]


def _known(label: str, kind: str) -> int | None:
    name = policy_name(label)
    known = PLACEMENT_POLICIES if kind == "placement" else REPLAY_POLICIES
    return known.index(name) if name in known else None


def _index(label: str, kind: str) -> int:
    known = _known(label, kind)
    return known if known is not None else zlib.crc32(policy_name(label).encode()) % LOOKS


def _look(index: int) -> Look:
    return Look(COLOURS[index % len(COLOURS)], DASHES[(index // len(COLOURS)) % len(DASHES)])


def policy_look(label: str, kind: str = "replay") -> Look:
    """The look of ``label`` on its own (``kind``: "replay" or "placement" names)."""
    return _look(_index(label, kind))


def policy_colour(label: str, kind: str = "replay") -> str:
    return policy_look(label, kind).colour


def figure_looks(labels: Iterable[str], kind: str = "replay") -> dict[str, Look]:
    """A distinct look per label for one figure. Labels that are a policy's bare name take its
    own look first; the others (a placement or variant of a policy, a plugin) then take their
    policy's look in sorted order, and one already taken keeps the colour with the next dash
    pattern (a policy stays recognisable by its colour), or failing that the next free look."""
    unique = sorted(set(labels))
    bare = [lb for lb in unique if lb == policy_name(lb)]
    taken: set[int] = set()
    out: dict[str, Look] = {}
    for label in bare + [lb for lb in unique if lb not in bare]:
        index = _index(label, kind)
        for _ in range(len(DASHES) - 1):
            if index not in taken:
                break
            index = (index + len(COLOURS)) % LOOKS
        while index in taken and len(taken) < LOOKS:
            index = (index + 1) % LOOKS
        taken.add(index)
        out[label] = _look(index)
    return out
