"""Wall time of replay with the network model on, against the same run without it.

1. Philly (82,247 jobs) on 250 × 8 V100 as a 25-leaf leaf-spine (8 spines, 10 hosts per leaf,
   one 100 Gbps NIC per host), random-phase sharing, FIFO/bestfit: the network run must take at
   most 3× the wall time of the run without ``--topology``.
2. The vClos setting: 5,000 jobs on the 8,192-GPU ``vclos`` leaf-spine (128 leaves × 16 hosts ×
   4 GPUs, 64 spines), Poisson arrivals (mean gap 241 s), sizes from the TPUv4 size CDF capped at
   512 GPUs, durations from Philly clipped to [1,000, 100,000] s and rounded to 100 s; powers of
   two: 50 % ResNet-50/BERT with halving-doubling, 20 % ResNet-50 ring, 30 % GPT-2-sized
   all-to-all; other sizes ring. FIFO/consolidate, worst-case sharing: at most 60 s.

python benchmarks/replay_network.py [--part philly|vclos|both] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import SHARED, peak_rss_mib, print_whole_process, replay_argv, time_cli

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"
SIZE_CDF = SHARED / "data" / "lumoscore" / "tpuv4_job_size_cdf.csv"
PHILLY_TOPOLOGY = "leafspine:leaves=25,spines=8,hosts_per_leaf=10,g=8,m=1,nic_gbps=100"


def _timed(spec: ReplaySpec, **kw: object) -> tuple[float, object]:
    """(seconds, record); prints wall and CPU seconds (the CPU figure is what a loaded, shared
    machine cannot inflate)."""
    t0, c0 = time.perf_counter(), time.process_time()
    record = run_replay(spec, **kw)  # type: ignore[arg-type]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"  {'with' if spec.topology else 'without'} --topology: {wall:.2f} s wall, {cpu:.2f} s CPU"
    )
    return cpu, record


def philly() -> None:
    jobs = read_jobs(PHILLY).jobs
    cluster = parse_cluster_spec("250x8:V100")
    base = ReplaySpec(cluster="250x8:V100", trace=str(PHILLY), policy="fifo")
    net = ReplaySpec(
        cluster="250x8:V100",
        trace=str(PHILLY),
        policy="fifo",
        topology=PHILLY_TOPOLOGY,
        net_sharing="random-phase",
    )
    plain, _ = _timed(base, cluster=cluster, jobs=jobs)
    with_net, record = _timed(net, cluster=cluster, jobs=jobs)
    n = record.network  # type: ignore[attr-defined]
    print(
        f"philly {len(jobs):,} jobs, 2,000 GPUs (CPU s): without --topology {plain:.2f} s, with "
        f"{with_net:.2f} s ({with_net / plain:.2f}×; target ≤ 3×); {n.footprints:,} footprints, "
        f"{n.solves:,} solves, {n.solver_rounds:,} rounds"
    )
    argv = replay_argv("250x8:V100", PHILLY, "fifo")
    print("  " + time_cli(argv, 1).line("whole CLI run without --topology"))
    topology = ["--topology", PHILLY_TOPOLOGY, "--net-sharing", "random-phase"]
    print("  " + time_cli([*argv, *topology], 1).line("whole CLI run with --topology"))


def vclos_trace(path: Path, n: int, seed: int) -> None:
    """The 5,000-job vClos-setting trace, as schedlab's own CSV with communication columns."""
    rng = np.random.default_rng(seed)
    table = np.genfromtxt(SIZE_CDF, delimiter=",", names=True)
    sizes = np.minimum(
        rng.choice(table["job_size_tpus"].astype(int), size=n, p=table["probability"]), 512
    )
    durations = read_jobs(PHILLY).jobs.duration
    dur = np.round(np.clip(rng.choice(durations, size=n), 1000, 100_000) / 100) * 100
    submit = np.cumsum(rng.exponential(241.0, size=n))
    kind = rng.random(n)
    lines = ["job_id,submit_time,num_gpus,duration,model_name,collective"]
    for i in range(n):
        s = int(sizes[i])
        if s & (s - 1) == 0 and kind[i] < 0.5:
            model, coll = ("resnet50" if kind[i] < 0.25 else "bert"), "hd"
        elif s & (s - 1) == 0 and kind[i] < 0.7:
            model, coll = "resnet50", "ring"
        elif s & (s - 1) == 0:
            model, coll = "gpt2", "a2a"
        else:
            model, coll = "resnet50", "ring"
        lines.append(f"j{i},{submit[i]:.3f},{s},{dur[i]:.0f},{model},{coll}")
    path.write_text("\n".join(lines) + "\n")


def vclos(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "vclos5000.csv"
        vclos_trace(trace, 5000, seed)
        spec = ReplaySpec(
            cluster="",
            trace=str(trace),
            policy="fifo",
            placement="consolidate",
            seed=seed,
            topology="vclos",
            net_sharing="worst-case",
        )
        wall, record = _timed(spec)
    n = record.network  # type: ignore[attr-defined]
    done = int(np.isfinite(record.end_time).sum())  # type: ignore[attr-defined]
    print(
        f"vclos 5,000 jobs, 8,192 GPUs: {wall:.2f} s CPU (target ≤ 60 s); {done:,} completed; "
        f"{n.footprints:,} footprints, {n.solves:,} solves, {n.solver_rounds:,} rounds"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("philly", "vclos", "both"), default="both")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not PHILLY.is_file() or not SIZE_CDF.is_file():
        raise SystemExit(f"benchmark needs {PHILLY} and {SIZE_CDF} (not found)")
    if args.part in ("philly", "both"):
        philly()
    if args.part in ("vclos", "both"):
        vclos(args.seed)
    print(f"peak memory: {peak_rss_mib():.0f} MiB")
    print_whole_process("this benchmark")


if __name__ == "__main__":
    main()
