"""The axes users expect of a sweep: several --topology values, --power-model and --ci values,
and grids of ``replay --sharing`` runs — each run folder the one the single command writes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from schedlab.cli import main

JOBS = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},{25 * i},{(1, 2, 4, 8)[i % 4]},{400 + 130 * (i % 6)}\n" for i in range(24)
)
TOPOLOGIES = (
    "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100,model=V100",
    "leafspine:leaves=2,spines=1,hosts_per_leaf=1,g=4,m=1,nic_gbps=10,model=V100",
)
NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,2,T4\nn1,16000,65536,2,T4\n"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    + "".join(
        f"p{i},1000,1024,1,{300 + 100 * (i % 7)},,{('LS', 'BE', 'Burstable')[i % 3]},Running,"
        f"{10 * i},{10 * i + 60 + 7 * (i % 5)},{10 * i}\n"
        for i in range(30)
    )
)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_topology_and_energy_values_are_crossed_and_each_run_is_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS)
    out = tmp_path / "grid"
    argv = ["sweep", "--traces", str(trace), "--policies", "fifo", "sjf", "--topology", *TOPOLOGIES]
    argv += ["--ci", "const:100", "const:400", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().err  # what the console says about the run
    rows = _rows(out / "results.csv")
    assert len(rows) == 2 * 2 * 2
    variants = {r["variant"] for r in rows}
    assert variants == {f"topology=leafspine{t};ci=const:{c}" for t in (1, 2) for c in (100, 400)}
    assert f"topology=leafspine1: {TOPOLOGIES[0]}" in printed.replace("\n", "")
    by = {(r["policy"], r["variant"]): r for r in rows}
    for policy in ("fifo", "sjf"):
        low = by[(policy, "topology=leafspine1;ci=const:100")]
        high = by[(policy, "topology=leafspine1;ci=const:400")]
        # The same run, charged at four times the intensity.
        assert float(high["energy_kwh"]) == pytest.approx(float(low["energy_kwh"]))
        assert float(high["carbon_kg"]) == pytest.approx(4 * float(low["carbon_kg"]), rel=1e-6)
    # A slower fabric makes communicating jobs slower: the two topologies are really run.
    slow = by[("fifo", "topology=leafspine2;ci=const:100")]
    fast = by[("fifo", "topology=leafspine1;ci=const:100")]
    assert float(slow["avg_jct"]) > float(fast["avg_jct"])
    # Each run folder is what 'schedlab replay' writes for the same options.
    single = tmp_path / "single"
    argv = ["replay", "--trace", str(trace), "--policy", "sjf", "--topology", TOPOLOGIES[1]]
    assert main([*argv, "--ci", "const:400", "--out", str(single)]) == 0
    run = Path(by[("sjf", "topology=leafspine2;ci=const:400")]["run_dir"])
    assert (run / "jobs.csv").read_bytes() == (single / "jobs.csv").read_bytes()
    assert (run / "timeseries.csv").read_bytes() == (single / "timeseries.csv").read_bytes()


def test_a_sharing_grid_crosses_placements_overcommit_energy_and_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    out = tmp_path / "grid"
    argv = ["sweep", "--sharing", "--cluster", str(nodes), "--traces", str(pods)]
    argv += ["--placements", "bestfit", "fgd", "--overcommit", "1", "1.5", "--seeds", "1-2"]
    argv += ["--power-model", "linear", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    rows = _rows(out / "results.csv")
    assert len(rows) == 2 * 2 * 2
    assert {r["variant"] for r in rows} == {"overcommit=1", "overcommit=1.5"}
    assert all(float(r["energy_kwh"]) > 0 for r in rows)
    assert len(_rows(out / "aggregate.csv")) == 4
    assert "Energy and carbon" in (out / "report-pods.html").read_text()
    # A run folder is the one 'replay --sharing' writes for the same options.
    single = tmp_path / "single"
    argv = ["replay", "--sharing", "--cluster", str(nodes), "--trace", str(pods)]
    argv += ["--placement", "fgd", "--seed", "2", "--overcommit", "1.5", "--power-model", "linear"]
    assert main([*argv, "--out", str(single)]) == 0
    run = next(Path(r["run_dir"]) for r in rows if r["run_dir"].endswith("fgd-overcommit=1.5-s2"))
    for name in ("pods.csv", "timeseries.csv", "config.toml"):
        assert (run / name).read_bytes() == (single / name).read_bytes(), name
    # Resumed: nothing runs again.
    capsys.readouterr()
    argv = ["sweep", "--sharing", "--cluster", str(nodes), "--traces", str(pods)]
    argv += ["--placements", "bestfit", "fgd", "--overcommit", "1", "1.5", "--seeds", "1-2"]
    assert main([*argv, "--power-model", "linear", "--workers", "1", "--out", str(out)]) == 0
    assert "0 sharing runs in" in capsys.readouterr().out.replace("\n", "")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sharing", "--policies", "fifo"], "'--policies' does not apply to a sharing grid"),
        (["--sharing", "--load", "0.5"], "'--load' does not apply to a sharing grid"),
        (["--mode", "trace"], "'--mode' applies to sharing grids (--sharing) only"),
        (["--overcommit", "2"], "'--overcommit' applies to sharing grids"),
    ],
)
def test_options_of_one_kind_of_grid_are_refused_by_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", str(nodes), "--traces", str(pods), "--out", str(out)]
    assert main([*argv, *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
