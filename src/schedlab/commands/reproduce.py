"""``schedlab reproduce``: list the reproductions of published results, run one or all.

Each study writes ``OUT/NAME/`` (its tables, figures, ``checks.csv`` and ``table.md``: every
published figure beside ours, the tolerance and a verdict) and the command writes
``OUT/summary.md`` with every study's table. ``--quick`` runs a smoke version of each study in
seconds (its verdicts are not the study's). ``--check`` exits 1 when a gated check fails or
a study could not run (its data missing); ``--update FILE`` rewrites FILE's
``<!-- reproduce:NAME -->`` blocks with the new tables.

Only the catalog is read to list studies; a study's modules are imported when it runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from schedlab.commands.common import check_workers, console, stdout
from schedlab.errors import InputError
from schedlab.reproduce.catalog import STUDIES, Study

#: Where the tables go without --out.
DEFAULT_OUT = Path("schedlab-reproduce")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="list and run the reproductions of published results",
        description=(
            "Run the studies that rebuild published results (FGD, ElasticFlow, Titan, vClos, "
            "Crux, ...) and write each one's table: published value, ours, tolerance, verdict. "
            "Without a study name or --all it lists them."
        ),
    )
    p.add_argument("studies", nargs="*", metavar="STUDY", help="studies to run (see --list)")
    p.add_argument("--all", action="store_true", help="run every study")
    p.add_argument("--list", action="store_true", help="list the studies and exit")
    p.add_argument("--quick", action="store_true", help="a smoke version of each study (seconds)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default ./{DEFAULT_OUT}")
    p.add_argument("--workers", type=int, default=2, help="parallel runs per study (default 2)")
    p.add_argument(
        "--shared", type=Path, default=None, help="the shared data folder (default ../shared)"
    )
    p.add_argument(
        "--check", action="store_true", help="exit 1 if a gated check fails (not with --quick)"
    )
    p.add_argument(
        "--update",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="rewrite FILE's <!-- reproduce:NAME --> blocks with the new tables (repeatable)",
    )
    p.set_defaults(run=run)


def default_shared() -> Path:
    """``../shared`` beside the working folder's checkout, as the tests and benchmarks find it."""
    for base in (Path.cwd(), *Path.cwd().parents):
        if (base / "pyproject.toml").is_file() and (base.parent / "shared").is_dir():
            return base.parent / "shared"
    return Path("..") / "shared"


def run(args: argparse.Namespace) -> int:
    if args.list or (not args.studies and not args.all):
        _list()
        return 0
    if args.all and args.studies:
        raise InputError("give study names or --all, not both")
    known = {s.name: s for s in STUDIES}
    for name in args.studies:
        if name not in known:
            raise InputError(f"unknown study {name!r} (known: {', '.join(known)})")
    if args.update and args.quick:
        raise InputError("'--update' writes the full studies' tables: drop '--quick'")
    if args.check and args.quick:
        raise InputError("'--check' judges the full studies' gates: drop '--quick'")
    workers = check_workers(args.workers)
    if args.shared is not None and not args.shared.is_dir():
        raise InputError(f"'--shared' must be the shared data folder (not a folder: {args.shared})")
    shared = args.shared if args.shared is not None else default_shared()
    chosen = list(STUDIES) if args.all else [known[n] for n in dict.fromkeys(args.studies)]
    for path in args.update:
        if not path.is_file():
            raise InputError(f"'--update' file not found: {path}")
    return _run(chosen, args, shared, workers)


def _list() -> None:
    from rich.table import Table

    table = Table(title="reproductions (schedlab reproduce NAME | --all [--quick])")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("what")
    table.add_column("full / quick")
    for s in STUDIES:
        table.add_row(s.name, f"{s.title} ({s.source})", f"{s.full}\n[dim]quick: {s.quick}[/]")
    stdout.print(table)


