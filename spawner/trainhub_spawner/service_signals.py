"""How a hub-managed service ends: JupyterHub stops it with SIGINT, and with SIGTERM 10 s
later. Python turns SIGINT into KeyboardInterrupt only if SIGINT was not ignored when it
started, and a hub started as a shell's background job hands SIGINT on ignored: each service
asks for both signals itself, so that a hub restart never waits on it."""

from __future__ import annotations

import asyncio
import signal


def stop_requested() -> asyncio.Event:
    """An event that SIGINT or SIGTERM sets; call it in the running event loop's thread."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop
