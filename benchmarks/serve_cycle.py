"""Time one ``serve slurm`` scheduling cycle: 1,000 pending jobs on a 16-node × 8-GPU cluster.

The cycle is measured end to end as the scheduler runs it — parsing ``squeue --json`` and
``sinfo --json`` text, building the snapshot, resetting and asking the policy, and turning its
decisions into ``scontrol`` argument lists — against an in-memory Slurm whose job and node entries
are copies of records taken from Slurm 22.05 (tests/fixtures/slurm), so each carries the full set
of fields. The ``scontrol`` calls themselves are recorded, not run. Goal: ≤ 1 s per cycle.

With ``--real`` and a reachable Slurm (SLURM_CONF), it also times the real ``squeue --json``,
the ``squeue -O`` text read serve uses instead, ``sinfo --json`` and ``scontrol ping`` on that
cluster, to show what the commands add (each start is two ``scontrol`` calls of about that cost).

With ``--live`` it times whole cycles against that cluster as it is (in shadow mode, so nothing
is changed), reading jobs from ``squeue -O`` text and, for comparison, from ``squeue --json``.
The figures in docs/serve.md were taken on the dev cluster (4 nodes × 8 GPUs, every GPU busy
with a job of partition ``free``) with 1,000 held jobs of 1–8 GPUs in partition ``gpu``:

    for k in $(seq 1000); do sbatch --hold -t $((1 + k % 50)) --gres=gpu:$((1 << (k % 4))) \
        -o /dev/null --wrap "sleep 1"; done

    python benchmarks/serve_cycle.py [--pending 1000] [--nodes 16] [--repeat 5] [--real] [--live]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import print_whole_process

from schedlab.serve.client import SubprocessSlurm, slurm_reachable
from schedlab.serve.fake import FakeSlurm
from schedlab.serve.journal import Journal
from schedlab.serve.loop import ServeConfig, Server

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "slurm"
SIZES = np.array([1, 1, 1, 2, 2, 4, 8])


class JsonSlurm(FakeSlurm):
    """The fake Slurm, but answering with JSON text to parse, as the real commands do."""

    def squeue(self) -> dict[str, Any]:
        return json.loads(json.dumps({"meta": {}, "errors": [], "jobs": list(self.jobs.values())}))

    def sinfo(self) -> dict[str, Any]:
        return json.loads(
            json.dumps({"meta": {}, "errors": [], "nodes": list(self.nodes.values())})
        )


def payloads(pending: int, nodes: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Node and job entries cloned from recorded ones: every node half full of running jobs,
    ``pending`` held jobs of 1–8 GPUs behind them."""
    rng = np.random.default_rng(seed)
    sq = json.loads((FIXTURES / "squeue.json").read_text())["jobs"]
    si = json.loads((FIXTURES / "sinfo.json").read_text())["nodes"]
    running_t = next(j for j in sq if j["job_state"] == "RUNNING")
    held_t = next(j for j in sq if j["job_state"] == "PENDING" and j["priority"] == 0)
    node_t = si[0]
    node_list, jobs = [], []
    for k in range(nodes):
        n = copy.deepcopy(node_t)
        n.update(name=f"gpu{k + 1:03d}", state="mixed", state_flags=[], gres="gpu:8")
        node_list.append(n)
    job_id = 1000
    base = 1_700_000_000
    for k in range(nodes):  # 4 GPUs busy on every node, as two 2-GPU jobs
        for half in (0, 1):
            job_id += 1
            j = copy.deepcopy(running_t)
            j.update(
                job_id=job_id,
                nodes=f"gpu{k + 1:03d}",
                required_nodes=f"gpu{k + 1:03d}",
                tres_per_node="gres:gpu:2",
                gres_detail=[f"gpu:2(IDX:{2 * half}-{2 * half + 1})"],
                submit_time=base,
                start_time=base + 10,
                time_limit=int(rng.integers(10, 600)),
            )
            jobs.append(j)
    for k in range(pending):
        job_id += 1
        j = copy.deepcopy(held_t)
        j.update(
            job_id=job_id,
            tres_per_node=f"gres:gpu:{int(rng.choice(SIZES))}",
            submit_time=base + 20 + k,
            time_limit=int(rng.integers(10, 600)),
            required_nodes="",
        )
        jobs.append(j)
    return node_list, jobs


