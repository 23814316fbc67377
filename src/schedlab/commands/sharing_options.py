"""The options of ``schedlab replay --sharing``, declared apart from the sharing engine so that
a replay without ``--sharing`` parses its command line without importing that engine (the run
itself is :mod:`schedlab.commands.replay_sharing`)."""

from __future__ import annotations

import argparse

#: ``--mode`` without a value: the trace's own times (the sharing engine's ``TRACE`` mode).
DEFAULT_MODE = "trace"

#: Options of ``replay --sharing`` only (a job replay refuses them).
SHARING_ONLY = (
    "mode",
    "window",
    "scale_gpus",
    "overcommit",
    "interference",
    "split_cap",
    "inflate",
    "sample",
    "filler",
    "keep_unscheduled",
)


def add_sharing_options(p: argparse.ArgumentParser) -> None:
    """The options of ``replay --sharing`` (a job replay refuses them: :data:`SHARING_ONLY`).
    They default to None, so that one given is told apart from one left out."""
    g = p.add_argument_group(
        "sharing (with --sharing: pods with GPU shares and QoS classes; --trace is an Alibaba "
        "pod list, --placement the placement plugin)"
    )
    g.add_argument("--sharing", action="store_true", help="run the fractional-GPU sharing engine")
    g.add_argument(
        "--mode",
        help="trace (default), compressed:K (inter-arrival gaps ÷ K) or pack (the pack protocol)",
    )
    g.add_argument("--window", help="START:END: keep pods created in [START, END) seconds")
    g.add_argument("--scale-gpus", type=int, help="scale the cluster down to about N GPUs")
    g.add_argument("--overcommit", type=float, help="GPU overcommit ratio for BE (default 1)")
    g.add_argument("--interference", type=float, help="co-location slowdown α (default 0)")
    g.add_argument("--split-cap", type=int, help="most pods per GPU (default 10)")
    g.add_argument("--inflate", type=float, help="pack mode: GPU request ÷ capacity (1.3)")
    g.add_argument(
        "--sample",
        type=float,
        help="write the time series at most once per this many seconds (default: every event)",
    )
    g.add_argument("--filler", help="TOML file of [[filler]] elastic best-effort jobs")
    g.add_argument(
        "--keep-unscheduled",
        action="store_true",
        help="keep pods deleted while pending (work = deletion − creation)",
    )
