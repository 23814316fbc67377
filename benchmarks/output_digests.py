"""Digests of the outputs users keep: record them once, check later that nothing moved a byte.

Runs the commands as a user types them (each a fresh ``python -m schedlab`` process), hashes
every file they write and compares the hashes with ``benchmarks/output_digests.json``:

- ``demo``: ``schedlab demo`` (pack study, replay comparison with its HTML report, deadlines);
- ``ef195``: six replays of the ElasticFlow 195-job trace (16 × 8 A100, 240 s slot, A100 tables):
  edf-greedy, gandiva, tiresias, themis, chronus, elasticflow;
- ``pack``: three ``schedlab pack`` runs on the Alibaba GPU-2023 lists (fgd with figures as the
  README gives it, bestfit and random on other lists);
- ``philly``: the 82,247-job Philly trace on 250 × 8 V100 under fifo and tiresias.

What a run measures about itself (wall seconds, jobs or pods per second, the report's wall-time
row) changes from run to run and is blanked before hashing, as are the folder of the public traces
(so a checkout elsewhere gives the same digests) and the process id in the staging-folder paths
the demo's HTML report names. Everything else must be identical.

    python benchmarks/output_digests.py check [--cases ef195 pack]   # exit 1 on any difference
    python benchmarks/output_digests.py record                      # after an intended change
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import SHARED

DIGESTS = Path(__file__).with_name("output_digests.json")
TRACES = SHARED / "traces"
OPENB = TRACES / "alibaba-gpu-2023"
ITP195 = TRACES / "elasticflow-itp" / "simulation" / "195job.csv"
A100 = TRACES / "elasticflow-artifact" / "throughputs_A100"
PHILLY = TRACES / "philly-adaptdl" / "philly.csv"

#: Keys of summary.json (and columns of result tables) that time the run itself.
TIMING_KEYS = frozenset({"wall_seconds", "wall_seconds_mean", "wall_seconds_sd"})
TIMING_KEYS |= {"wall_seconds_ci95", "jobs_per_second", "pods_per_second"}
#: The HTML report's row of wall times.
WALL_ROW = re.compile(r"<tr><th scope=\"row\">Wall time[^<]*</th>.*?</tr>", re.S)
#: A staging folder's path (``DIR/.NAME.tmp-PID-XXXX``, see schedlab.output_dir) as a report
#: written inside it names it: it differs with the process id, so only NAME is kept.
STAGED = re.compile(r"[^\s\"'<>]*/\.([^/\s\"'<>]+)\.tmp-\d+-\w+")

EF195_POLICIES = ("edf-greedy", "gandiva", "tiresias", "themis", "chronus", "elasticflow")
PACK_RUNS = (
    ("fgd-default-42", "openb_pod_list_default.csv", "fgd", 42, ()),
    ("bestfit-gpushare40-43", "openb_pod_list_gpushare40.csv", "bestfit", 43, ("--no-figures",)),
    ("random-multigpu50-7", "openb_pod_list_multigpu50.csv", "random", 7, ()),
)
PHILLY_POLICIES = ("fifo", "tiresias")


def case_commands() -> dict[str, list[tuple[str, list[str]]]]:
    """Each case: (output folder, schedlab arguments) per run; runs write under one folder."""
    ef = [
        (
            f"ef195-{p}",
            [
                *("replay", "--cluster", "16x8:A100", "--trace", str(ITP195), "--policy", p),
                *("--slot", "240", "--throughputs", str(A100), "--out", f"ef195-{p}"),
            ],
        )
        for p in EF195_POLICIES
    ]
    pack = [
        (
            f"pack-{name}",
            [
                *("pack", "--nodes", str(OPENB / "openb_node_list_gpu_node.csv")),
                *("--pods", str(OPENB / pods), "--policy", policy, "--seed", str(seed)),
                *("--inflate", "1.3", "--out", f"pack-{name}", *extra),
            ],
        )
        for name, pods, policy, seed, extra in PACK_RUNS
    ]
    philly = [
        (
            f"philly-{p}",
            [
                *("replay", "--cluster", "250x8:V100", "--trace", str(PHILLY), "--policy", p),
                *("--out", f"philly-{p}"),
            ],
        )
        for p in PHILLY_POLICIES
    ]
    return {"demo": [("schedlab-demo", ["demo"])], "ef195": ef, "pack": pack, "philly": philly}


def normalise(name: str, data: bytes) -> bytes:
    """The file's bytes with what times the run blanked and the traces' folder made relative."""
    shared = str(SHARED).encode()
    data = data.replace(shared, b"$SHARED")
    if name.endswith(".json"):
        doc = json.loads(data)
        _blank_json(doc)
        return json.dumps(doc, sort_keys=True).encode()
    if name.endswith(".csv"):
        return _blank_csv(data)
    if name.endswith(".html"):
        return STAGED.sub(r"\1", WALL_ROW.sub("", data.decode())).encode()
    return data


def _blank_json(doc: object) -> None:
    if isinstance(doc, dict):
        for key in list(doc):
            if key in TIMING_KEYS:
                doc[key] = None
            else:
                _blank_json(doc[key])
    elif isinstance(doc, list):
        for item in doc:
            _blank_json(item)


def _blank_csv(data: bytes) -> bytes:
    text = data.decode()
    header = text.split("\n", 1)[0].rstrip("\r").split(",")
    timed = [i for i, col in enumerate(header) if col in TIMING_KEYS]
    if not timed:
        return data
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    rows = csv.reader(io.StringIO(text))
    writer.writerow(next(rows))
    for row in rows:
        writer.writerow(["" if i in timed else v for i, v in enumerate(row)])
    return out.getvalue().encode()


def digest_tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (normalised), by path relative to ``root``."""
    out: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(normalise(rel, path.read_bytes())).hexdigest()
    return out


