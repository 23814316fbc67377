"""What energy accounting adds to replay wall time: the Philly trace with and without the meter.

python benchmarks/replay_energy.py [--cluster 250x8:V100] [--policies fifo tiresias] [--repeat 3]

Each policy is replayed ``--repeat`` times plain and with ``--power-model binary --ci
synth:gb2020`` (interleaved, best of each kept), and the overhead printed; the target is ≤ 20 %.
Both wall and CPU time are given: on a shared machine CPU time is the steadier of the two.
"""

from __future__ import annotations

import argparse
import time

from _common import SHARED, replay_argv, time_cli

from schedlab.energy.replay import EnergySpec
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"
ENERGY = EnergySpec(power_model="binary", ci="synth:gb2020")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="250x8:V100", help="cluster spec (default 2,000 GPUs)")
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not PHILLY.is_file():
        raise SystemExit(f"benchmark needs {PHILLY} (not found)")
    jobs = read_jobs(PHILLY).jobs
    cluster = parse_cluster_spec(args.cluster)
    print(f"{len(jobs):,} jobs on {cluster.total_gpus:,} GPUs ({args.cluster})")
    for policy in args.policies:
        best = {"plain": float("inf"), "energy": float("inf")}
        cpu = {"plain": float("inf"), "energy": float("inf")}
        for _ in range(args.repeat):
            for kind, energy in (("plain", EnergySpec()), ("energy", ENERGY)):
                spec = ReplaySpec(
                    cluster=args.cluster, trace=str(PHILLY), policy=policy, energy=energy
                )
                t0, c0 = time.perf_counter(), time.process_time()
                run_replay(spec, cluster, jobs)
                best[kind] = min(best[kind], time.perf_counter() - t0)
                cpu[kind] = min(cpu[kind], time.process_time() - c0)
        for what, t in (("wall", best), ("CPU", cpu)):
            overhead = t["energy"] / t["plain"] - 1
            print(
                f"{policy:>10} {what:>4}: plain {t['plain']:.2f} s, with energy "
                f"{t['energy']:.2f} s, overhead {100 * overhead:+.1f} % (engine alone)"
            )
        argv = replay_argv(args.cluster, PHILLY, policy)
        plain = time_cli(argv, args.repeat)
        metered = time_cli([*argv, "--power-model", "binary", "--ci", "synth:gb2020"], args.repeat)
        print(f"{'':>10} {plain.line('whole CLI run, plain')}")
        print(f"{'':>10} {metered.line('whole CLI run, with energy')}")


if __name__ == "__main__":
    main()
