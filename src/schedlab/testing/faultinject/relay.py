"""Relays between a network namespace and the host, through Unix sockets (which cross namespaces).

    python -m schedlab.testing.faultinject.relay PORT SOCKET            # out of the namespace
    python -m schedlab.testing.faultinject.relay --into PORT SOCKET     # into the namespace

Namespaces have only their own loopback. Run inside one, the first form listens on
127.0.0.1:PORT there and forwards every connection to SOCKET, which the host's fault proxy
serves (a slurmd reaching its controller). The second listens on SOCKET and forwards each
connection to 127.0.0.1:PORT inside the namespace (the controller reaching a slurmd: the host's
fault proxy listens on the node's port and forwards to SOCKET).
"""

from __future__ import annotations

import asyncio
import signal
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main(port: int, path: str, into: bool = False) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if into:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            else:
                up_reader, up_writer = await asyncio.open_unix_connection(path)
        except OSError:
            writer.transport.abort()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    if into:
        server = await asyncio.start_unix_server(handle, path=path)
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    args = sys.argv[1:]
    into = args[:1] == ["--into"]
    if into:
        args = args[1:]
    asyncio.run(main(int(args[0]), args[1], into))
