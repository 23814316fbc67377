"""Network namespaces the harness creates, uses and removes — only its own.

Every namespace is called ``schedlab-fi-<pid>-<name>`` (``pid``: the harness process), has only its
own loopback, and is reached from the host through Unix sockets (which cross namespaces): a relay
inside listens on 127.0.0.1:PORT and forwards to a socket under ``/run/schedlab-fi/<pid>/`` that
the host's fault proxy serves. :class:`Namespaces` refuses to touch a namespace without its own
prefix, stops only processes it started (SIGTERM, then SIGKILL after 5 s), and removes
everything it made in :meth:`close` (also registered with ``atexit``). ``tbf`` caps a
namespace's loopback where the kernel has it; ``netem`` is not assumed.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PREFIX = "schedlab-fi"
RUN_ROOT = Path("/run/schedlab-fi")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,20}")


class HarnessUnavailable(RuntimeError):
    """What the machine lacks for the live harness (the tests skip with this reason)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=20)


def probe() -> str | None:
    """None if namespaces can be made here, else why not."""
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"{PREFIX}-{os.getpid()}-probe"
    try:
        _ip("netns", "add", name)
    except subprocess.CalledProcessError as exc:
        return f"cannot create a network namespace: {exc.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


class Namespaces:
    """The harness's namespaces, relays and helper processes (see the module docstring)."""

    def __init__(self) -> None:
        why = probe()
        if why is not None:
            raise HarnessUnavailable(why)
        self.pid = os.getpid()
        self.names: list[str] = []
        self.procs: list[subprocess.Popen] = []
        self.run_dir = RUN_ROOT / str(self.pid)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.closed = False
        atexit.register(self.close)

    def full(self, name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError(f"namespace name {name!r}: lower-case letters, digits and dashes")
        return f"{PREFIX}-{self.pid}-{name}"

    def _mine(self, full: str) -> None:
        if not full.startswith(f"{PREFIX}-{self.pid}-"):
            raise PermissionError(f"refusing to touch namespace {full!r}: not this harness's")

    def create(self, name: str) -> str:
        full = self.full(name)
        _ip("netns", "add", full)
        self.names.append(full)
        _ip("netns", "exec", full, "ip", "link", "set", "lo", "up")
        return full

    def exec_argv(self, full: str, argv: list[str]) -> list[str]:
        self._mine(full)
        return ["ip", "netns", "exec", full, *argv]

    def spawn(self, full: str | None, argv: list[str], **kw: object) -> subprocess.Popen:
        """Start ``argv`` (inside namespace ``full``, or on the host for None); stopped at close."""
        cmd = self.exec_argv(full, argv) if full is not None else argv
        proc = subprocess.Popen(cmd, start_new_session=True, **kw)  # type: ignore[call-overload]
        self.procs.append(proc)
        return proc

    def relay(self, full: str, port: int, socket_name: str) -> Path:
        """Inside ``full``: listen on 127.0.0.1:``port``, forward to the Unix socket returned
        (which the host's fault proxy must serve)."""
        path = self.run_dir / f"{socket_name}.sock"
        argv = [sys.executable, "-m", "schedlab.testing.faultinject.relay", str(port), str(path)]
        self.spawn(full, argv)
        return path

    def tbf(self, full: str, rate: str = "1mbit") -> bool:
        """Cap the namespace's loopback with ``tbf``; False where the kernel lacks it."""
        argv = ["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", rate, "burst", "32kbit",
                "latency", "400ms"]  # fmt: skip
        done = subprocess.run(self.exec_argv(full, argv), capture_output=True, text=True)
        return done.returncode == 0

    def stop(self, proc: subprocess.Popen, grace: float = 5.0) -> None:
        """SIGTERM a process this harness started, SIGKILL after ``grace`` seconds."""
        if proc not in self.procs or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def close(self) -> None:
        """Stop the processes, delete the namespaces and the socket folder; idempotent."""
        if self.closed:
            return
        self.closed = True
        for proc in reversed(self.procs):
            self.stop(proc)
        for full in reversed(self.names):
            self._mine(full)
            _ip("netns", "del", full, check=False)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if os.getpid() == self.pid:
            atexit.unregister(self.close)

    def __enter__(self) -> Namespaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def leftovers() -> list[str]:
    """Namespaces of this prefix whose harness process is gone (for a clean-up check)."""
    out = _ip("netns", "list", check=False).stdout.split()
    mine = [n for n in out if n.startswith(PREFIX + "-")]
    gone = []
    for name in mine:
        parts = name.split("-")
        if len(parts) > 2 and parts[2].isdigit() and not Path(f"/proc/{parts[2]}").exists():
            gone.append(name)
    time.sleep(0)
    return gone
