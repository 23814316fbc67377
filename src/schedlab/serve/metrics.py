"""A Prometheus text endpoint for a running scheduler: ``GET /metrics`` on loopback only.

Counts since the process started and the last cycle's figures, in the text exposition format
Prometheus scrapes. It listens on 127.0.0.1 (a scrape from elsewhere goes through the host's own
agent or a proxy), in a daemon thread that never touches Slurm or the policy: it only reads the
numbers the loop has stored.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from schedlab.serve.loop import CycleReport

_HELP = {
    "cycles_total": ("counter", "cycles run"),
    "failed_reads_total": ("counter", "cycles that could not read Slurm"),
    "decisions_total": ("counter", "decisions the policy made"),
    "started_total": ("counter", "jobs pinned and released"),
    "errors_total": ("counter", "scontrol commands that failed"),
    "cycle_seconds": ("gauge", "time the last cycle took"),
    "queued_jobs": ("gauge", "jobs waiting for the policy at the last cycle"),
    "running_jobs": ("gauge", "jobs running or launching at the last cycle"),
    "last_cycle_timestamp_seconds": ("gauge", "when the last cycle began (Unix seconds)"),
    "last_cycle_decisions": ("gauge", "decisions the policy made in the last cycle"),
    "last_cycle_started": ("gauge", "jobs the last cycle pinned and released"),
}


class Metrics:
    """The numbers behind ``/metrics``; updated by the loop after every cycle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, float] = dict.fromkeys(_HELP, 0.0)

    def update(self, report: CycleReport) -> None:
        with self._lock:
            v = self.values
            v["cycles_total"] += 1
            v["last_cycle_timestamp_seconds"] = report.time
            if not report.ok:
                v["failed_reads_total"] += 1
                return
            v["decisions_total"] += report.decisions
            v["started_total"] += report.started
            v["errors_total"] += report.errors
            v["cycle_seconds"] = report.seconds
            v["queued_jobs"] = report.queued
            v["running_jobs"] = report.running
            v["last_cycle_decisions"] = report.decisions
            v["last_cycle_started"] = report.started

    def render(self) -> str:
        with self._lock:
            lines = []
            for name, (kind, text) in _HELP.items():
                full = f"schedlab_serve_{name}"
                lines += [
                    f"# HELP {full} {text}",
                    f"# TYPE {full} {kind}",
                    f"{full} {self.values[name]:.15g}",
                ]
            return "\n".join(lines) + "\n"


def serve_metrics(metrics: Metrics, port: int) -> ThreadingHTTPServer:
    """Start answering ``GET /metrics`` on 127.0.0.1:``port`` (0: any free port) in a daemon
    thread; ``server_address`` says where, ``shutdown()`` stops it."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404, "only /metrics is here")
                return
            body = metrics.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes are not worth a line each on stderr

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
