"""The fault proxy: every byte between two parties crosses a link that can be told to misbehave.

A :class:`FaultProxy` runs an asyncio loop in a thread. Each link listens (on 127.0.0.1:PORT or a
Unix socket) and forwards to a target that must be on this machine — a loopback address or a
Unix socket path — anything else is refused when the link is made. A link's :class:`Fault` is
changed at any time and applies to connections from then on (and, for ``blackhole``, ``down``,
``delay`` and ``rate``, to bytes still flowing):

``delay_ms`` ± ``jitter_ms``   each chunk waits before it is forwarded (per direction)
``drop``                       a new connection is closed at once with this probability
``blackhole``                  accepted, never forwarded (the peer sees silence until it gives up)
``reset``                      the connection is reset (RST) after the first reply bytes
``truncate``                   only the first n reply bytes reach the client, then it is closed
``rate``                       bytes per second per direction
``down``                       connections are refused (closed before any byte)

Kernel tools cover none of this on machines without ``netem``; ``tbf`` (see :mod:`.netns`) can
cap bandwidth as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import random
import socket
import struct
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

CHUNK = 65536


class NotLocalError(ValueError):
    """A target that is not on this machine: the harness never touches one."""


def check_local(host: str) -> str:
    """``host`` if it is a loopback address (or ``localhost``); NotLocalError otherwise."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise NotLocalError(f"refusing {host!r}: only loopback addresses may be targeted") from None
    if not address.is_loopback:
        raise NotLocalError(f"refusing {host}: only loopback addresses may be targeted")
    return host


@dataclass(frozen=True)
class Fault:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    drop: float = 0.0
    blackhole: bool = False
    reset: bool = False
    truncate: int | None = None
    rate: float | None = None
    down: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.drop <= 1.0:
            raise ValueError(f"drop must be a probability (got {self.drop})")
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delay and jitter must be ≥ 0 ms")
        if self.truncate is not None and self.truncate < 0:
            raise ValueError("truncate must be ≥ 0 bytes")
        if self.rate is not None and not self.rate > 0:
            raise ValueError("rate must be > 0 bytes/s")


HEALTHY = Fault()


@dataclass
class LinkStats:
    connections: int = 0
    refused: int = 0
    bytes_up: int = 0  # client → target
    bytes_down: int = 0  # target → client


@dataclass
class Link:
    name: str
    listen: tuple[str, int] | str  # (host, port) or a Unix socket path
    target: tuple[str, int] | str
    fault: Fault = HEALTHY
    stats: LinkStats = field(default_factory=LinkStats)
    server: asyncio.AbstractServer | None = None
    writers: set[asyncio.StreamWriter] = field(default_factory=set)


def _check_target(target: tuple[str, int] | str) -> tuple[str, int] | str:
    if isinstance(target, str):
        return str(Path(target))  # a Unix socket on this machine
    host, port = target
    return check_local(host), int(port)


