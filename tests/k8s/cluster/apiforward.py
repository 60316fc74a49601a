"""The API server as pods reach it: a TCP relay on the real node's bridge gateway.

The test API server listens on loopback only (nothing off the machine reaches it), which no
pod can reach: a Service cannot have a loopback endpoint. The node runs this relay on the
gateway address, and the ``kubernetes`` Service's EndpointSlice names it, so a pod's
in-cluster client (``https://kubernetes.default.svc``, whose name the API server's
certificate carries) gets through kube-proxy to the API server like on any cluster. Bytes
pass as they are: TLS and authentication stay between the pod and the API server.

Usage: python apiforward.py <listen host> <listen port> <target host> <target port>
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def main(listen_host: str, listen_port: int, target_host: str, target_port: int) -> None:
    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(relay, listen_host, listen_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target, target_port = sys.argv[1:5]
    asyncio.run(main(host, int(port), target, int(target_port)))
