"""Running a grid's runs on a Ray cluster (``schedlab sweep --engine ray``).

Each run is an independent Ray task. What a run reads from disk — trace, node and pod files — is
read once here and put in Ray's object store, so every node fetches each input once, whatever
the number of its runs, and the worker machines need no copy of the files. What a run writes
comes back with its result: the parent writes the run folder (atomically, as the local engine
does), so results land on the machine that started the sweep as they finish, and a grid folder
filled by Ray is the same as one filled by the local pool. Other files a run may name (a
throughput-table folder, a cluster file) must be at the same path on every node.

A worker process or node lost mid-sweep fails only the tasks it was running; Ray runs them again
(:data:`RETRIES` times), so the sweep still completes. A run that fails by itself (bad input)
fails the sweep, as locally.

Ray is an optional dependency (``pip install -e '.[ray]'`` in the checkout, or ``pip install
'ray>=2.9'``); nothing imports it unless this engine is chosen.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from schedlab.errors import InputError, SchedlabError
from schedlab.experiments.shipped import local_path, use_copy

T = TypeVar("T")

#: Times Ray reruns a task whose worker or node died.
RETRIES = 5


def require_ray() -> Any:
    """The ray module, or an InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(
            "'--engine ray' needs Ray: pip install 'ray>=2.9' (from the checkout: pip install -e "
            "'.[ray]'), or pass --engine local"
        ) from None
    return ray


#: Seconds a head node has to accept the connection and answer, before a sweep gives up on it
#: (Ray itself retries a wrong address for minutes, printing its C++ logs all along).
CONNECT_TIMEOUT = 5.0
#: ``--address`` values Ray reads itself: find a running local cluster, or start one.
RAY_WORDS = ("auto", "local")
#: The first bytes of an HTTP/2 connection (RFC 9113 §3.4) and an empty SETTINGS frame: a
#: gRPC server (Ray's head node is one) answers with a SETTINGS frame of its own.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_FRAME = 0x04


def parse_address(address: str, what: str = "'--address'") -> tuple[str, int]:
    """``HOST:PORT`` (or ``ray://HOST:PORT``, or ``[IPv6]:PORT``) → (host, port); an
    InputError naming ``what`` and the value otherwise."""
    rest = address.strip().removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or any(c.isspace() or c in "/@" for c in host) or not port.isdigit():
        raise InputError(f"{what} must be HOST:PORT, e.g. 10.0.0.1:6379 (got {address!r})")
    if not 1 <= int(port) <= 65535:
        raise InputError(f"{what} has port {int(port)}, not in 1..65535 (got {address!r})")
    return host, int(port)