class FaultProxy:
    """Links in one background asyncio loop; see the module docstring."""

    def __init__(self, seed: int = 0) -> None:
        self.links: dict[str, Link] = {}
        self.rng = random.Random(seed)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="fault-proxy", daemon=True
        )
        self.thread.start()
        self.closed = False

    def _call(self, coro):  # run a coroutine on the proxy's loop and wait for it
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)

    # -- links ---------------------------------------------------------------------------------
    def add_link(
        self,
        name: str,
        target: tuple[str, int] | str,
        listen: tuple[str, int] | str = ("127.0.0.1", 0),
    ) -> tuple[str, int] | str:
        """Listen on ``listen`` (port 0: any free one) and forward to ``target``; returns where
        it listens."""
        if name in self.links:
            raise ValueError(f"link {name!r} exists already")
        target = _check_target(target)
        if not isinstance(listen, str):
            listen = (check_local(listen[0]), int(listen[1]))
        link = Link(name, listen, target)
        self.links[name] = link
        self._call(self._serve(link))
        return link.listen

    async def _serve(self, link: Link) -> None:
        handler = lambda r, w: self._connection(link, r, w)  # noqa: E731
        if isinstance(link.listen, str):
            Path(link.listen).parent.mkdir(parents=True, exist_ok=True)
            link.server = await asyncio.start_unix_server(handler, path=link.listen)
        else:
            link.server = await asyncio.start_server(handler, *link.listen)
            link.listen = link.server.sockets[0].getsockname()[:2]

    def set_fault(self, name: str, fault: Fault | None = None, **kw: object) -> None:
        """Give link ``name`` a fault (``Fault`` or its fields; nothing: healthy again)."""
        link = self.links[name]
        link.fault = replace(fault or HEALTHY, **kw) if kw or fault else HEALTHY
        if link.fault.down or link.fault.reset:
            self.loop.call_soon_threadsafe(self._drop_open, link, link.fault.reset)

    def _drop_open(self, link: Link, reset: bool) -> None:
        for writer in list(link.writers):
            _abort(writer) if reset else writer.close()

    def heal(self, name: str | None = None) -> None:
        for link in [self.links[name]] if name else self.links.values():
            link.fault = HEALTHY

    # -- one connection ------------------------------------------------------------------------
    async def _connection(
        self, link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        fault = link.fault
        link.stats.connections += 1
        if fault.down or (fault.drop and self.rng.random() < fault.drop):
            link.stats.refused += 1
            _abort(writer)
            return
        link.writers.add(writer)
        try:
            if isinstance(link.target, str):
                up_reader, up_writer = await asyncio.open_unix_connection(link.target)
            else:
                up_reader, up_writer = await asyncio.open_connection(*link.target)
        except OSError:
            link.stats.refused += 1
            _abort(writer)
            link.writers.discard(writer)
            return
        link.writers.add(up_writer)
        budget = [fault.truncate]
        try:
            await asyncio.gather(
                self._pump(link, reader, up_writer, up=True, budget=[None]),
                self._pump(link, up_reader, writer, up=False, budget=budget),
            )
        finally:
            for w in (writer, up_writer):
                link.writers.discard(w)
                w.close()

    async def _pump(
        self,
        link: Link,
        src: asyncio.StreamReader,
        dst: asyncio.StreamWriter,
        up: bool,
        budget: list[int | None],
    ) -> None:
        try:
            while True:
                data = await src.read(CHUNK)
                if not data:
                    break
                fault = link.fault
                while fault.blackhole:  # hold the bytes until healed (the peer times out)
                    await asyncio.sleep(0.05)
                    fault = link.fault
                    if dst.is_closing():
                        return
                if fault.delay_ms or fault.jitter_ms:
                    jitter = self.rng.uniform(-fault.jitter_ms, fault.jitter_ms)
                    await asyncio.sleep(max(0.0, fault.delay_ms + jitter) / 1000.0)
                if fault.rate:
                    await asyncio.sleep(len(data) / fault.rate)
                if not up and budget[0] is not None:
                    data = data[: budget[0]]
                    budget[0] -= len(data)
                if not up and fault.reset:
                    dst.write(data[: max(1, len(data) // 2)])
                    await dst.drain()
                    _abort(dst)
                    return
                if data:
                    dst.write(data)
                    await dst.drain()
                    if up:
                        link.stats.bytes_up += len(data)
                    else:
                        link.stats.bytes_down += len(data)
                if not up and budget[0] == 0:
                    dst.close()
                    return
        except (ConnectionError, OSError):
            return
        finally:
            if dst.can_write_eof() and not dst.is_closing():
                with contextlib.suppress(OSError):
                    dst.write_eof()

    # -- the end -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every link, remove Unix sockets this proxy made, stop the loop."""
        if self.closed:
            return
        self.closed = True

        async def stop() -> None:
            for link in self.links.values():
                for w in list(link.writers):
                    _abort(w)
                if link.server is not None:
                    link.server.close()
                    await link.server.wait_closed()

        try:
            self._call(stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
            for link in self.links.values():
                if isinstance(link.listen, str) and os.path.exists(link.listen):
                    os.unlink(link.listen)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0) where the transport is a TCP socket."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