def run_case(
    runs: list[tuple[str, list[str]]], log: Callable[[str], None]
) -> tuple[dict[str, str], float]:
    """Run a case's commands in a fresh folder; the digests of all they wrote, and CPU seconds."""
    digests: dict[str, str] = {}
    cpu = 0.0
    with tempfile.TemporaryDirectory(prefix="schedlab-digests-") as tmp:
        for folder, argv in runs:
            before = _children_cpu()
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "schedlab", *argv], cwd=tmp, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise SystemExit(f"schedlab {' '.join(argv)} failed:\n{done.stderr}")
            spent = _children_cpu() - before
            cpu += spent
            log(f"  {folder}: {time.perf_counter() - started:.1f} s wall, {spent:.1f} s CPU")
            for rel, digest in digest_tree(Path(tmp) / folder).items():
                digests[f"{folder}/{rel}"] = digest
    return digests, cpu


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("check", "record"))
    cases = case_commands()
    ap.add_argument("--cases", nargs="+", choices=list(cases), default=list(cases))
    args = ap.parse_args()
    if not TRACES.is_dir():
        sys.exit(f"needs the public traces under {TRACES} (not found)")
    stored: dict[str, dict[str, str]] = json.loads(DIGESTS.read_text()) if DIGESTS.is_file() else {}
    differ = 0
    for name in args.cases:
        print(f"{name}:", flush=True)
        got, cpu = run_case(cases[name], lambda line: print(line, flush=True))
        print(f"  {len(got)} files, {cpu:.1f} s CPU in all")
        if args.action == "record":
            stored[name] = got
            continue
        want = stored.get(name)
        if want is None:
            print(f"  no digests recorded for {name!r}: run 'record' first")
            differ += 1
            continue
        changed = [p for p in sorted(set(want) | set(got)) if want.get(p) != got.get(p)]
        for path in changed:
            what = "missing" if path not in got else "new" if path not in want else "differs"
            print(f"  {what}: {path}")
        print(f"  {len(changed)} differ" if changed else "  identical")
        differ += len(changed)
    if args.action == "record":
        DIGESTS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"wrote {DIGESTS}")
    elif differ:
        sys.exit(f"{differ} file(s) differ from {DIGESTS.name}")


if __name__ == "__main__":
    main()
