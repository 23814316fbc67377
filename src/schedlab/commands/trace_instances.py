"""``schedlab trace stats|validate`` for instance traces (Alibaba v2025 DLRM serving).

These files hold long-running serving instances rather than jobs, so they have their own reader
(:mod:`schedlab.traces.alibaba_2025`) and their own summary: what an operator checks first is how
many instances of each role there are, how big they are, how many apps limit their density, and
how many run at once at the busiest moment.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.markup import escape
from rich.table import Table

from schedlab.commands.common import stdout
from schedlab.errors import InputError
from schedlab.model.instances import ROLE_NAMES, ServingInstances
from schedlab.traces.alibaba_2025 import FORMAT, looks_like, read_alibaba_2025
from schedlab.traces.formats import read_header

__all__ = ["FORMAT", "run_stats", "run_validate", "wanted"]

#: Request columns of the percentile table: key in ``stats`` → label.
RESOURCES: dict[str, str] = {
    "vcpu": "vCPU",
    "gpu": "GPUs",
    "rdma_pct": "RDMA (% of a NIC)",
    "memory_gib": "memory (GiB)",
}


def wanted(args: argparse.Namespace) -> bool:
    """Whether FILE is read as an instance trace: named so, or (no format named) its header."""
    if args.trace_format is not None:
        return str(args.trace_format).strip().lower() == FORMAT
    return looks_like(read_header(args.file))


def _read(args: argparse.Namespace) -> ServingInstances:
    if args.keep_zero or args.min_duration != 0.0:
        option = "--keep-zero" if args.keep_zero else "--min-duration"
        raise InputError(
            f"'{option}' filters jobs; {FORMAT} holds serving instances, none are dropped"
        )
    return read_alibaba_2025(args.file)


def summary(instances: ServingInstances) -> dict[str, object]:
    """Everything ``trace stats`` shows for an instance trace, as JSON-ready values."""
    return {
        "file": instances.source,
        "format": FORMAT,
        "rows": len(instances),
        "stats": instances.stats(),
    }


def _num(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def run_stats(args: argparse.Namespace) -> int:
    instances = _read(args)
    data = summary(instances)
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    s: dict = data["stats"]  # type: ignore[assignment]
    table = Table(title=escape(f"{instances.source} ({FORMAT})"), title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("instances", _num(s["instances"]))
    for role in ROLE_NAMES:
        r = s["by_role"][role]
        table.add_row(f"  {role} instances", f"{_num(r['instances'])} ({r['apps']} apps)")
    table.add_row("apps", f"{s['apps']} ({s['apps_with_both_roles']} with both roles)")
    end = s["window_end_seconds"]
    table.add_row("window end", f"{_num(end)} s ({end / 86400:,.1f} days)")
    table.add_row("first creation", f"{_num(s['first_creation_seconds'])} s")
    table.add_row("no creation time (start at 0)", _num(s["without_creation_time"]))
    table.add_row("no deletion time (censored)", _num(s["without_deletion_time"]))
    aa = s["anti_affinity"]
    table.add_row("max per node: no limit (-1)", _num(aa["instances_without_limit"]))
    table.add_row(
        "max per node: limited",
        f"{_num(aa['instances_with_limit'])} ({aa['apps_with_limit']} apps)",
    )
    for limit, count in aa["by_limit"].items():
        table.add_row(f"  at most {limit} per node", _num(count))
    peak = s["concurrency_peak"]
    when = peak["at_seconds"]
    table.add_row(
        "concurrent instances, peak",
        f"{_num(peak['instances'])} at {_num(when)} s (day {when / 86400:,.2f})",
    )
    for role in ROLE_NAMES:
        table.add_row(f"  {role} at the peak", _num(s["by_role"][role]["running_at_peak"]))
    table.add_row(
        "  held at the peak",
        f"{_num(peak['vcpu'])} vCPU, {_num(peak['gpus'])} GPUs, "
        f"{_num(peak['memory_gib'])} GiB, {_num(peak['rdma_nics'])} RDMA NICs",
    )
    stdout.print(table)

    requests = Table(title="requests per instance (p50 / p90 / p99 / max)", title_justify="left")
    for name in ("role", "resource", "p50", "p90", "p99", "max"):
        requests.add_column(name, justify="left" if name in ("role", "resource") else "right")
    for role in ROLE_NAMES:
        for key, label in RESOURCES.items():
            row = s["by_role"][role]["requests"][key]
            if row:
                requests.add_row(role, label, *(_num(row[k]) for k in ("p50", "p90", "p99", "max")))
    stdout.print(requests)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    instances = _read(args)
    stdout.print(f"ok: {len(instances)} instances ({FORMAT})", soft_wrap=True, markup=False)
    return 0
