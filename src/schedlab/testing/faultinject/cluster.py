"""A dev Slurm cluster the harness owns, each slurmd in a network namespace of its own.

``scripts/slurm-dev-cluster.sh start --controller-only`` writes the configuration (every daemon
on 127.0.0.1, ports derived from the folder) and starts munged and slurmctld on the host. The
harness then starts each node itself:

* a namespace ``schedlab-fi-<pid>-nodeK`` with only its own loopback;
* inside it, a relay on 127.0.0.1:<controller port> to a Unix socket that the host's fault proxy
  serves with link ``nodeK-up`` (to the real controller): the slurmd reaching its controller;
* on the host, link ``nodeK-down`` of the fault proxy listens on 127.0.0.1:<node K's port> and
  forwards through a Unix socket to a relay inside the namespace, to the slurmd there: the
  controller reaching the node;
* the slurmd, in cgroup ``schedlab-fi-<pid>-nodeK``: a crash of the node (:meth:`crash`) kills
  it, the job steps it double-forked and their jobs at once.

Every byte between the controller and a node thus crosses one proxy link each way, and a fault
on a node's link (:meth:`cut`) is a setting of those two links. Nothing leaves loopback: the
harness refuses a configuration naming any other address, creates and deletes only namespaces
and groups carrying its PID, stops only the daemons it started (by PID), and removes all of it in
:meth:`close` (which also stops the controller and munge through the script).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from schedlab.testing.faultinject.netns import HarnessUnavailable, Namespaces, probe_groups
from schedlab.testing.faultinject.proxy import FaultProxy

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "slurm-dev-cluster.sh"
#: Slurm's settings the scenarios' timing assumes (the script writes them in this mode).
SLURMD_TIMEOUT = 10.0


def check_loopback(conf: Path) -> str:
    """The text of ``conf`` if every host it names is this machine's loopback; ValueError
    (naming the address) otherwise — the harness never touches another machine."""
    text = conf.read_text()
    for key, host in re.findall(r"(SlurmctldHost|NodeAddr|NodeHostname|ControlMachine)=(\S+)",
                                text):  # fmt: skip
        name = host.split("(")[0]
        if name not in ("localhost", "127.0.0.1"):
            raise ValueError(f"refusing a cluster with {key}={name} in {conf}: loopback only")
    return text


def conf_setting(conf: Path, key: str) -> str | None:
    """The value ``key=`` sets at the start of a line of the slurm.conf ``conf`` (None: unset)."""
    found = re.search(rf"^{re.escape(key)}=(\S+)", conf.read_text(), re.M)
    return found.group(1) if found else None


def controller_port(conf: Path) -> int:
    port = conf_setting(conf, "SlurmctldPort")
    if port is None or not port.isdigit():
        raise ValueError(f"{conf} names no SlurmctldPort")
    return int(port)


def node_ports(conf: Path) -> dict[str, int]:
    """``node1 … nodeN`` → port, from the script's ``NodeName=node[1-N] … Port=[a-b]`` line."""
    found = re.search(r"^NodeName=node\[1-(\d+)\].*\bPort=\[(\d+)-(\d+)\]", conf.read_text(), re.M)
    if found is None:
        raise ValueError(f"{conf}: no 'NodeName=node[1-N] ... Port=[a-b]' line")
    count, first = int(found.group(1)), int(found.group(2))
    return {f"node{k}": first + k - 1 for k in range(1, count + 1)}


