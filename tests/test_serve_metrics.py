"""The /metrics endpoint: Prometheus text of the cycles so far, on loopback only."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from schedlab.serve.loop import CycleReport
from schedlab.serve.metrics import Metrics, serve_metrics


def test_metrics_count_cycles_and_keep_the_last_ones_figures() -> None:
    m = Metrics()
    m.update(CycleReport(1, ok=True, queued=5, running=2, decisions=3, started=2, seconds=0.25))
    m.update(CycleReport(2, ok=False))
    m.update(CycleReport(3, ok=True, queued=3, running=4, decisions=1, started=1, errors=1))
    text = m.render()
    assert "schedlab_serve_cycles_total 3\n" in text
    assert "schedlab_serve_failed_reads_total 1\n" in text
    assert "schedlab_serve_started_total 3\n" in text
    assert "schedlab_serve_errors_total 1\n" in text
    assert "schedlab_serve_queued_jobs 3\n" in text
    assert "# TYPE schedlab_serve_cycle_seconds gauge" in text


def test_the_endpoint_answers_on_loopback_only_at_metrics() -> None:
    m = Metrics()
    m.update(CycleReport(1, ok=True, queued=7))
    server = serve_metrics(m, 0)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            body = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "schedlab_serve_queued_jobs 7\n" in body
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert err.value.code == 404
    finally:
        server.shutdown()
