"""A thin client over Slurm's commands: run them, parse their JSON, turn failures into errors.

The serve loop talks to Slurm only through :class:`SlurmClient`, so unit tests and the benchmark
substitute :class:`schedlab.serve.fake.FakeSlurm` and check the exact ``scontrol`` arguments a
decision produces without a cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from schedlab.errors import SchedlabError
from schedlab.serve.squeue_text import (
    Supplements,
    TextFormatError,
    read_squeue_text,
    squeue_argv,
)


class SlurmError(SchedlabError):
    """A Slurm command could not run or said no; the message names the command and its words."""


class SlurmClient(Protocol):
    """What the serve loop needs from Slurm."""

    def squeue(self) -> dict[str, Any]:
        """``squeue --json``: every job the controller still knows about."""
        ...

    def sinfo(self) -> dict[str, Any]:
        """``sinfo --json``: every node with its state and GPUs."""
        ...

    def scontrol(self, args: Sequence[str]) -> None:
        """Run ``scontrol ARGS``; raise :class:`SlurmError` when it fails."""
        ...

    def topology(self) -> str:
        """``scontrol show topology``: the switch tree, ``""`` when Slurm has none."""
        ...

    def ping(self) -> bool:
        """True if the controller answers."""
        ...

    def signal(self, job: str, name: str) -> None:
        """Send signal ``name`` (e.g. ``TERM``) to every step of ``job``, cancelling nothing."""
        ...


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


class SubprocessSlurm:
    """The real client: Slurm's own commands, found on ``PATH``, configured by ``SLURM_CONF``."""

    def __init__(self, timeout: float = 30.0, text_squeue: bool = True) -> None:
        self.timeout = timeout
        #: Read jobs from ``squeue -O`` text (about ten times faster than ``--json``), falling
        #: back to ``squeue --json`` for a cycle whose text does not read as expected.
        self.text_squeue = text_squeue
        self.fallbacks = 0
        self._more = Supplements(
            lambda job: self._run(["scontrol", "show", "job", "-d", "-o", job])
        )

    def _run(
        self, argv: Sequence[str], env: Mapping[str, str] | None = None, name: str | None = None
    ) -> str:
        """Run a Slurm command; ``name`` is how errors call it (default: the command line)."""
        name = name or " ".join(argv)
        if shutil.which(argv[0]) is None:
            raise SlurmError(
                f"'{argv[0]}' not found: install Slurm's client commands (Debian: slurm-client)"
            )
        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
                env=None if env is None else {**os.environ, **env},
            )
        except subprocess.TimeoutExpired:
            raise SlurmError(f"'{name}' took more than {self.timeout:g} s") from None
        if done.returncode != 0:
            why = _first_line(done.stderr) or _first_line(done.stdout) or "no message"
            raise SlurmError(f"'{name}' failed (exit {done.returncode}): {why}")
        return done.stdout

    def _json(self, argv: Sequence[str]) -> dict[str, Any]:
        text = self._run(argv)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SlurmError(f"'{' '.join(argv)}' printed no valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise SlurmError(f"'{' '.join(argv)}' printed JSON that is not an object")
        errors = data.get("errors") or []
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {"error": str(errors[0])}
            why = first.get("description") or first.get("error") or str(first)
            raise SlurmError(
                f"'{' '.join(argv)}' reported an error: {why} "
                "(does 'scontrol ping' find the controller UP?)"
            )
        return data

    def squeue(self) -> dict[str, Any]:
        if self.text_squeue:
            # Times in Slurm's standard form whatever the caller's SLURM_TIME_FORMAT says.
            text = self._run(
                squeue_argv(), env={"SLURM_TIME_FORMAT": "standard"}, name="squeue --Format=…"
            )
            try:
                return read_squeue_text(text, self._more)
            except TextFormatError:
                self.fallbacks += 1
        return self._json(["squeue", "--json"])

    def sinfo(self) -> dict[str, Any]:
        return self._json(["sinfo", "--json"])

    def scontrol(self, args: Sequence[str]) -> None:
        self._run(["scontrol", *args])

    def associations(self) -> str:
        """``sacctmgr``'s associations (accounts, users, shares, limits) as pipe-separated
        lines, for tenancy (:mod:`schedlab.tenancy.live`)."""
        from schedlab.tenancy.live import SACCTMGR_ARGV

        return self._run(SACCTMGR_ARGV)

    def topology(self) -> str:
        # Without a topology plugin it prints nothing (and "No topology information" on stderr).
        return self._run(["scontrol", "show", "topology"])

    def signal(self, job: str, name: str) -> None:
        self._run(["scancel", f"--signal={name}", "--full", job])

    def ping(self) -> bool:
        try:
            return " is UP" in self._run(["scontrol", "ping"])
        except SlurmError:
            return False


class ShadowSlurm:
    """Reads Slurm like the real client and changes nothing: every ``scontrol`` and signal is
    dropped, so a scheduler in shadow mode computes and journals the decisions it would take."""

    def __init__(self, inner: SlurmClient) -> None:
        self.inner = inner

    def squeue(self) -> dict[str, Any]:
        return self.inner.squeue()

    def sinfo(self) -> dict[str, Any]:
        return self.inner.sinfo()

    def scontrol(self, args: Sequence[str]) -> None:
        return None

    def topology(self) -> str:
        return self.inner.topology()

    def signal(self, job: str, name: str) -> None:
        return None

    def ping(self) -> bool:
        return self.inner.ping()


def slurm_reachable() -> tuple[bool, str]:
    """Whether a Slurm controller answers here, and if not, why (for skips and error messages)."""
    if shutil.which("scontrol") is None:
        return False, "Slurm's client commands are not installed (no 'scontrol' on PATH)"
    if not os.environ.get("SLURM_CONF") and not os.path.exists("/etc/slurm/slurm.conf"):
        return False, "SLURM_CONF is not set and /etc/slurm/slurm.conf does not exist"
    if not SubprocessSlurm(timeout=10).ping():
        return False, "'scontrol ping' finds no controller that is UP"
    return True, ""