def probe() -> str | None:
    """None if this machine can host the cluster, else why not (the tests skip with it)."""
    if os.geteuid() != 0:
        return "the harness's cluster needs root (namespaces, cgroups, Slurm daemons)"
    for tool in ("slurmctld", "slurmd", "sbatch", "munged", "ip", "ss", "nsenter"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    from schedlab.testing.faultinject.netns import probe as probe_netns

    return probe_netns() or probe_groups()


class OwnedCluster:
    """See the module docstring. Use as a context manager; :attr:`conf` is its slurm.conf."""

    def __init__(self, folder: Path, nodes: int = 4, gpus: int = 8, seed: int = 0) -> None:
        why = probe()
        if why is not None:
            raise HarnessUnavailable(why)
        self.dir = Path(folder).resolve()
        self.nodes, self.gpus = nodes, gpus
        self.conf = self.dir / "etc" / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.ns: Namespaces | None = None
        self.proxy: FaultProxy | None = None
        self.seed = seed
        self.slurmd: dict[str, subprocess.Popen] = {}
        self.crashed: dict[str, float] = {}  # node → Unix time of its last crash
        self._started_script = False

    # -- bring-up ------------------------------------------------------------------------------
    def start(self) -> OwnedCluster:
        if self._script("status", check=False).returncode == 0:
            raise HarnessUnavailable(f"a cluster already runs in {self.dir}; not the harness's")
        self._started_script = True
        self._script("start", "--controller-only", "--nodes", str(self.nodes),
                     "--gpus", str(self.gpus))  # fmt: skip
        check_loopback(self.conf)
        ctld = controller_port(self.conf)
        self.ns = Namespaces()
        self.proxy = FaultProxy(self.seed)
        for node, port in node_ports(self.conf).items():
            full = self.ns.create(node)
            up = self.ns.run_dir / f"{node}-up.sock"
            self.proxy.add_link(f"{node}-up", ("127.0.0.1", ctld), listen=str(up))
            self.ns.relay(full, ctld, f"{node}-up")
            down = self.ns.relay(full, port, f"{node}-down", into=True)
            self.proxy.add_link(f"{node}-down", str(down), listen=("127.0.0.1", port))
            self.ns.group(node)
            self.start_node(node)
        self.wait_states(lambda states: all(s == "idle" for s in states.values()), 60.0)
        return self

    def _script(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(SCRIPT), args[0], "--dir", str(self.dir), *args[1:]]
        done = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=180)
        if check and done.returncode != 0:
            raise HarnessUnavailable(
                f"{SCRIPT.name} {args[0]} failed: {done.stderr.strip().splitlines()[-1:]}"
            )
        return done

    def start_node(self, node: str) -> None:
        """Start ``node``'s slurmd in its namespace and group (again, after a crash)."""
        assert self.ns is not None
        argv = ["slurmd", "-D", "-N", node, "-f", str(self.conf)]
        log = open(self.dir / "log" / f"slurmd-{node}.out", "ab")  # noqa: SIM115
        with log:
            proc = self.ns.spawn(self.ns.full(node), argv, group=node, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, env=self.env)  # fmt: skip
        self.slurmd[node] = proc

    # -- faults --------------------------------------------------------------------------------
    def crash(self, node: str) -> float:
        """The node dies: its slurmd, job steps and jobs are SIGKILLed at once. Returns when."""
        assert self.ns is not None
        when = time.time()
        self.ns.kill_group(node)
        self.crashed[node] = when
        return when

    def cut(self, node: str, **fault: object) -> None:
        """Give both of ``node``'s links (to and from the controller) a fault (proxy fields)."""
        assert self.proxy is not None
        for side in ("up", "down"):
            self.proxy.set_fault(f"{node}-{side}", **fault)

    def heal(self, node: str) -> None:
        assert self.proxy is not None
        for side in ("up", "down"):
            self.proxy.heal(f"{node}-{side}")

    def restart_controller(self, pause: float = 0.0) -> tuple[float, float]:
        """SIGTERM slurmctld, wait for it to exit, start it again on the same state folder;
        returns the Unix times it stopped and answered again."""
        pid_file = self.dir / "run" / "slurmctld.pid"
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        for _ in range(200):  # bounded: 20 s, then SIGKILL
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        stopped = time.time()
        time.sleep(pause)
        with open(self.dir / "log" / "slurmctld.out", "ab") as log:
            proc = subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(self.conf)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    env=self.env, start_new_session=True)  # fmt: skip
        pid_file.write_text(f"{proc.pid}\n")  # the script's stop ends it by this record
        for _ in range(300):  # bounded: 30 s
            ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True,
                                  env=self.env)  # fmt: skip
            if "UP" in ping.stdout:
                return stopped, time.time()
            time.sleep(0.1)
        raise RuntimeError("slurmctld did not answer within 30 s of its restart")

    # -- reading -------------------------------------------------------------------------------
    def states(self) -> dict[str, str]:
        """Each node's state as ``sinfo`` prints it (``idle``, ``mix``, ``down*``, …)."""
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True,
                             text=True, env=self.env, timeout=30)  # fmt: skip
        pairs = (line.split() for line in out.stdout.splitlines())
        return {p[0]: p[1] for p in pairs if len(p) == 2}

    def wait_states(self, ok, timeout: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.states()
            if len(states) == self.nodes and ok(states):
                return states
            time.sleep(0.3)
        raise RuntimeError(f"nodes not as wanted within {timeout:g} s: {states}")

    # -- the end -------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill the nodes, remove namespaces, groups, sockets and links, stop the controller."""
        try:
            if self.ns is not None:
                self.ns.close()
            if self.proxy is not None:
                self.proxy.close()
        finally:
            if self._started_script:
                self._script("stop", check=False)
                self._started_script = False

    def __enter__(self) -> OwnedCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True
