"""The fault proxy and the namespace harness, on loopback only."""

from __future__ import annotations

import errno
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from schedlab.testing.faultinject.proxy import Fault, FaultProxy, NotLocalError, check_local


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address
    server.shutdown()
    server.server_close()


def _talk(address, payload: bytes, timeout: float = 2.0) -> bytes:
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(payload)
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError as exc:  # the proxy already dropped it: ENOTCONN, on a fast machine
            if exc.errno != errno.ENOTCONN:
                raise
            raise ConnectionResetError(errno.ENOTCONN, "the link closed the connection") from exc
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


def test_healthy_link_forwards_both_ways(echo) -> None:
    with FaultProxy() as proxy:
        where = proxy.add_link("a", echo)
        assert _talk(where, b"hello" * 1000) == b"hello" * 1000
        assert proxy.links["a"].stats.bytes_down == 5000


def test_delay(echo) -> None:
    with FaultProxy() as proxy:
        where = proxy.add_link("a", echo)
        proxy.set_fault("a", delay_ms=200)
        start = time.monotonic()
        assert _talk(where, b"x") == b"x"
        assert time.monotonic() - start >= 0.39  # 200 ms each way


def test_blackhole_then_heal(echo) -> None:
    with FaultProxy() as proxy:
        where = proxy.add_link("a", echo)
        proxy.set_fault("a", blackhole=True)
        with pytest.raises(TimeoutError):
            _talk(where, b"x", timeout=0.5)
        proxy.heal("a")
        assert _talk(where, b"y") == b"y"


def test_truncate_reset_down_drop(echo) -> None:
    with FaultProxy() as proxy:
        where = proxy.add_link("a", echo)
        proxy.set_fault("a", truncate=10)
        assert _talk(where, b"0123456789abcdef") == b"0123456789"
        proxy.set_fault("a", reset=True)
        with pytest.raises(ConnectionError):
            _talk(where, b"z" * 100)
        proxy.set_fault("a", down=True)
        with pytest.raises(ConnectionError):
            _talk(where, b"z")
        assert proxy.links["a"].stats.refused >= 1
        proxy.set_fault("a", drop=1.0)
        with pytest.raises(ConnectionError):
            _talk(where, b"z")


def test_only_loopback_targets() -> None:
    for host in ("10.0.0.1", "8.8.8.8", "example.com", "0.0.0.0"):
        with pytest.raises(NotLocalError):
            check_local(host)
    assert check_local("127.0.0.2") == "127.0.0.2" and check_local("::1") == "::1"
    with FaultProxy() as proxy, pytest.raises(NotLocalError):
        proxy.add_link("x", ("192.168.1.1", 22))
    with pytest.raises(ValueError, match="probability"):
        Fault(drop=2.0)


def test_unix_socket_listener_is_removed(tmp_path, echo) -> None:
    path = tmp_path / "link.sock"
    proxy = FaultProxy()
    proxy.add_link("u", echo, listen=str(path))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        sock.sendall(b"hi")
        assert sock.recv(10) == b"hi"
    proxy.close()
    assert not path.exists()


def test_namespace_relay_reaches_the_host_through_the_proxy(echo) -> None:
    from schedlab.testing.faultinject.netns import HarnessUnavailable, Namespaces

    try:
        ns = Namespaces()
    except HarnessUnavailable as exc:
        pytest.skip(f"no network namespaces here: {exc}")
    with ns, FaultProxy() as proxy:
        full = ns.create("node1")
        sock_path = ns.run_dir / "node1-ctld.sock"
        proxy.add_link("node1", echo, listen=str(sock_path))
        ns.relay(full, 17001, "node1-ctld")
        client = (
            "import socket,time\n"
            "for _ in range(50):\n"
            "    try:\n"
            "        s=socket.create_connection(('127.0.0.1',17001),timeout=2); break\n"
            "    except OSError: time.sleep(0.1)\n"
            "s.sendall(b'ping'); print(s.recv(10).decode())\n"
        )
        done = subprocess.run(
            ns.exec_argv(full, [sys.executable, "-c", client]), capture_output=True, text=True,
            timeout=30,
        )  # fmt: skip
        assert done.stdout.strip() == "ping", done.stderr
        # the namespace sees only its own loopback: the host's echo port is not reachable
        direct = f"import socket; socket.create_connection(('127.0.0.1',{echo[1]}),timeout=1)"
        done = subprocess.run(
            ns.exec_argv(full, [sys.executable, "-c", direct]), capture_output=True
        )
        assert done.returncode != 0
        with pytest.raises(PermissionError):
            ns.exec_argv("schedlab-fi-1-other", ["true"])
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert full not in listed and not ns.run_dir.exists()
