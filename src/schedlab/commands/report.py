"""``schedlab report``: one self-contained HTML page comparing replay run folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.commands.common import console
from schedlab.errors import InputError
from schedlab.output_dir import check_out_file


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="compare replay runs in one self-contained HTML page",
        description=(
            "Read replay run folders (each with jobs.csv and summary.json, and timeseries.csv "
            "for the figures over time) and write one HTML page with a summary table and "
            "figures: JCT CDF, queue length and GPU utilisation over time, mean JCT per user. "
            "Sharing runs get their class tables; a replay sweep folder gets its grid page again; "
            "pack run folders or a pack grid get the pack page; replay --federation run folders "
            "get a table per dispatcher (JCT, queueing, cost, carbon, data moved) and per site. "
            "The page loads nothing from outside, so it opens offline and can be mailed."
        ),
        epilog=(
            "example: schedlab report runs/fifo runs/srtf --out report.html --title 'FIFO vs SRTF'"
        ),
    )
    p.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="replay run folders (or sharing runs), one replay sweep folder (its page is made "
        "again), pack run folders, or one pack grid folder",
    )
    p.add_argument("--out", required=True, type=Path, help="HTML file to write")
    p.add_argument("--title", help="page title (default: 'Replay report: N runs')")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_out_file(args.out)  # an unwritable --out fails before the folders are read
    from schedlab.commands.replay_grid import is_replay_grid, report_replay_grid
    from schedlab.report import pack_report

    dirs = [Path(d) for d in args.dirs]
    if any(pack_report.is_pack_grid(d) or pack_report.is_pack_run(d) for d in dirs):
        if len(dirs) == 1 and pack_report.is_pack_grid(dirs[0]):
            page = pack_report.pack_grid_page(dirs[0], args.title)
        elif all(pack_report.is_pack_run(d) for d in dirs):
            page = pack_report.pack_run_page(dirs, args.title)
        else:
            raise InputError(
                "pack run folders are reported with pack run folders, a pack grid on its own"
            )
        out = pack_report.write_page(page, args.out)
        console.print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB, pack)")
        return 0
    grids = [d for d in args.dirs if is_replay_grid(Path(d))]
    if grids:
        if len(args.dirs) > 1:
            raise InputError(
                "a sweep folder is reported on its own (its runs are under runs/<trace>/: "
                "give those run folders to compare them with others)",
                path=str(grids[0]),
            )
        out = report_replay_grid(Path(grids[0]), args.out, args.title)
        console.print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB, sweep {grids[0]})")
        return 0
    from schedlab.report.federation_report import is_federation

    if any(is_federation(Path(d)) for d in args.dirs):
        return _federation(args)
    from schedlab.report.html_report import build_report  # pandas and matplotlib: only to build

    out = build_report(list(args.dirs), args.out, args.title)
    console.print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB, {len(args.dirs)} runs)")
    return 0


def _federation(args: argparse.Namespace) -> int:
    """``replay --federation`` run folders, or one ``sweep --federation`` folder (its runs):
    the page per dispatcher and per site."""
    from schedlab.report.federation_report import (
        grid_runs,
        is_federation_grid,
        is_federation_run,
        load_federation_runs,
        render_federation_page,
    )
    from schedlab.results import atomic_write

    dirs, grid = [Path(d) for d in args.dirs], None
    if any(is_federation_grid(d) for d in dirs):
        if len(dirs) > 1:
            raise InputError("a federation sweep folder is reported on its own", path=str(dirs[0]))
        grid, dirs = dirs[0], grid_runs(dirs[0])
    other = next((d for d in dirs if not is_federation_run(d)), None)
    if other is not None:
        raise InputError(
            "not a replay --federation run folder; federation runs are reported with "
            "federation runs",
            path=str(other),
        )
    if Path(args.out).is_dir():
        raise InputError("'--out' must be a file, but it is a folder", path=str(args.out))
    page = render_federation_page(load_federation_runs(dirs, grid), args.title)
    atomic_write(Path(args.out), lambda fh: fh.write(page))
    size = Path(args.out).stat().st_size / 1024
    console.print(f"wrote {args.out} ({size:.0f} KiB, {len(dirs)} federation runs)")
    return 0
