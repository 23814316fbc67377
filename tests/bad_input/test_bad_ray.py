"""``sweep --engine ray`` given an address no Ray head node answers at: refused in seconds
(Ray itself retries for minutes, flooding the terminal with its logs), in one line naming the
address, before the grid folder is made."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bad_input_helpers import TRACE, refused, write

from schedlab.experiments import ray_engine

pytest.importorskip("ray", reason="Ray is not installed (pip install 'schedlab[ray]')")


def sweep(tmp_path: Path, *extra: str) -> list[str]:
    trace = write(tmp_path, "jobs.csv", TRACE)
    argv = ["sweep", "--engine", "ray", "--cluster", "1x4:V100", "--traces", str(trace)]
    return [*argv, "--policies", "fifo", "--out", str(tmp_path / "grid"), *extra]


@pytest.mark.parametrize(
    ("address", "needles"),
    [
        ("127.0.0.1:99999", ["'--address' has port 99999, not in 1..65535"]),
        ("127.0.0.1:0", ["port 0, not in 1..65535"]),
        ("127.0.0.1", ["'--address' must be HOST:PORT", "'127.0.0.1'"]),
        ("127.0.0.1:http", ["must be HOST:PORT"]),
        (":6379", ["must be HOST:PORT"]),
        ("ray://", ["must be HOST:PORT"]),
        ("user@host:6379", ["must be HOST:PORT"]),
        ("nosuchhost.invalid:6379", ["'nosuchhost.invalid:6379'", "no such host"]),
    ],
)
def test_an_address_that_cannot_be_one_is_refused(
    address: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = sweep(tmp_path, "--address", address)
    refused(argv, capsys, *needles, out=tmp_path / "grid")


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_port_nobody_listens_on_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    refused(sweep(tmp_path, "--address", address), capsys, repr(address), "refused")
    assert time.monotonic() - started < ray_engine.CONNECT_TIMEOUT
    assert not (tmp_path / "grid").exists()


@pytest.fixture
def server() -> Iterator[tuple[int, list[bytes]]]:
    """A local TCP server that answers each connection with the queued reply (b"": none at
    all, it stays silent) and records what it was sent."""
    replies: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                if replies and replies[0]:
                    conn.sendall(replies[0])
                else:  # silent: hold the connection open until the client gives up
                    stop.wait(2.0)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], replies
    stop.set()
    listener.close()
    thread.join(5)


def test_a_server_that_is_not_a_ray_head_is_refused(
    server: tuple[int, list[bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port, replies = server
    replies.append(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    refused(
        sweep(tmp_path, "--address", f"127.0.0.1:{port}"),
        capsys,
        "answers, but not as a Ray head node (no gRPC server there)",
        out=tmp_path / "grid",
    )


def test_a_server_that_never_answers_is_given_up_on_in_time(
    server: tuple[int, list[bytes]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, replies = server
    replies.append(b"")
    monkeypatch.setattr(ray_engine, "CONNECT_TIMEOUT", 0.5)
    refused(
        sweep(tmp_path, "--address", f"127.0.0.1:{port}"),
        capsys,
        "no answer within 0.5 s",
        out=tmp_path / "grid",
    )


def test_a_grpc_server_passes_the_check(server: tuple[int, list[bytes]]) -> None:
    """What a Ray head node (a gRPC server) first sends: a SETTINGS frame."""
    port, replies = server
    replies.append(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    ray_engine.check_address(f"127.0.0.1:{port}")
    ray_engine.check_address(f"ray://127.0.0.1:{port}")


def test_a_bad_ray_address_in_the_environment_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:70000")
    refused(sweep(tmp_path), capsys, "RAY_ADDRESS has port 70000", out=tmp_path / "grid")
