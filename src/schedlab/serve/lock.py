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


def _lock_path(state_dir: Path, partition: str) -> Path:
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
        path = _lock_path(self.state_dir, name)
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
            fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
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
