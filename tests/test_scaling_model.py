"""The analytic scaling model used when no measured throughput table is given."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.perf.scaling import (
    PROFILES,
    Interconnect,
    ModelProfile,
    iteration_seconds,
    throughput_table,
)


def test_iteration_time_by_hand() -> None:
    # 10 M parameters (0.04 GB of gradients), 2 ms/sample, overlap 0.5, fixed 5 ms, batch 64.
    p = ModelProfile(params_millions=10.0, ms_per_sample=2.0, overlap=0.5, fixed_ms=5.0)
    net = Interconnect(
        gpus_per_node=8,
        intra_node_gb_per_s=100.0,
        inter_node_gb_per_s=10.0,
        intra_node_latency_ms=0.1,
        inter_node_latency_ms=1.0,
    )
    # 1 GPU: 5 ms + 64 · 2 ms = 133 ms, no communication.
    assert iteration_seconds(p, 64, 1, net) == pytest.approx(0.133)
    # 4 GPUs: compute 16 · 2 = 32 ms; ring 2·3/4 · 0.04 GB / 100 GB/s = 0.6 ms; latency 6 · 0.1 =
    # 0.6 ms; half hidden → 0.6 ms. Total 5 + 32 + 0.6 = 37.6 ms.
    assert iteration_seconds(p, 64, 4, net) == pytest.approx(0.0376)
    # 16 GPUs leave the node: ring 2·15/16 · 0.04 / 10 = 7.5 ms; latency 30 · 1 ms = 30 ms;
    # half hidden → 18.75 ms. Compute 4 · 2 = 8 ms. Total 5 + 8 + 18.75 = 31.75 ms.
    assert iteration_seconds(p, 64, 16, net) == pytest.approx(0.03175)


def test_curves_rise_then_peak_inside_the_table() -> None:
    table = throughput_table()
    peaks = []
    for (model, batch), curve in table.items():
        counts = sorted(curve)
        rates = np.array([curve[n] for n in counts])
        assert (rates > 0).all()
        assert rates[1] > rates[0], (model, batch)  # 2 GPUs beat 1
        assert max(counts) <= batch  # at least one sample per GPU
        peaks.append(counts[int(rates.argmax())])
        # Inside one node, adding GPUs always helps.
        inside = [curve[n] for n in counts if n <= 8]
        assert inside == sorted(inside), (model, batch)
    # Some curves peak before the largest count, as measured tables do.
    assert any(p < 64 for p in peaks) and all(p >= 8 for p in peaks)


def test_larger_batches_scale_further() -> None:
    table = throughput_table()
    for model in PROFILES:
        batches = sorted(b for m, b in table if m == model)
        peak = [max(table[(model, b)], key=table[(model, b)].get) for b in batches]
        assert peak == sorted(peak), model


@pytest.mark.parametrize(("gpus", "batch"), [(0, 64), (4, 0)])
def test_bad_sizes_raise(gpus: int, batch: int) -> None:
    with pytest.raises(ValueError, match="must be ≥ 1"):
        iteration_seconds(PROFILES["bert"], batch, gpus)


def test_replay_with_builtin_throughputs(tmp_path) -> None:
    # 1,000 iterations of resnet50/64 on the 1 GPU asked for: 1000 / rate(1) seconds.
    rate = throughput_table()[("resnet50", 64)][1]
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,iterations,model_name,batch_size\na,0,1,1000,resnet50,64\n"
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "replay",
                "--cluster",
                "1x8",
                "--trace",
                str(trace),
                "--trace-format",
                "generic",
                "--policy",
                "fifo",
                "--throughputs",
                "builtin",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["avg_jct"] == pytest.approx(1000 / rate)
    assert 'throughputs = "builtin"' in (out / "config.toml").read_text()
