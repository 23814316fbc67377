"""The vClos load study (network spec §5.2): average JCT and JWT over load for the electrical
fabric, vClos, OCS-vClos and the contention-free ideal.

Workload (one per load point and seed, the same jobs for every run of that point): Poisson
arrivals with mean gap β; sizes drawn from the TPU v4 job-size distribution (LumosCore) capped at
512 GPUs; run times drawn from the Philly durations, clipped to [1,000, 100,000] s and rounded to
100 s; per size, powers of two: 50 % CNN/BERT with halving-doubling (VGG-16 or BERT, even odds),
20 % a small model with a ring (ResNet-50), 30 % "Pangu" with all-to-all; other sizes ring (VGG-16
or BERT). Communication follows RapidNetSim's ``gradient=share``: a job's share s of its run time
alone (``comm_share.csv``, at the largest GPU count listed ≤ its size, else the smallest) sets
its compute time C = (1 − s)·T^ref and its gradient bytes so that its collective alone takes
s·T^ref on the packed reference placement (its GPUs on the lowest hosts of the ``vclos`` fabric,
traffic spread evenly); T^ref = 1 s. The trace duration is the run time alone on that placement,
which is how replay reads every trace duration under a network, so a job runs duration · T/T^ref.
No overlap.

Runs (FIFO without backfill): ``locality`` + worst-case sharing (electrical), ``vclos``,
``ocs-vclos`` on the ``ocs`` fabric, ``locality`` + isolated (ideal).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.experiments.live_progress import reporter
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import parse_topology
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA
from schedlab.network.topology import Topology
from schedlab.traces.formats import read_jobs

#: The published mean gap between arrivals (seconds) and the job count of the study.
BETA = 241.0
JOBS = 5000
SIZE_CAP = 512
DURATION_RANGE = (1000.0, 100_000.0)
T_REF = 1.0

#: (label, topology, placement, sharing, routing) of the study's four runs. The ideal spreads
#: each job's bytes evenly over all shortest paths: ECMP would collide a job's flows with its
#: own, which is contention too.
RUNS: tuple[tuple[str, str, str, str, str], ...] = (
    ("electrical", "vclos", "locality", "worst-case", "ecmp"),
    ("vclos", "vclos", "vclos", "isolated", "ecmp"),
    ("ocs-vclos", "ocs", "ocs-vclos", "isolated", "ecmp"),
    ("ideal", "vclos", "locality", "isolated", "spray"),
)

#: The published direction [secondary], for the table's notes.
PUBLISHED = (
    "OCS-vClos average JWT −65.65 % against vClos and average JCT within 3.38 % of the ideal; "
    "vClos up to −20 % JCT against the electrical fabric at high load"
)


#: Job-size mixes: ``tpuv4`` (the spec's: LumosCore's TPU v4 size distribution, 32–512 GPUs,
#: whole leaves or one leaf on the 64-GPU leaves of ``vclos``) and ``profiled`` (the GPU counts
#: LumosCore's communication-share table profiles its small models at, 4–128 GPUs, drawn one
#: row of ``comm_share.csv`` uniformly: 96 and 128 GPUs take 1.5 and 2 leaves, and small jobs
#: leave leaves part-full, so multi-leaf jobs need spine sets over partly used leaves).
MIXES = ("tpuv4", "profiled")


@dataclass(frozen=True)
class Setting:
    """One load study: fabric sizes, job count, load points, seed, size mix."""

    jobs: int = JOBS
    betas: tuple[float, ...] = (400.0, 320.0, 280.0, 241.0, 210.0)
    seed: int = 0
    vclos: str = "vclos"
    ocs: str = "ocs"
    size_cap: int = SIZE_CAP
    runs: tuple[tuple[str, str, str, str, str], ...] = RUNS
    mix: str = "tpuv4"


#: A quick setting a test runs in seconds: 8 leaves of 64 GPUs (the full fabric's leaves), 120
#: jobs of at most 128 GPUs, two load points.
QUICK = Setting(
    jobs=120,
    betas=(3000.0, 1500.0),
    size_cap=128,
    vclos="vclos:leaves=8,spines=16,hosts_per_leaf=16,g=4,m=4,nic_gbps=100",
    ocs="ocs:leaves=16,spines=16,hosts_per_leaf=8,g=4,m=4,nic_gbps=100",
)

#: The group's published 4,096-GPU setting (64 leaves of 64 GPUs, 1,000 jobs, β = 2,000 s).
LUMOS_4096 = Setting(
    jobs=1000,
    betas=(2000.0,),
    vclos="vclos:leaves=64,spines=64",
    ocs="ocs:leaves=128,spines=64",
)


# -- the workload -------------------------------------------------------------------------------
def size_table(shared: Path) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(shared / "data" / "lumoscore" / "tpuv4_job_size_cdf.csv")
    p = frame["probability"].to_numpy(dtype=np.float64)
    return frame["job_size_tpus"].to_numpy(dtype=np.int64), p / p.sum()


def comm_shares(shared: Path) -> pd.DataFrame:
    return pd.read_csv(shared / "data" / "lumoscore" / "comm_share.csv")


def share_of(shares: pd.DataFrame, model: str, collective: str, gpus: int) -> float:
    """The model's share of run time in the collective, at the largest GPU count listed ≤
    ``gpus`` (else the smallest listed; rows without a count apply to every size)."""
    rows = shares[(shares["model"] == model) & (shares["collective"] == collective)]
    if rows.empty:
        raise KeyError(f"no communication share for {model} {collective}")
    counts = rows["gpus"].to_numpy(dtype=np.float64)
    values = rows["share_of_runtime"].to_numpy(dtype=np.float64)
    if np.isnan(counts).all():
        return float(values[0])
    below = np.flatnonzero(counts <= gpus)
    i = below[np.argmax(counts[below])] if len(below) else int(np.nanargmin(counts))
    return float(values[i])


#: Trace model names of the profiled mix's rows (ResNet-101 has no gradient size of its own here:
#: its bytes come from its communication share like every job's, the name only labels it).
PROFILED_MODELS = {
    "VGG16": "vgg16",
    "ResNet50": "resnet50",
    "ResNet101": "resnet50",
    "Bert": "bert",
}


def profiled_rows(shares: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``comm_share.csv`` with a GPU count (the small models' profiles)."""
    rows = shares[shares["gpus"].notna() & shares["model"].isin(list(PROFILED_MODELS))]
    return rows.reset_index(drop=True)


