"""One scheduler per set of partitions: a lock file per partition in the state directory.

Two schedulers deciding for the same partition undo each other's pins (a running job's
``ReqNodeList`` rewritten, records of resizes Slurm never made, accounting gone wrong), so
``serve slurm`` takes, before it changes anything, an exclusive ``flock`` on
``STATE_DIR/serve-PARTITION.lock`` for its partition — and a scheduler of every partition (no
``--partition``) an exclusive lock on ``serve-ALL.lock``, which every other one holds shared. The
kernel drops the locks when the process ends, however it ends, so a SIGKILLed scheduler never
leaves a stale lock behind. The lock file says who holds it, for the error message.

The lock is local to the machine (and the state directory): run a partition's scheduler on one
host.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from schedlab.errors import InputError

ALL = "ALL"


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/schedlab`` (``~/.local/state/schedlab``), or ``/var/lib/schedlab`` for
    root, as a system service would keep it."""
    if os.geteuid() == 0 and not os.environ.get("XDG_STATE_HOME"):
        return Path("/var/lib/schedlab")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "schedlab"


def lock_path(state_dir: Path, partition: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", partition)
    return state_dir / f"serve-{safe}.lock"


class PartitionLock:
    """Held for the life of one scheduler; see the module docstring."""

    def __init__(self, state_dir: Path, partition: str | None) -> None:
        self.state_dir = state_dir
        self.partition = partition
        self._files: list[IO[str]] = []

    def acquire(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot create the state directory {self.state_dir}: {exc.strerror}"
            ) from None
        if self.partition is None:
            self._take(ALL, fcntl.LOCK_EX)
        else:
            self._take(ALL, fcntl.LOCK_SH)
            self._take(self.partition, fcntl.LOCK_EX)

    def _take(self, name: str, mode: int) -> None:
        path = lock_path(self.state_dir, name)
        try:
            fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held until release)
        except OSError as exc:
            raise InputError(f"cannot open the lock file {path}: {exc.strerror}") from None
        try:
            fcntl.flock(fh, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            self.release()
            what = "every partition" if name == ALL else f"partition '{name}'"
            raise InputError(
                f"another 'schedlab serve slurm' already manages {what} ({holder}; lock {path}); "
                "stop it first, or manage another partition"
            ) from None
        if mode == fcntl.LOCK_EX:
            fh.seek(0)
            fh.truncate()
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {since}\n")
            fh.flush()
        self._files.append(fh)

    def release(self) -> None:
        for fh in self._files:
            fh.close()  # closing drops the flock
        self._files.clear()

    def __enter__(self) -> PartitionLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class Holder:
    """Who holds a partition's lock: what the lock file says, and the pid the kernel names."""

    path: Path
    pid: int
    text: str  # "pid P on HOST since TIME", as written by the holder
    host: str
    since: str  # ISO 8601 UTC, "" when the file does not say

    @property
    def partition(self) -> str:
        return self.path.stem.removeprefix("serve-")


_HOLDER = re.compile(r"pid (\d+) on (\S+)(?: since (\S+))?")


def _flock_writers(path: Path, locks: str) -> list[int]:
    """Pids holding an exclusive ``flock`` on ``path``, from the text of ``/proc/locks``."""
    try:
        st = path.stat()
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in locks.splitlines():
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:1507338 0 EOF"; waiters have "->" after "1:".
        if len(parts) >= 6 and parts[1:4] == ["FLOCK", "ADVISORY", "WRITE"] and parts[5] == key:
            pids.append(int(parts[4]))
    return pids


def lock_holder(state_dir: Path, partition: str | None, locks: str | None = None) -> Holder | None:
    """The scheduler managing ``partition`` (None: every partition) on this machine, or None.

    Read without taking any lock (a probe must never make a starting scheduler fail): the
    kernel's table of ``flock`` locks (``/proc/locks``, or ``locks`` in tests) says whether
    someone holds the partition's lock, or the all-partitions one, exclusively; the file says
    who and since when."""
    if locks is None:
        try:
            locks = Path("/proc/locks").read_text()
        except OSError:
            locks = ""
    names = [ALL] if partition is None else [partition, ALL]
    for name in names:
        path = lock_path(state_dir, name)
        pids = _flock_writers(path, locks)
        if not pids:
            continue
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            text = ""
        m = _HOLDER.match(text)
        return Holder(
            path=path,
            pid=pids[0],
            text=text,
            host=m.group(2) if m else "",
            since=(m.group(3) or "") if m else "",
        )
    return None