def time_cycles(policy: str, backfill: bool, pending: int, nodes: int, repeat: int) -> list[float]:
    node_list, jobs = payloads(pending, nodes)
    out = []
    for _ in range(repeat):
        fake = JsonSlurm(copy.deepcopy(node_list), copy.deepcopy(jobs))
        cfg = ServeConfig(policy=policy, backfill=backfill)
        server = Server(fake, cfg, Journal(None), clock=lambda: 1_700_000_100.0)
        t0 = time.perf_counter()
        report = server.cycle()
        out.append(time.perf_counter() - t0)
        assert report.queued == pending, report
    print(
        f"{policy + ('+backfill' if backfill else ''):>16}: "
        f"{statistics.median(out):.3f} s per cycle (median of {repeat}; min {min(out):.3f}, "
        f"max {max(out):.3f}); {report.started} started, {len(fake.calls)} scontrol calls"
    )
    return out


def time_real(repeat: int) -> None:
    ok, why = slurm_reachable()
    if not ok:
        print(f"real commands: skipped ({why})")
        return
    client = SubprocessSlurm()
    as_json = SubprocessSlurm(text_squeue=False)
    for name, call in (
        ("squeue --json", as_json.squeue),
        ("squeue -O (text)", client.squeue),
        ("sinfo --json", client.sinfo),
        ("scontrol ping", lambda: subprocess.run(["scontrol", "ping"], capture_output=True)),
    ):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        print(f"{name:>16}: {statistics.median(times) * 1000:.0f} ms (median of {repeat})")


def time_live(repeat: int, partition: str | None) -> None:
    """Whole shadow cycles on the reachable cluster: text reads, then JSON reads."""
    ok, why = slurm_reachable()
    if not ok:
        print(f"live cycles: skipped ({why})")
        return
    for label, text in (("squeue -O text", True), ("squeue --json", False)):
        client = SubprocessSlurm(text_squeue=text)
        cfg = ServeConfig(policy="fifo", partition=partition, shadow=True)
        server = Server(client, cfg, Journal(None))
        server.cycle()  # the first cycle reads the array throttles and journals arrivals
        cycles, reads = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            client.squeue()
            reads.append(time.perf_counter() - t0)
            report = server.cycle()
            cycles.append(report.seconds)
        print(
            f"live cycle, {label}: {statistics.median(cycles):.3f} s (median of {repeat}; "
            f"min {min(cycles):.3f}), of which reading jobs {statistics.median(reads):.3f} s; "
            f"{report.queued} queued, {report.running} running"
            + (f"; {client.fallbacks} fallbacks to JSON" if text else "")
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--real", action="store_true", help="also time the real Slurm commands")
    ap.add_argument("--live", action="store_true", help="also time whole cycles on that Slurm")
    ap.add_argument("--partition", default=None, help="the partition of --live (default: all)")
    args = ap.parse_args()
    print(f"one cycle, {args.pending:,} pending jobs, {args.nodes} nodes × 8 GPUs (half busy):")
    worst = 0.0
    for policy, backfill in (("fifo", False), ("fifo", True), ("sjf", True), ("tiresias", False)):
        worst = max(
            worst,
            statistics.median(time_cycles(policy, backfill, args.pending, args.nodes, args.repeat)),
        )
    print(
        f"slowest median: {worst:.3f} s per cycle (goal ≤ 1 s): {'met' if worst <= 1 else 'MISSED'}"
    )
    if args.real:
        time_real(args.repeat)
    if args.live:
        time_live(args.repeat, args.partition)


if __name__ == "__main__":
    main()
    print_whole_process(
        "the serve-cycle benchmark (no single schedlab command: a live cycle needs Slurm)"
    )
