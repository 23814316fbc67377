"""The elastic filler: it shrinks when real pods need room and regrows when they leave."""

from __future__ import annotations

import pytest

from conftest import make_cluster
from schedlab.engines.filler import FillerJob, read_fillers
from schedlab.engines.shared_time import SharingConfig, SharingEngine
from schedlab.errors import InputError
from sharing_cases import workload

TWO_GPUS = [("n", 16000, 4096, 2, "V100M16")]


def run(rows, fillers, nodes=TWO_GPUS, **kw):
    cfg = SharingConfig("bestfit", filler=tuple(fillers), **kw)
    return SharingEngine(make_cluster(nodes), workload(rows), cfg)


def test_filler_shrinks_for_ls_and_regrows():
    # 0–10: two replicas of 1000 (2 GPU-s/s, 20 done); the LS pod takes GPU 0 for 10–30: one
    # replica (20 more); from 30 two again: 960 left → ends at 30 + 480 = 510.
    job = FillerJob("f", work=1000, r_min=1, r_max=2, m_min=200, m_max=1000, cpu_milli=1000)
    # (A CPU-only pod at 0 starts the clock: filler arrivals count from the first pod.)
    rows = [("ls", 1000, 10, 1, 1000, "LS", 10, 20), ("clock", 0, 0, 0, 0, "BE", 0, 0)]
    engine = run(rows, [job], filler_slot=1000)
    r = engine.run()
    f = engine.filler.summary()[0]
    assert r.first_start[0] == 10 and r.end[0] == 30
    assert f["start"] == 0 and f["end"] == pytest.approx(510)
    assert f["replicas_lost"] == 1 and f["resizes"] == 0
    s = r.series
    held = dict(zip(s["time"].tolist(), s["filler_milli"].tolist(), strict=False))
    assert held[0] == 2000 and held[10] == 1000 and held[30] == 2000
    assert s["allocated_milli"].max() == 2000


def test_filler_takes_the_smallest_fragment_and_respects_r_min():
    # A BE pod of 700 on GPU 0 leaves a 300 fragment: one replica goes there (m = 300), not on
    # the empty GPU. With r_min = 3 nothing runs.
    rows = [("be", 1000, 10, 1, 700, "BE", 0, 100)]
    one = FillerJob("f", work=30, r_min=1, r_max=1, m_min=200, m_max=1000)
    engine = run(rows, [one])
    engine.run()
    assert engine.filler.summary()[0]["end"] == pytest.approx(100)  # 30 GPU-s at 0.3 per s
    three = FillerJob("g", work=30, r_min=3, r_max=3, m_min=200, m_max=1000)
    engine = run(rows, [three])
    engine.run()
    assert engine.filler.summary()[0]["done_gpu_s"] == 0


def test_filler_is_served_in_order():
    a = FillerJob("a", work=100, r_min=1, r_max=1, m_min=500, m_max=1000)
    b = FillerJob("b", work=100, r_min=1, r_max=1, m_min=500, m_max=1000)
    engine = run([("ls", 1000, 10, 1, 1000, "LS", 0, 500)], [a, b], nodes=TWO_GPUS)
    engine.run()
    ends = [f["end"] for f in engine.filler.summary()]
    assert ends == [pytest.approx(100), pytest.approx(200)]


def test_read_fillers(tmp_path):
    path = tmp_path / "f.toml"
    path.write_text(
        '[[filler]]\nname = "x"\nwork = 50\nr_min = 1\nr_max = 4\nm_min = 100\nm_max = 500\n'
    )
    assert read_fillers(path) == (FillerJob("x", 50, 1, 4, 100, 500),)
    path.write_text(
        '[[filler]]\nname = "x"\nwork = 50\nr_min = 3\nr_max = 2\nm_min = 1\nm_max = 5\n'
    )
    with pytest.raises(InputError, match="r_min ≤ r_max"):
        read_fillers(path)
    path.write_text('[[filler]]\nname = "x"\nwork = "lots"\n')
    with pytest.raises(InputError, match="work"):
        read_fillers(path)


def test_filler_can_stop_with_the_last_pod():
    job = FillerJob("f", work=1000, r_min=1, r_max=2, m_min=200, m_max=1000)
    rows = [("ls", 1000, 10, 1, 1000, "LS", 0, 20)]
    engine = run(rows, [job], filler_outlives_pods=False)
    r = engine.run()
    f = engine.filler.summary()[0]
    # One replica beside the LS pod for 20 s, then the run ends with the pod.
    assert r.series["time"][-1] == 20 and f["end"] is None and f["done_gpu_s"] == 20
