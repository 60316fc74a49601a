"""The controller's work queue, as client-go's: a key is queued at most once however often it
is added; a key added while it is being worked on is worked on again afterwards, never by two
workers at once; a key can be added for later (a retry's backoff, the periodic resync)."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Hashable


class WorkQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._ready: list[Hashable] = []
        self._queued: set[Hashable] = set()
        self._working: set[Hashable] = set()
        self._again: set[Hashable] = set()  # added while being worked on
        self._later: list[tuple[float, int, Hashable]] = []
        self._seq = 0
        self._cond = threading.Condition()

    def add(self, key: Hashable) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: Hashable) -> None:
        if key in self._working:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._cond.notify()

    def add_after(self, key: Hashable, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return
        with self._cond:
            self._seq += 1
            heapq.heappush(self._later, (self.clock() + seconds, self._seq, key))
            self._cond.notify()

    def get(self, timeout: float) -> Hashable | None:
        """The next key to work on (mark it :meth:`done` after), or None after ``timeout``."""
        deadline = self.clock() + timeout
        with self._cond:
            while True:
                now = self.clock()
                while self._later and self._later[0][0] <= now:
                    self._add(heapq.heappop(self._later)[2])
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    self._working.add(key)
                    return key
                wait = deadline - now
                if self._later:
                    wait = min(wait, self._later[0][0] - now)
                if deadline <= now:
                    return None
                self._cond.wait(max(wait, 0.0))

    def done(self, key: Hashable) -> None:
        with self._cond:
            self._working.discard(key)
            if key in self._again:
                self._again.discard(key)
                self._add(key)

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready)
