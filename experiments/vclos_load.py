"""The vClos load study: average JCT and JWT over load for the electrical fabric (locality +
worst-case sharing), vClos, OCS-vClos and the contention-free ideal (locality + isolated).

5,000 jobs on the 8,192-GPU ``vclos`` fabric (``ocs`` for OCS-vClos), Poisson arrivals with the
mean gap β swept around 241 s, FIFO without backfill; see ``schedlab.experiments.vclos_load``
for the workload. Writes table.csv, relative.csv, table.md, figure.png and the traces into OUT;
``--lumos`` adds the group's 4,096-GPU setting (1,000 jobs, β = 2,000 s) beside their logs.

python experiments/vclos_load.py --out DIR [--quick] [--workers 2] [--seed 0] [--lumos]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from schedlab.errors import InputError
from schedlab.experiments.vclos_load import (
    LUMOS_4096,
    QUICK,
    Setting,
    lumos_reference,
    progress_line,
    run_study,
    write_outputs,
)
from schedlab.output_dir import StagedDir

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="a small fabric and 120 jobs (seconds)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--betas", type=float, nargs="+", help="mean gaps between arrivals, s")
    ap.add_argument("--lumos", action="store_true", help="also the 4,096-GPU, β = 2,000 s setting")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder")
    args = ap.parse_args(argv)
    for need in ("data/lumoscore/tpuv4_job_size_cdf.csv", "traces/philly-adaptdl/philly.csv"):
        if not (args.shared / need).is_file():
            print(f"error: the study needs {args.shared / need} (not found)", file=sys.stderr)
            return 2
    setting = replace(QUICK if args.quick else Setting(), seed=args.seed)
    if args.betas:
        setting = replace(setting, betas=tuple(args.betas))
    try:
        stage = StagedDir(args.out)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        out = stage.path
        traces = out / "traces"
        traces.mkdir()
        started = time.perf_counter()

        def done(row: dict[str, object]) -> None:
            print(progress_line(row), flush=True)

        table = run_study(args.shared, setting, traces, args.workers, on_done=done)
        rel = write_outputs(table, out)
        print((out / "table.md").read_text())
        if args.lumos:
            lumos_dir = out / "lumos-4096"
            lumos_dir.mkdir()
            (lumos_dir / "traces").mkdir()
            lumos = run_study(
                args.shared, replace(LUMOS_4096, seed=args.seed), lumos_dir / "traces",
                args.workers, on_done=done,
            )  # fmt: skip
            write_outputs(lumos, lumos_dir)
            reference = lumos_reference(args.shared)
            reference.to_csv(lumos_dir / "published.csv", index=False)
            print(reference.to_string(index=False))
        print(f"sweep wall time: {time.perf_counter() - started:.0f} s; rows: {len(table)}")
        del rel
    except BaseException:
        stage.discard()
        raise
    stage.commit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