def mean_size(shared: Path, mix: str, size_cap: int = SIZE_CAP) -> float:
    """Expected GPUs of a job of ``mix`` (to set the profiled mix's arrival gaps)."""
    if mix == "profiled":
        return float(profiled_rows(comm_shares(shared))["gpus"].mean())
    values, probs = size_table(shared)
    return float((np.minimum(values, size_cap) * probs).sum())


def job_kind(size: int, draw: float, pick: float) -> tuple[str, str, str, str]:
    """(model shown, collective, share model, share collective) for a job of ``size`` GPUs."""
    if pick < 0.5:
        big_model = ("vgg16", "hd", "VGG16", "all_reduce")
    else:
        big_model = ("bert", "hd", "Bert", "all_reduce")
    if size & (size - 1) == 0:
        if draw < 0.5:
            return big_model
        if draw < 0.7:
            return ("resnet50", "ring", "ResNet50", "all_reduce")
        return ("pangu", "a2a", "Pangu", "all_to_all+all_reduce")
    return (big_model[0], "ring", big_model[2], "all_reduce")


def workload(
    shared: Path,
    jobs: int,
    beta: float,
    seed: int,
    topo: Topology,
    size_cap: int = SIZE_CAP,
    mix: str = "tpuv4",
) -> pd.DataFrame:
    """The study's jobs as schedlab's own trace columns (communication included)."""
    rng = np.random.default_rng([seed, int(beta * 1000)])
    shares = comm_shares(shared)
    if mix == "profiled":
        rows = profiled_rows(shares)
        picked = rows.iloc[rng.integers(len(rows), size=jobs)].reset_index(drop=True)
        sizes = picked["gpus"].to_numpy(dtype=np.int64)
    else:
        values, probs = size_table(shared)
        sizes = np.minimum(rng.choice(values, size=jobs, p=probs), size_cap)
    philly = read_jobs(shared / "traces" / "philly-adaptdl" / "philly.csv").jobs.duration
    lo, hi = DURATION_RANGE
    durations = np.round(np.clip(rng.choice(philly, size=jobs), lo, hi) / 100.0) * 100.0
    submit = np.cumsum(rng.exponential(beta, size=jobs))
    draw, pick = rng.random(jobs), rng.random(jobs)
    calibrate = Calibration(topo)
    share_cache: dict[tuple[str, str, int], float] = {}
    out = []
    for i in range(jobs):
        n = int(sizes[i])
        if mix == "profiled":
            row = picked.iloc[i]
            model = PROFILED_MODELS[str(row["model"])]
            coll = "hd" if n & (n - 1) == 0 else "ring"
            s = float(row["share_of_runtime"])
        else:
            model, coll, share_model, share_coll = job_kind(n, float(draw[i]), float(pick[i]))
            key = (share_model, share_coll, n)
            if key not in share_cache:
                parts = share_coll.split("+")
                share_cache[key] = sum(share_of(shares, share_model, c, n) for c in parts)
            s = share_cache[key]
        compute = (1.0 - s) * T_REF
        out.append(
            {
                "job_id": f"j{i}",
                "submit_time": round(float(submit[i]), 3),
                "num_gpus": n,
                # run time alone on the reference placement (replay's compact placement)
                "duration": float(durations[i]),
                "model_name": model,
                "collective": coll,
                "gradient_bytes": calibrate.bytes(coll, n, compute, s * T_REF),
                "compute_time": compute,
                "overlap": 0.0,
                "isolated_duration": float(durations[i]),
                "comm_share": s,
            }
        )
    return pd.DataFrame(out)