def _run(chosen: list[Study], args: argparse.Namespace, shared: Path, workers: int) -> int:
    from schedlab.output_dir import staged_dir
    from schedlab.reproduce.runner import run_study

    results = []
    skipped: list[tuple[str, str]] = []
    with staged_dir(args.out) as out, _progress(len(chosen)) as progress:
        _write_top_config(out, chosen, args.quick, workers, shared)
        for study in chosen:
            missing = study.missing(shared)
            if missing is not None:
                skipped.append((study.name, f"needs {missing}"))
                progress.skip(study, f"skipped: needs {missing}")
                continue
            progress.start(study)
            result = run_study(
                study,
                shared,
                out / study.name,
                quick=args.quick,
                workers=workers,
                progress=progress,
            )
            results.append(result)
            progress.finish(study, result)
            stdout.print(f"\n## {study.name}: {study.title}\n", markup=False)
            stdout.print(result.markdown(), markup=False, soft_wrap=True)
        _write_summary(out, results, skipped, args.quick)
    failed = [(r.study, c.what) for r in results for c in r.failed]
    for path in args.update:
        from schedlab.reproduce.markers import update_file

        tables = {r.study: (args.out / r.study / "table.md").read_text() for r in results}
        names = update_file(path, tables)
        console.print(f"updated {path}: {', '.join(names)}")
    console.print(
        f"{len(results)} studies run, {len(skipped)} skipped; wrote {args.out}/summary.md"
        + (" (quick: smoke runs, not the studies' figures)" if args.quick else "")
    )
    for study, what in failed:
        console.print(f"[bold red]FAIL[/] {study}: {what}")
    for study, why in skipped if args.check else ():
        console.print(f"[bold red]NOT CHECKED[/] {study}: {why}")
    return 1 if (failed or skipped) and args.check else 0


def _write_top_config(
    out: Path, chosen: list[Study], quick: bool, workers: int, shared: Path
) -> None:
    from schedlab import __version__
    from schedlab.results import write_config

    settings = {
        "studies": [s.name for s in chosen],
        "quick": quick,
        "workers": workers,
        "shared": str(shared),
    }
    write_config(out / "config.toml", settings, f"schedlab {__version__} reproduce")


def _write_summary(out: Path, results: list, skipped: list[tuple[str, str]], quick: bool) -> None:
    parts = ["# Reproductions" + (" (quick smoke runs)" if quick else ""), ""]
    for r in results:
        parts += [f"## {r.study}: {r.title} ({r.source}; {r.seconds:.0f} s)", "", r.markdown()]
    for name, why in skipped:
        parts += [f"## {name}: skipped ({why})", ""]
    (out / "summary.md").write_text("\n".join(parts))


class _Lines:
    """Progress as lines on stderr (when it is not a terminal): a study's stages and steps."""

    queue = None

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.name = ""
        self.began = time.perf_counter()
        self.stage = ("", 0, 0)

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _say(self, text: str) -> None:
        print(f"reproduce: {text}", file=sys.stderr, flush=True)

    def start(self, study: Study) -> None:
        self.name, self.began = study.name, time.perf_counter()
        self._say(f"[{self.done + 1}/{self.total}] {study.name}: {study.title}")

    def skip(self, study: Study, why: str) -> None:
        self.done += 1
        self._say(f"[{self.done}/{self.total}] {study.name}: {why}")

    def begin(self, total: int, what: str) -> None:
        self.stage = (what, 0, total)

    def advance(self, label: str) -> None:
        what, done, total = self.stage
        self.stage = (what, done + 1, total)
        elapsed = time.perf_counter() - self.began
        self._say(f"  {self.name}: {what}: {done + 1}/{total} ({elapsed:.0f} s)")

    def finish(self, study: Study, result: Any) -> None:
        self.done += 1
        bad = len(result.failed)
        self._say(
            f"  {study.name} done in {result.seconds:.0f} s"
            + (f", {bad} gated check(s) failed" if bad else "")
        )


class _Bars(_Lines):
    """Progress as rich bars on a terminal: studies, the running study's stage, each replay."""

    def __init__(self, total: int) -> None:
        super().__init__(total)
        from schedlab.commands.common import progress_bar

        self.bar = progress_bar(transient=True)
        self.studies = self.bar.add_task("studies", total=total)
        self.task: Any = None
        self._bars: Any = None
        self.queue = None

    def __enter__(self) -> _Bars:
        from schedlab.commands.common import run_bars

        self.bar.__enter__()
        self._bars = run_bars(self.bar)
        self.queue = self._bars.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.__exit__(*exc)
        self.bar.__exit__(*exc)

    def _say(self, text: str) -> None:
        self.bar.console.print(text, markup=False)

    def start(self, study: Study) -> None:
        self.name, self.began = study.name, time.perf_counter()
        self.bar.update(self.studies, description=f"studies ({study.name})")

    def skip(self, study: Study, why: str) -> None:
        self._say(f"{study.name}: {why}")
        self.bar.advance(self.studies)

    def begin(self, total: int, what: str) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task(f" {self.name}: {what}", total=total)

    def advance(self, label: str) -> None:
        self.bar.advance(self.task)

    def finish(self, study: Study, result: Any) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        self.bar.advance(self.studies)
        self._say(f"{study.name} done in {result.seconds:.0f} s")


def _progress(total: int) -> _Lines:
    return _Bars(total) if sys.stderr.isatty() else _Lines(total)
