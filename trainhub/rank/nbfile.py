"""The executed notebook on disk: rewritten whole (a new file renamed over the name, so a
reader never sees half a file) when a cell ends, at most once per :data:`MIN_GAP_SECONDS`, and
within a long cell every :data:`FLUSH_SECONDS` while there is something new. The writes happen
on a thread of their own: a rename over the old file can wait on the disk (ext4 flushes the new
file's data then), and cells must not wait with it. What is written is the capture's to say
(:mod:`trainhub.rank.nbcapture`)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir

FLUSH_SECONDS = 1.0  # the longest a finished cell or a new output waits to be on disk
MIN_GAP_SECONDS = 0.2  # a burst of short cells is written once per gap, not once per cell


class NotebookFile:
    """Writes ``render()`` to ``name`` in the job directory, on its thread when ``dirty()``."""

    def __init__(
        self, job: JobDir, name: str, render: Callable[[], bytes], dirty: Callable[[], bool]
    ):
        self.job = job
        self.name = name
        self._render = render
        self._dirty = dirty
        self._pid = os.getpid()
        # Reentrant: a stop (SIGTERM) may close the notebook while this thread was writing it.
        self._write_lock = threading.RLock()
        self._last_write = 0.0
        self._stop = threading.Event()
        self._wake = threading.Event()  # a cell has ended: write soon
        self._flusher = threading.Thread(target=self._flush_loop, name="trainhub-notebook")
        self._flusher.daemon = True

    def start(self) -> None:
        self._wake.set()  # the cells about to run, none run yet
        self._flusher.start()

    def soon(self) -> None:
        """A cell has ended: write within MIN_GAP_SECONDS."""
        self._wake.set()

    def stop(self) -> None:
        """No more writes on the thread (the last write is the caller's)."""
        self._stop.set()
        self._wake.set()
        if self._flusher.is_alive():
            self._flusher.join()

    def write(self) -> None:
        if os.getpid() != self._pid:
            return
        with self._write_lock:  # two writers would race their renames
            data = self._render()
            try:
                confined.replace(self.job.root, self.name, data)
            except OSError as e:  # a full disk must not fail the job: the log has it all
                print(
                    f"[trainhub] the executed notebook could not be written: {e}", file=sys.stderr
                )
            self._last_write = time.monotonic()

    def _flush_loop(self) -> None:
        """Write when a cell ends (at most once per MIN_GAP_SECONDS) or, within a cell, every
        FLUSH_SECONDS while there is something new."""
        while True:
            self._wake.wait(FLUSH_SECONDS)
            if self._stop.is_set():
                return
            self._wake.clear()
            gap = MIN_GAP_SECONDS - (time.monotonic() - self._last_write)
            if gap > 0 and self._stop.wait(gap):
                return
            if self._dirty():
                self.write()
