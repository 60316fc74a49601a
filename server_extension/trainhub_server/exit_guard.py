"""A stop that was asked for ends the process.

JupyterLab's exit can hang after its event loop has ended: Python waits for every thread that
is not a daemon, and a worker thread anyio starts for the server's file operations is told to
stop only when the task that started it ends, which a task cut short by the stop never does
(seen under load: the main thread in ``threading._shutdown``, waiting on an "AnyIO worker
thread" idle on its queue, for as long as anyone let it). So once the server is stopping, a
daemon thread gives the rest of its shutdown (kernels, terminals) ``grace`` seconds; past
them it writes where each thread still is and ends the process.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
import time


def arm(grace: float, log: logging.Logger) -> threading.Thread:
    """End this process ``grace`` seconds from now unless it has ended by itself."""

    def guard() -> None:
        time.sleep(grace)
        log.warning(
            "trainhub: the server had not exited %.0f s after it stopped; ending it. "
            "Its threads still running:",
            grace,
        )
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(0)  # the stop was asked for and its work is done; a thread holds the exit

    thread = threading.Thread(target=guard, name="trainhub-exit-guard", daemon=True)
    thread.start()
    return thread
