"""Network namespaces the harness creates, uses and removes — only its own.

Every namespace is called ``schedlab-fi-<pid>-<name>`` (``pid``: the harness process), has only its
own loopback, and is reached from the host through Unix sockets (which cross namespaces): a relay
inside listens on 127.0.0.1:PORT and forwards to a socket under ``/run/schedlab-fi/<pid>/`` that
the host's fault proxy serves. :class:`Namespaces` refuses to touch a namespace without its own
prefix, stops only processes it started (SIGTERM, then SIGKILL after 5 s), and removes
everything it made in :meth:`close` (also registered with ``atexit``). ``tbf`` caps a
namespace's loopback where the kernel has it; ``netem`` is not assumed.

A process group that must die at once, children and all (a node that crashes: its slurmd, the
job steps that slurmd double-forked and their jobs), is started in a cgroup v2 group of the same
prefix, and :meth:`Namespaces.kill_group` writes its ``cgroup.kill``: no process escapes by
re-parenting, and the harness signals no process it cannot trace to one it started.
"""

from __future__ import annotations

import atexit
import contextlib
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


def cgroup2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (pure v2 or the hybrid layout's ``unified``)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def probe_groups() -> str | None:
    """None if cgroup v2 groups with ``cgroup.kill`` can be made here, else why not."""
    root = cgroup2_root()
    if root is None:
        return "no cgroup v2 hierarchy is mounted"
    probe_dir = root / f"{PREFIX}-{os.getpid()}-probe"
    try:
        probe_dir.mkdir()
    except OSError as exc:
        return f"cannot create a cgroup under {root}: {exc.strerror}"
    try:
        if not (probe_dir / "cgroup.kill").exists():
            return "the kernel's cgroup v2 has no cgroup.kill (Linux ≥ 5.14 needed)"
    finally:
        probe_dir.rmdir()
    return None


def probe() -> str | None:
    """None if namespaces can be made here, else why not."""
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    if shutil.which("nsenter") is None:
        return "the 'nsenter' command (util-linux) is not installed"
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
        self.groups: dict[str, Path] = {}
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
        _ip("-n", full, "link", "set", "lo", "up")
        # A second loopback address: glibc's AI_ADDRCONFIG ignores 127.0.0.1 alone, so without
        # it an IPv4-only getaddrinfo (slurmd binding its port) finds no address at all.
        _ip("-n", full, "addr", "add", "127.0.0.2/32", "dev", "lo")
        return full

    def exec_argv(self, full: str, argv: list[str]) -> list[str]:
        """``argv`` run in namespace ``full``'s network only. ``nsenter`` rather than ``ip netns
        exec``: the latter remounts /sys, hiding the cgroup mounts that slurmd needs."""
        self._mine(full)
        return ["nsenter", f"--net=/run/netns/{full}", "--", *argv]

    def spawn(
        self, full: str | None, argv: list[str], group: str | None = None, **kw: object
    ) -> subprocess.Popen:
        """Start ``argv`` (inside namespace ``full``, or on the host for None; in cgroup
        ``group`` of :meth:`group` when given, with everything it ever starts); stopped at
        close."""
        cmd = self.exec_argv(full, argv) if full is not None else argv
        if group is not None:
            # Join the group before entering the namespace (the host's cgroup mount).
            join = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
            cmd = ["sh", "-c", join, str(self.groups[group]), *cmd]
        proc = subprocess.Popen(cmd, start_new_session=True, **kw)  # type: ignore[call-overload]
        self.procs.append(proc)
        return proc

    def relay(self, full: str, port: int, socket_name: str, into: bool = False) -> Path:
        """Inside ``full``: listen on 127.0.0.1:``port`` and forward to the Unix socket returned
        (which the host's fault proxy must serve); ``into``: listen on that socket and forward
        to 127.0.0.1:``port`` in the namespace. Returns once the relay listens."""
        path = self.run_dir / f"{socket_name}.sock"
        argv = [sys.executable, "-m", "schedlab.testing.faultinject.relay",
                *(["--into"] if into else []), str(port), str(path)]  # fmt: skip
        proc = self.spawn(full, argv)
        for _ in range(100):  # bounded: 10 s
            if proc.poll() is not None:
                raise HarnessUnavailable(f"the relay for {socket_name} exited ({proc.returncode})")
            if into and path.exists():
                break
            if not into and self._listens(full, port):
                break
            time.sleep(0.1)
        else:
            raise HarnessUnavailable(f"the relay for {socket_name} does not listen after 10 s")
        return path

    def _listens(self, full: str, port: int) -> bool:
        argv = ["ss", "-Hltn", f"sport = :{port}"]
        done = subprocess.run(self.exec_argv(full, argv), capture_output=True, text=True)
        return done.returncode == 0 and bool(done.stdout.strip())

    def group(self, name: str) -> Path:
        """A cgroup v2 group ``schedlab-fi-<pid>-<name>`` for :meth:`spawn`; removed at close."""
        why = probe_groups()
        if why is not None:
            raise HarnessUnavailable(why)
        root = cgroup2_root()
        assert root is not None
        path = root / self.full(name)
        path.mkdir(exist_ok=True)
        self.groups[name] = path
        return path

    def kill_group(self, name: str, timeout: float = 10.0) -> None:
        """SIGKILL every process of group ``name`` at once and wait until it is empty."""
        path = self.groups[name]
        self._mine(path.name)
        (path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "populated 0" in (path / "cgroup.events").read_text():
                break
            time.sleep(0.05)
        for proc in self.procs:  # reap the ones this harness started
            if proc.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.1)

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
        for name in list(self.groups):
            self.kill_group(name)
        for proc in reversed(self.procs):
            self.stop(proc)
        for path in self.groups.values():
            with contextlib.suppress(OSError):
                path.rmdir()
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
