"""An in-memory stand-in for Slurm with the JSON shapes of Slurm 22.05's ``squeue``/``sinfo``.

Unit tests and the cycle benchmark use it in place of :class:`SubprocessSlurm`: it records every
``scontrol`` call, applies the handful the serve loop sends (update, hold, release, requeuehold)
to its job records, can start released jobs at once, and can be told to fail commands for chosen
jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schedlab.serve.classify import array_task_ids as array_tasks
from schedlab.serve.client import SlurmError
from schedlab.serve.hostlist import expand_hostlist, gpu_indices

Raw = dict[str, Any]


def fake_node(
    name: str, gpus: int = 8, state: str = "idle", flags: Sequence[str] = (), gpu_type: str = ""
) -> Raw:
    """A ``sinfo --json`` node entry."""
    gres = f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"
    return {
        "name": name,
        "gres": gres if gpus else "",
        "gres_used": "gpu:0",
        "state": state,
        "state_flags": list(flags),
        "cpus": 16,
        "real_memory": 64000,
        "partitions": ["gpu"],
        "reason": "",
    }


def fake_job(
    job_id: int,
    gpus: int,
    submit: float,
    *,
    state: str = "PENDING",
    held: bool = True,
    nodes: str = "",
    gpu_idx: Sequence[str] = (),
    required: str = "",
    per_job: bool = False,
    gpu_type: str = "",
    node_count: int = 1,
    time_limit: int | None = 10,
    start: float = 0.0,
    restarts: int = 0,
    comment: str = "",
    partition: str = "gpu",
    mark: str | None = None,
    dependency: str = "",
    eligible: float = 0.0,
    array: tuple[int, int | None, str, int] | None = None,
    account: str = "",
) -> Raw:
    """A ``squeue --json`` job entry (``time_limit`` in minutes, as Slurm prints it).

    ``mark`` is the ``AdminComment``; by default the one schedlab's own job would carry in that
    state (queued while held, released otherwise). ``array`` is (array job id, task id or None,
    unsplit task string, throttle)."""
    if mark is None:
        mark = "schedlab:queued" if held and state == "PENDING" else "schedlab:released"
    array_id, task_id, tasks, throttle = array or (0, None, "", 0)
    gres = f"gres:gpu:{gpu_type}:{gpus}" if gpu_type else f"gres:gpu:{gpus}"
    return {
        "job_id": job_id,
        "name": f"job{job_id}",
        "user_name": "alice",
        "account": account,
        "partition": partition,
        "job_state": state,
        "state_reason": "JobHeldUser" if held and state == "PENDING" else "None",
        "priority": 0 if held and state == "PENDING" else 4294901000,
        "tres_per_node": "" if per_job or not gpus else gres,
        "tres_per_job": gres if per_job and gpus else "",
        "tres_per_task": "",
        "node_count": node_count,
        "nodes": nodes,
        "gres_detail": list(gpu_idx),
        "required_nodes": required,
        "submit_time": int(submit),
        "start_time": int(start),
        "end_time": 0,
        "time_limit": time_limit,
        "restart_cnt": restarts,
        "comment": comment,
        "admin_comment": mark,
        "dependency": dependency,
        "eligible_time": int(eligible),
        "array_job_id": array_id,
        "array_task_id": task_id,
        "array_task_string": tasks,
        "array_max_tasks": throttle,
    }


class FakeSlurm:
    """Jobs and nodes in memory; ``calls`` lists every ``scontrol`` argument list in order."""

    def __init__(
        self, nodes: Sequence[Raw], jobs: Sequence[Raw] = (), start_on_release: bool = False
    ) -> None:
        self.nodes = {n["name"]: n for n in nodes}
        self.jobs = {int(j["job_id"]): j for j in jobs}
        self.calls: list[list[str]] = []
        self.fail_jobs: dict[int, str] = {}
        self.fail_reads = 0
        self.start_on_release = start_on_release
        self.topology_text = ""  # what ``scontrol show topology`` prints (nothing: no tree)
        self.associations_text: str | None = None  # ``sacctmgr`` output (None: no accounting)

    # -- reads -----------------------------------------------------------------------------
    def squeue(self) -> dict[str, Any]:
        if self.fail_reads:
            self.fail_reads -= 1
            raise SlurmError("'squeue --json' failed (exit 1): Unable to contact slurm controller")
        return {"meta": {}, "errors": [], "jobs": list(self.jobs.values())}

    def sinfo(self) -> dict[str, Any]:
        return {"meta": {}, "errors": [], "nodes": list(self.nodes.values())}

    def ping(self) -> bool:
        return True

    def topology(self) -> str:
        return self.topology_text

    def associations(self) -> str:
        if self.associations_text is None:
            raise SlurmError("sacctmgr: error: Problem talking to the database")
        return self.associations_text

    def signal(self, job: str, name: str) -> None:
        self.calls.append(["signal", job, name])

    # -- scontrol --------------------------------------------------------------------------
    def scontrol(self, args: Sequence[str]) -> None:
        args = list(args)
        self.calls.append(args)
        ids = args[1].removeprefix("JobId=").split(",") if args[0] == "update" else []
        if len(ids) < 2:
            self._scontrol(args)
            return
        # A list of jobs: Slurm updates every job it can and fails if any one failed.
        failed = []
        for one in ids:
            try:
                self._scontrol(["update", f"JobId={one}", *args[2:]])
            except SlurmError as exc:
                failed.append(str(exc))
        if failed:
            raise SlurmError(failed[0])

    def _scontrol(self, args: list[str]) -> None:
        verb = args[0]
        if verb == "update":
            fields = dict(a.split("=", 1) for a in args[1:])
            job_id = self._resolve(fields.pop("JobId"))
        else:
            fields, job_id = {}, self._resolve(args[1])
        if job_id in self.fail_jobs:
            raise SlurmError(
                f"'scontrol {' '.join(args)}' failed (exit 1): {self.fail_jobs[job_id]}"
            )
        job = self.jobs.get(job_id)
        if job is None:
            raise SlurmError(f"'scontrol {' '.join(args)}' failed (exit 1): Invalid job id")
        if verb == "update":
            if "ReqNodeList" in fields:
                job["required_nodes"] = fields["ReqNodeList"]
            if "NumNodes" in fields:
                job["node_count"] = int(fields["NumNodes"])
            if "Comment" in fields:
                job["comment"] = fields["Comment"]
            if "AdminComment" in fields:
                job["admin_comment"] = fields["AdminComment"]
            if fields.get("Priority") == "0":
                job.update(priority=0, state_reason="JobHeldAdmin")
        elif verb == "hold":
            job.update(priority=0, state_reason="JobHeldAdmin")
        elif verb == "release":
            job.update(priority=4294901000, state_reason="None")
            if self.start_on_release:
                self.start(job_id)
        elif verb == "requeuehold":
            if job["job_state"] == "PENDING":  # as Slurm answers (ESLURM_JOB_PENDING)
                raise SlurmError(
                    f"'scontrol {' '.join(args)}' failed (exit 1): "
                    f"Job is pending execution for job {job_id}"
                )
            job.update(
                job_state="PENDING",
                priority=0,
                state_reason="JobHeldUser",
                nodes="",
                gres_detail=[],
                restart_cnt=int(job["restart_cnt"]) + 1,
            )
        else:
            raise SlurmError(f"fake Slurm does not know 'scontrol {verb}'")

    def _resolve(self, text: str) -> int:
        """A job id, or ``ARRAY_TASK``: a task still in its array's rest is split off into a
        record of its own with the next free job id, as Slurm does on an update."""
        if "_" not in text:
            return int(text)
        array_id, task = (int(p) for p in text.split("_", 1))
        for job_id, job in self.jobs.items():
            if job["array_job_id"] == array_id and job["array_task_id"] == task:
                return job_id
        rest = self.jobs.get(array_id)
        if rest is None or task not in array_tasks(rest["array_task_string"]):
            raise SlurmError(f"'scontrol update JobId={text}' failed (exit 1): Invalid job id")
        left = [t for t in array_tasks(rest["array_task_string"]) if t != task]
        if not left:  # the last task is the array's own record
            rest.update(array_task_id=task, array_task_string="")
            return array_id
        new_id = max(self.jobs) + 1
        self.jobs[new_id] = {
            **rest,
            "job_id": new_id,
            "array_task_id": task,
            "array_task_string": "",
        }
        throttle = rest["array_max_tasks"]
        rest["array_task_string"] = ",".join(map(str, left)) + (f"%{throttle}" if throttle else "")
        return new_id

    # -- what Slurm itself would do ----------------------------------------------------------
    def start(self, job_id: int, now: float = 0.0) -> None:
        """Start a released job on its required nodes, taking the lowest free GPU indices."""
        job = self.jobs[job_id]
        nodes = expand_hostlist(job["required_nodes"])
        total = int(str(job["tres_per_node"] or job["tres_per_job"]).rsplit(":", 1)[1])
        each = total if job["tres_per_node"] else -(-total // len(nodes))
        used = self._used()
        detail = []
        for name in nodes:
            free = [g for g in range(self._gpus(name)) if g not in used.get(name, set())]
            take = free[:each]
            detail.append(f"gpu:{len(take)}(IDX:{','.join(map(str, take))})")
        job.update(
            job_state="RUNNING",
            nodes=",".join(nodes),
            gres_detail=detail,
            start_time=int(now),
            state_reason="None",
        )

    def finish(self, job_id: int, state: str = "COMPLETED") -> None:
        self.jobs[job_id].update(job_state=state, gres_detail=[], end_time=1)

    def _gpus(self, name: str) -> int:
        return int(str(self.nodes[name]["gres"]).rsplit(":", 1)[1])

    def _used(self) -> dict[str, set[int]]:
        used: dict[str, set[int]] = {}
        for job in self.jobs.values():
            if job["job_state"] != "RUNNING":
                continue
            for name, d in zip(expand_hostlist(job["nodes"]), job["gres_detail"], strict=False):
                used.setdefault(name, set()).update(gpu_indices(d))
        return used


def without_reasons(calls: list[list[str]]) -> list[list[str]]:
    """``calls`` less the updates that only write a job's waiting reason
    (:mod:`schedlab.serve.reasons`), for tests about what was placed, held or released."""
    return [
        c
        for c in calls
        if not (
            len(c) == 3
            and c[0] == "update"
            and c[2].startswith("Comment=schedlab:")
            and not c[2].startswith("Comment=schedlab: rejected:")
        )
    ]
