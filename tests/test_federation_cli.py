"""``schedlab replay --federation`` as a user runs it: a one-site federation is plain replay,
the outputs, and one-line refusals of bad federation files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import _energy_data_found
from schedlab.cli import main

# Every site meters its power from the public power tables (V100 300 W).
pytestmark = pytest.mark.skipif(
    not _energy_data_found(), reason="the power tables in ../shared/data are not found"
)


def trace(path: Path, n: int = 80, seed: int = 4, extra: str = "") -> Path:
    rng = np.random.default_rng(seed)
    rows = ["job_id,submit_time,num_gpus,duration" + extra]
    t = 0.0
    for i in range(n):
        t += float(rng.exponential(300))
        rows.append(f"j{i},{t:.1f},{rng.choice([1, 2, 4, 8, 16])},{rng.uniform(60, 7200):.1f}")
    path.write_text("\n".join(rows) + "\n")
    return path


ONE_SITE = """[federation]
dispatcher = "{dispatcher}"
[[site]]
name = "only"
cluster = "3x8:V100"
ordering = "{ordering}"
backfill = {backfill}
placement = "consolidate"
ci = "const:100"
price_gpu_hour = {{ V100 = 3.06 }}
"""


@pytest.mark.parametrize(
    ("ordering", "backfill", "dispatcher"),
    [("fifo", "true", "least-loaded"), ("tiresias", "false", "multikueue-allatonce")],
)
def test_a_one_site_federation_with_local_data_is_plain_replay(
    tmp_path, ordering, backfill, dispatcher
) -> None:
    jobs = trace(tmp_path / "jobs.csv")
    fed = tmp_path / "one.toml"
    fed.write_text(ONE_SITE.format(ordering=ordering, backfill=backfill, dispatcher=dispatcher))
    plain = ["replay", "--cluster", "3x8:V100", "--trace", str(jobs), "--policy", ordering]
    plain += ["--placement", "consolidate", "--ci", "const:100", "--power-model", "binary"]
    plain += ["--backfill"] if backfill == "true" else []
    assert main([*plain, "--out", str(tmp_path / "plain")]) == 0
    argv = ["replay", "--federation", str(fed), "--trace", str(jobs)]
    assert main([*argv, "--out", str(tmp_path / "fed")]) == 0
    a = (tmp_path / "plain" / "jobs.csv").read_text().splitlines()
    b = pd.read_csv(tmp_path / "fed" / "jobs.csv")
    columns = a[0].split(",")
    assert list(b.columns[: len(columns)]) == columns
    cut = tmp_path / "cut.csv"
    b[columns].to_csv(cut, index=False, float_format="%.6f")
    assert cut.read_text().splitlines() == a  # byte for byte
    assert (b.site == "only").all() and (b.transfer_s == 0).all() and (b.egress_usd == 0).all()
    price = b.gpu_seconds * 3.06 / 3600
    assert np.allclose(b.compute_usd, price, rtol=1e-9)
    summary = json.loads((tmp_path / "fed" / "summary.json").read_text())
    plain_summary = json.loads((tmp_path / "plain" / "summary.json").read_text())
    g = summary["federation"]["global"]
    assert g["jct"]["mean"] == pytest.approx(plain_summary["avg_jct"], rel=1e-9)


def fed_file(tmp_path: Path, body: str, name: str = "bad.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


GOOD_SITE = '[[site]]\nname = "a"\ncluster = "1x8:V100"\nprice_gpu_hour = { V100 = 1 }\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[site]]\nname = "a"\n', "[[site]] #1 ('a'), key 'cluster': missing"),
        ('[[site]]\nname = "a"\ncluster = "1x8:V100"\n', "key 'price_gpu_hour': no price for V100"),
        (GOOD_SITE + '[federation]\ndispatcher = "fastest"\n', "[federation], key 'dispatcher'"),
        (GOOD_SITE.replace("= 1 }", "= -1 }"), "key 'price_gpu_hour.V100': must be a number ≥ 0"),
        (GOOD_SITE + 'egress = { preset = "azure" }\n', "key 'egress.preset'"),
        (GOOD_SITE + "wan = { b = { gbps = 10 } }\n", "key 'wan.b': no other site"),
        (GOOD_SITE + 'colour = "red"\n', "key 'colour': unknown"),
        ('[federation]\norigin = "a"\n', "[[site]]: none"),
        (GOOD_SITE + 'ci = "nowhere.csv"\n', "key 'ci'"),
        (GOOD_SITE + '[federation]\nreconsider = "hourly"\n', "key 'reconsider': 'none' or"),
        (
            GOOD_SITE + '[federation]\nreconsider = "periodic:60"\ndispatcher = "round-robin"\n',
            "key 'reconsider': moving jobs needs a dispatcher with a score",
        ),
        (GOOD_SITE + "[federation]\nmove_running = true\n", "key 'move_running': running jobs"),
        (
            GOOD_SITE + '[federation]\nreconsider = "periodic:60"\nmove_margin = 1\n',
            "key 'move_margin': must be below 1",
        ),
        ("[[site]\n", "not a TOML file"),
        ('[[site]]\nname = "a"\ncluster = 16\n', "key 'cluster': must be a cluster spec"),
        ("[[site]]\nname = true\n", "key 'name': must be a non-empty string (got True)"),
        (
            GOOD_SITE.replace("V100 = 1 }", "V100 = 1, A100 = 2 }"),
            "key 'price_gpu_hour.A100': the site has no A100 GPUs (it has V100)",
        ),
        (
            GOOD_SITE + "[federation]\nweights = { time = 2 }\n",
            "key 'weights': only the joint dispatcher reads it, and this run has least-loaded",
        ),
        (
            GOOD_SITE + '[federation]\ndispatcher = "joint"\nincremental = { step = 2 }\n',
            "key 'incremental': only the multikueue-incremental dispatcher reads it",
        ),
    ],
)
def test_bad_federation_files_are_refused_in_one_line(tmp_path, capsys, body, message) -> None:
    jobs = trace(tmp_path / "jobs.csv", n=3)
    fed = fed_file(tmp_path, body)
    out = tmp_path / "out"
    assert main(["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert "bad.toml" in err
    assert not out.exists()


def test_a_federation_file_not_in_utf8_is_one_line(tmp_path, capsys) -> None:
    jobs = trace(tmp_path / "jobs.csv", n=3)
    fed = tmp_path / "bad.toml"
    fed.write_bytes(GOOD_SITE.encode().replace(b'"a"', b'"\xff\xfe"'))
    out = tmp_path / "out"
    assert main(["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"schedlab: error: not a UTF-8 text file at {fed}"
    assert not out.exists()


def test_bad_job_data_and_missing_links_are_refused(tmp_path, capsys) -> None:
    two = GOOD_SITE + GOOD_SITE.replace('"a"', '"b"')
    fed = fed_file(tmp_path, two, "two.toml")
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,num_gpus,duration,data_site,data_gb\nx,0,1,10,mars,1\n")
    argv = ["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "'data_site' 'mars' is no site or data store" in capsys.readouterr().err
    jobs.write_text("job_id,submit_time,num_gpus,duration,data_site,data_gb\nx,0,1,10,a,1\n")
    assert main(argv) == 2
    assert "no WAN link between 'a' and 'b'" in capsys.readouterr().err
    assert main([*argv[:-2], "--cluster", "1x8:V100", "--out", str(tmp_path / "o")]) == 2
    assert "'--cluster' does not apply with --federation" in capsys.readouterr().err
    jobs.write_text("job_id,submit_time,num_gpus,duration,data_site,data_gb\nx,0,1,10,a,1e308\n")
    assert main(argv) == 2
    assert "'data_gb' must be ≤ 1e+09 (got 1e+308)" in capsys.readouterr().err


def test_a_carbon_series_shorter_than_the_run_is_refused(tmp_path, capsys) -> None:
    series = tmp_path / "ci.csv"
    series.write_text("time,ci_g_per_kwh\n0,100\n3600,200\n")
    fed = fed_file(tmp_path, GOOD_SITE + f'ci = "{series}"\n', "short.toml")
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,num_gpus,duration\nx,0,1,10000\n")
    out = tmp_path / "o"
    assert main(["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "key 'ci': the carbon series covers 0–7200 s" in err and "10000 s" in err
    assert not out.exists()


def test_unplaceable_jobs_are_counted(tmp_path) -> None:
    fed = fed_file(tmp_path, GOOD_SITE, "one.toml")
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,num_gpus,duration\nx,0,1,10\nhuge,1,64,10\n")
    out = tmp_path / "o"
    assert main(["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(out)]) == 0
    g = json.loads((out / "summary.json").read_text())["federation"]["global"]
    assert g["unplaceable"] == 1 and g["completed"] == 1
    assert pd.read_csv(out / "jobs.csv").set_index("job_id").loc["huge", "status"] == "unplaceable"


def test_a_federation_sweep_compares_dispatchers_over_seeds(tmp_path, capsys) -> None:
    two = (
        GOOD_SITE
        + 'ci = "const:400"\n'
        + GOOD_SITE.replace('"a"', '"b"').replace("= 1 }", "= 0.5 }")
        + 'ci = "const:100"\n'
    )
    fed = fed_file(tmp_path, two, "pair.toml")
    jobs = trace(tmp_path / "jobs.csv", n=20)
    out = tmp_path / "grid"
    argv = ["sweep", "--federation", str(fed), "--traces", str(jobs), "--seeds", "0-1"]
    argv += ["--dispatchers", "round-robin", "cheapest", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 4 and set(results.dispatcher) == {"round-robin", "cheapest"}
    agg = pd.read_csv(out / "aggregate.csv").set_index("dispatcher")
    assert agg.loc["cheapest", "share_b"] == 1.0  # b is half the price, no data to move
    assert 0 < agg.loc["round-robin", "share_b"] < 1
    assert agg.loc["cheapest", "compute_usd"] < agg.loc["round-robin", "compute_usd"]
    assert (out / "runs" / "pair" / "jobs" / "cheapest" / "seed1" / "sites.csv").exists()
    bad = ["sweep", "--federation", str(fed), "--traces", str(jobs), "--dispatchers", "fastest"]
    assert main([*bad, "--out", str(tmp_path / "bad")]) == 2
    assert "'--dispatchers': unknown 'fastest'" in capsys.readouterr().err
    moving = fed_file(tmp_path, '[federation]\nreconsider = "periodic:60"\n' + two, "moving.toml")
    bad = ["sweep", "--federation", str(moving), "--traces", str(jobs), "--dispatchers"]
    assert main([*bad, "cheapest", "round-robin", "--out", str(tmp_path / "bad")]) == 2
    assert "moving jobs needs a dispatcher with a score" in capsys.readouterr().err
    weighted = fed_file(tmp_path, "[federation]\nweights = { cost = 3 }\n" + two, "weighted.toml")
    bad = ["sweep", "--federation", str(weighted), "--traces", str(jobs), "--dispatchers"]
    assert main([*bad, "cheapest", "round-robin", "--out", str(tmp_path / "bad")]) == 2
    assert "key 'weights': only the joint dispatcher reads it" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_a_site_with_a_topology_runs_its_network_model(tmp_path) -> None:
    body = (
        '[[site]]\nname = "net"\n'
        'topology = "leafspine:leaves=1,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100,'
        'model=V100"\n'
        "price_gpu_hour = { V100 = 2 }\n" + GOOD_SITE.replace('"a"', '"b"')
    )
    fed = fed_file(tmp_path, body, "topo.toml")
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,num_gpus,duration\nwide,0,16,100\nnarrow,1,8,100\n")
    out = tmp_path / "o"
    assert main(["replay", "--federation", str(fed), "--trace", str(jobs), "--out", str(out)]) == 0
    frame = pd.read_csv(out / "jobs.csv").set_index("job_id")
    # only the 16-GPU topology site can hold the wide job; least-loaded sends the next to b
    assert frame.loc["wide", "site"] == "net" and frame.loc["narrow", "site"] == "b"
    assert frame.loc["wide", "hosts"] == 2 and np.isnan(frame.loc["narrow", "hosts"])
    assert frame.loc["wide", "compute_usd"] == pytest.approx(16 * 100 * 2 / 3600, abs=1e-6)
