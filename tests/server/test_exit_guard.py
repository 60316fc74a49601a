"""A server that was told to stop ends, even while a thread that is no daemon holds the exit
(an anyio worker whose task the stop cut short): the guard, after its grace, says where each
thread is and ends the process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A process whose main thread has returned while another, no daemon, waits forever.
HELD = """
import logging, queue, sys, threading
from trainhub_server import exit_guard

logging.basicConfig(level=logging.INFO)
threading.Thread(target=queue.Queue().get, name="held-forever").start()
if sys.argv[1] == "armed":
    exit_guard.arm(1.0, logging.getLogger("server"))
"""


def run_held(mode: str, timeout: float) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT), str(ROOT / "server_extension")])
    return subprocess.run(
        [sys.executable, "-c", HELD, mode],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": path},
    )


def test_without_the_guard_such_a_process_never_ends() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_held("unarmed", timeout=4)


def test_the_guard_ends_it_after_its_grace_saying_which_thread_held_it() -> None:
    started = time.monotonic()
    done = run_held("armed", timeout=30)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    assert "the server had not exited 1 s after it stopped; ending it" in done.stderr
    assert "queue.py" in done.stderr  # the held thread's stack, where it waits