def check_address(address: str | None) -> None:
    """Refuse, in seconds and before anything is written, a Ray address no head node answers
    at: not HOST:PORT, a host that does not resolve, a port nobody listens on, or a server that
    is not gRPC. ``None`` checks ``RAY_ADDRESS`` if set; ``auto`` and ``local`` are Ray's own."""
    what = "'--address'"
    if address is None:
        address, what = os.environ.get("RAY_ADDRESS") or None, "RAY_ADDRESS"
    if address is None or address.strip() in RAY_WORDS:
        return
    host, port = parse_address(address, what)
    where = f"the Ray head node at {what} {address!r}"
    try:
        found = _in_time(lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except TimeoutError:
        raise InputError(f"cannot reach {where}: {host!r} does not resolve in time") from None
    except OSError as exc:
        raise InputError(f"cannot reach {where}: no such host ({exc.strerror or exc})") from None
    family, kind, proto, _, sockaddr = found[0]
    try:
        with socket.socket(family, kind, proto) as conn:
            conn.settimeout(CONNECT_TIMEOUT)
            conn.connect(sockaddr)
            conn.sendall(HTTP2_PREFACE)
            header = _read(conn, 9)
    except TimeoutError:
        raise InputError(f"cannot reach {where}: no answer within {CONNECT_TIMEOUT:g} s") from None
    except OSError as exc:
        raise InputError(
            f"cannot reach {where}: {exc.strerror or exc} (is 'ray start --head' running there?)"
        ) from None
    if len(header) < 9 or header[3] != SETTINGS_FRAME:
        raise InputError(f"{where} answers, but not as a Ray head node (no gRPC server there)")


def _in_time(call: Callable[[], T]) -> T:
    """``call()`` in a thread, given :data:`CONNECT_TIMEOUT` (a name lookup has no timeout)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(_outcome(call)), daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT)
    if not box:
        raise TimeoutError
    value, error = box[0]
    if error is not None:
        raise error
    return value  # type: ignore[no-any-return]


def _outcome(call: Callable[[], T]) -> tuple[T | None, BaseException | None]:
    try:
        return call(), None
    except OSError as exc:
        return None, exc


def _read(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` (None: ``RAY_ADDRESS``, else a local one-machine Ray),
    once :func:`check_address` found a head node answering there."""
    ray = require_ray()
    if not ray.is_initialized():
        check_address(address)
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                include_dashboard=False,
                configure_logging=False,
                runtime_env={"env_vars": {"RAY_USAGE_STATS_ENABLED": "0"}},
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot join the Ray cluster at {address!r}: {exc}") from None
    return ray


# ----------------------------------------------------------------------------- shipped inputs


def input_files(task: object) -> list[str]:
    """The files a run task reads that are shipped through the object store."""
    spec = getattr(task, "spec", None)
    if spec is not None:  # a replay run
        return [] if getattr(task, "synthetic", None) is not None else [spec.trace]
    workload = getattr(task, "workload", None)
    return [workload.nodes, workload.pods] if hasattr(workload, "pods") else []


def _remote_run(fn: Callable[[Any], Any], task: Any, *shipped: bytes) -> Any:
    """Runs on a Ray worker: the shipped inputs arrive resolved (bytes) after the task."""
    for path, data in zip(input_files(task), shipped, strict=True):
        if local_path(path) == path and not _same_file(path, data):
            folder = Path(tempfile.mkdtemp(prefix="schedlab-ray-"))
            (folder / Path(path).name).write_bytes(data)  # its own name: labels come from it
            use_copy(path, str(folder / Path(path).name))
    return fn(task)


def _same_file(path: str, data: bytes) -> bool:
    """The node already has the very file at that path (the machine that started the sweep)."""
    try:
        return Path(path).read_bytes() == data
    except OSError:
        return False


# -------------------------------------------------------------------------------------- engine


def run_all_ray(
    fn: Callable[[T], Any],
    tasks: Sequence[T],
    land: Callable[[T, Any], Any],
    on_done: Callable[[Any], None] | None = None,
    address: str | None = None,
) -> list[Any]:
    """``fn`` over every task as Ray tasks; ``land(task, returned)`` turns what a run returned
    into its result on this machine (writing its files). Results in task order."""
    ray = connect(address)
    shipped: dict[str, Any] = {}
    for task in tasks:
        for path in input_files(task):
            if path not in shipped:
                shipped[path] = ray.put(Path(path).read_bytes())
    remote = ray.remote(max_retries=RETRIES, retry_exceptions=False, num_cpus=1)(_remote_run)
    pending = {
        remote.remote(fn, task, *(shipped[p] for p in input_files(task))): i
        for i, task in enumerate(tasks)
    }
    results: list[Any] = [None] * len(tasks)
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    returned = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if isinstance(exc.cause, SchedlabError) else None
                    if cause is not None:
                        raise cause from None
                    raise SchedlabError(f"a run failed on the Ray cluster: {exc}") from None
                except ray.exceptions.RayError as exc:
                    raise SchedlabError(
                        f"a run was lost on the Ray cluster {RETRIES + 1} times: {exc}"
                    ) from None
                results[i] = land(tasks[i], returned)
                if on_done:
                    on_done(results[i])
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
    return results


def node_count(address: str | None) -> int:
    """Live nodes of the cluster (for the sweep's summary line)."""
    ray = connect(address)
    return sum(1 for n in ray.nodes() if n.get("Alive"))