class Calibration:
    """Gradient bytes that make a collective take a given time alone on the packed reference
    placement (one footprint of one byte per (collective, size), cached; the rule of
    :func:`schedlab.network.footprint.bytes_for_comm_time`)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.per_byte: dict[tuple[str, int], tuple[float, float]] = {}

    def bytes(self, collective: str, gpus: int, compute: float, target: float) -> float:
        key = (collective, gpus)
        if key not in self.per_byte:
            g = int(self.topo.host_gpus[0])
            hosts = math.ceil(gpus / g)
            placement = tuple((h, tuple(range(min(g, gpus - h * g)))) for h in range(hosts))
            spec = CommSpec(collective=collective, gradient_bytes=1.0, compute=compute)
            unit = footprint(spec, placement, self.topo, Routing("spray"), 0)
            # D⁰ = S·(time of one byte) + α·steps, so S = (target − α·steps) / (time of a byte)
            self.per_byte[key] = (unit.comm_time(0.0), DEFAULT_ALPHA * unit.steps)
        per_byte, latency = self.per_byte[key]
        if per_byte <= 0 or target <= latency:
            raise ValueError(f"no gradient size gives {target:g} s for {collective} on {gpus} GPUs")
        return (target - latency) / per_byte


def offered_load(frame: pd.DataFrame, gpus: int) -> float:
    """GPU-seconds asked (alone) per GPU-second of the arrival span."""
    span = float(frame["submit_time"].max() - frame["submit_time"].min())
    work = float((frame["num_gpus"] * frame["isolated_duration"]).sum())
    return work / (span * gpus) if span > 0 else math.inf


# -- the runs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    label: str
    mix: str
    beta: float
    trace: str
    topology: str
    placement: str
    sharing: str
    routing: str
    seed: int
    load: float


def run_task(task: Task) -> dict[str, object]:
    """One replay of the study and its row."""
    spec = ReplaySpec(
        cluster="",
        trace=task.trace,
        policy="fifo",
        placement=task.placement,
        seed=task.seed,
        topology=task.topology,
        net_sharing=task.sharing,
        net_routing=task.routing,
    )
    started, cpu = time.perf_counter(), time.process_time()
    record = run_replay(spec, progress=reporter(f"vclos/{task.mix}/{task.beta:g}/{task.label}"))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    submit = record.jobs.submit_time
    done = np.isfinite(record.end_time)
    jct = record.end_time[done] - submit[done]
    jwt = record.first_start[done] - submit[done]
    jrt = record.end_time[done] - record.first_start[done]
    net = record.network
    return {
        "mix": task.mix,
        "run": task.label,
        "beta": task.beta,
        "load": round(task.load, 4),
        "jobs": len(submit),
        "completed": int(done.sum()),
        "avg_jct": float(jct.mean()) if done.any() else math.nan,
        "avg_jwt": float(jwt.mean()) if done.any() else math.nan,
        "avg_jrt": float(jrt.mean()) if done.any() else math.nan,
        "p99_jct": float(np.percentile(jct, 99)) if done.any() else math.nan,
        "mean_slowdown": float(np.nanmean(net.net_slowdown)) if net is not None else math.nan,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
    }


def progress_line(row: dict[str, object]) -> str:
    """One finished run, as the study prints it."""
    return (
        f"  β={row['beta']:g} {row['run']}: JCT {row['avg_jct']:,.0f} s, "
        f"JWT {row['avg_jwt']:,.0f} s ({row['wall_s']} s wall, {row.get('cpu_s')} s CPU)"
    )


def tasks_for(shared: Path, setting: Setting, trace_dir: Path) -> list[Task]:
    """Write one trace per load point and list every run of the study."""
    topo = parse_topology(setting.vclos)
    out = []
    for beta in setting.betas:
        frame = workload(
            shared, setting.jobs, beta, setting.seed, topo, setting.size_cap, setting.mix
        )
        path = trace_dir / f"jobs-{setting.mix}-beta{beta:g}.csv"
        frame.to_csv(path, index=False)
        load = offered_load(frame, topo.total_gpus)
        for label, fabric, placement, sharing, routing in setting.runs:
            spec = setting.vclos if fabric == "vclos" else setting.ocs
            task = Task(
                label,
                setting.mix,
                beta,
                str(path),
                spec,
                placement,
                sharing,
                routing,
                setting.seed,
                load,
            )
            out.append(task)
    return out


def run_study(
    shared: Path,
    setting: Setting,
    trace_dir: Path,
    workers: int = 2,
    on_done: Callable[[dict[str, object]], None] | None = None,
) -> pd.DataFrame:
    tasks = tasks_for(shared, setting, trace_dir)
    rows = run_all(
        run_task, tasks, workers, on_done=on_done, slow_first=lambda t: t.label == "vclos"
    )
    return sort_table(pd.DataFrame(rows))


def sort_table(table: pd.DataFrame) -> pd.DataFrame:
    """Mixes in :data:`MIXES` order, then load points by falling β, then runs by name."""
    order = table["mix"].map({m: i for i, m in enumerate(MIXES)})
    table = table.assign(_mix=order).sort_values(
        ["_mix", "beta", "run"], ascending=[True, False, True]
    )
    return table.drop(columns="_mix").reset_index(drop=True)


def compare(table: pd.DataFrame) -> pd.DataFrame:
    """Per load point: OCS-vClos JWT against vClos, OCS-vClos JCT against the ideal, vClos JCT
    against the electrical fabric (relative changes)."""
    out = []
    for (mix, beta), group in table.groupby(["mix", "beta"], sort=False):
        by = group.set_index("run")

        def get(run: str, col: str, by: pd.DataFrame = by) -> float:
            return float(by.at[run, col]) if run in by.index else math.nan

        def rel(a: float, b: float) -> float:
            return (a - b) / b if b > 0 else math.nan

        out.append(
            {
                "mix": mix,
                "beta": beta,
                "load": float(group["load"].iloc[0]),
                "ocs_vs_vclos_jwt": rel(get("ocs-vclos", "avg_jwt"), get("vclos", "avg_jwt")),
                "ocs_vs_ideal_jct": rel(get("ocs-vclos", "avg_jct"), get("ideal", "avg_jct")),
                "vclos_vs_electrical_jct": rel(
                    get("vclos", "avg_jct"), get("electrical", "avg_jct")
                ),
                "ideal_vs_electrical_jct": rel(
                    get("ideal", "avg_jct"), get("electrical", "avg_jct")
                ),
            }
        )
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame, rel: pd.DataFrame) -> str:
    lines = [
        "| mix | β s | load | run | avg JCT s | avg JWT s | avg JRT s | completed | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['mix']} | {r['beta']:g} | {r['load']:.2f} | {r['run']} | {r['avg_jct']:,.0f} | "
            f"{r['avg_jwt']:,.0f} | {r['avg_jrt']:,.0f} | {r['completed']}/{r['jobs']} | "
            f"{r.get('cpu_s', math.nan):.0f} |"
        )
    lines += [
        "",
        "| mix | β s | load | OCS-vClos JWT vs vClos | OCS-vClos JCT vs ideal "
        "| vClos JCT vs electrical | ideal JCT vs electrical |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in rel.iterrows():
        cells = [
            f"{100 * r[c]:+.1f} %" if math.isfinite(r[c]) else "—"
            for c in (
                "ocs_vs_vclos_jwt",
                "ocs_vs_ideal_jct",
                "vclos_vs_electrical_jct",
                "ideal_vs_electrical_jct",
            )
        ]
        lines.append(
            f"| {r['mix']} | {r['beta']:g} | {r['load']:.2f} | " + " | ".join(cells) + " |"
        )
    lines += ["", f"Published direction [secondary]: {PUBLISHED}."]
    return "\n".join(lines) + "\n"


def figure(table: pd.DataFrame, path: Path) -> None:
    """Average JCT and JWT against offered load, one row of panels per size mix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mixes = list(dict.fromkeys(table["mix"]))
    fig, axes = plt.subplots(len(mixes), 2, figsize=(10, 4 * len(mixes)), squeeze=False)
    for row, mix in zip(axes, mixes, strict=True):
        part = table[table["mix"] == mix]
        for run, group in part.groupby("run", sort=False):
            group = group.sort_values("load")
            row[0].plot(group["load"], group["avg_jct"] / 3600, marker="o", label=run)
            row[1].plot(group["load"], group["avg_jwt"] / 3600, marker="o", label=run)
        for ax, what in zip(row, ("average JCT (h)", "average JWT (h)"), strict=True):
            ax.set_xlabel("offered load (GPU-time asked / GPU-time available)")
            ax.set_ylabel(what)
            ax.set_title(f"{mix} sizes", fontsize=9)
            ax.grid(alpha=0.3)
        row[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(table: pd.DataFrame, out: Path) -> pd.DataFrame:
    """table.csv, table.md and figure.png in ``out``; returns the relative comparison."""
    rel = compare(table)
    table.to_csv(out / "table.csv", index=False)
    rel.to_csv(out / "relative.csv", index=False)
    (out / "table.md").write_text(markdown(table, rel))
    figure(table, out / "figure.png")
    return rel


def lumos_reference(shared: Path) -> pd.DataFrame:
    """The group's own 4,096-GPU results (β = 2,000 s): average JCT, JRT, JWT per variant."""
    base = shared / "data" / "lumoscore" / "large_exp_4096GPU" / "beta_2000"
    rows = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        times: dict[str, dict[int, float]] = {}
        for line in (folder / "task_time.log").read_text().splitlines():
            parts = line.split(",")
            if len(parts) == 4:
                times.setdefault(parts[2], {})[int(parts[1])] = float(parts[3])
        arrive, start = times.get("arriving_time", {}), times.get("start_time", {})
        finish = times.get("finish_time", {})
        ids = sorted(set(arrive) & set(start) & set(finish))
        a = np.array([arrive[i] for i in ids])
        s = np.array([start[i] for i in ids])
        f = np.array([finish[i] for i in ids])
        rows.append(
            {
                "variant": folder.name,
                "jobs": len(ids),
                "avg_jct": float((f - a).mean()),
                "avg_jrt": float((f - s).mean()),
                "avg_jwt": float((s - a).mean()),
            }
        )
    return pd.DataFrame(rows)


def quick_setting(setting: Setting, quick: bool) -> Setting:
    return replace(QUICK, seed=setting.seed) if quick else setting
