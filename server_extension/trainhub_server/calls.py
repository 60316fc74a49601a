"""Running job-service calls off the event loop, side by side, each within a time limit.

No request may stall another: a call that hangs (a file that never answers, a cluster that
does not reply) must hold up neither the event loop nor anyone else's calls. So calls run on
a few worker threads at once (the local store gives each thread its own SQLite connection,
and SQLite keeps their transactions apart), and each call has a time limit. Past it the
request ends with a 503 that says so, and the thread still stuck in the call is written off:
a fresh one takes its place, so stuck calls never use up the workers. Plain reads of a job
directory (log tails, downloads) have a pool of their own, so a burst of service calls never
delays a live log.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from trainhub.errors import BackendUnavailable
from trainhub.jobs.service import JobService

T = TypeVar("T")

DEFAULT_TIME_LIMIT_S = 60.0
# Beyond this many calls stuck at once, new calls are refused at once instead of piling up
# threads: something is badly wrong (a dead file system) and the server says so.
MAX_STUCK = 64


class CallTimedOut(BackendUnavailable):
    """A service call did not finish within the server's time limit."""


class _Work:
    __slots__ = ("fn", "future", "thread", "written_off")

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.future: Future[Any] = Future()
        self.thread: threading.Thread | None = None
        self.written_off = False


class Workers:
    """Daemon threads taking work from one queue; up to ``size`` of them, started as work
    comes. A thread whose work is written off (past its time limit) leaves the count, so
    another takes its place, and ends once that work returns, if ever; being a daemon it never
    holds the process at exit."""

    def __init__(self, size: int, name: str):
        self.size = size
        self.name = name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._live = 0  # threads that take work, written-off ones not counted
        self._waiting = 0  # threads waiting for work
        self._queued = 0  # work not taken yet
        self._stuck = 0  # written-off threads still in their call
        self._started = 0
        self._closed = False
        self._threads: set[threading.Thread] = set()  # those that take work

    @property
    def stuck(self) -> int:
        return self._stuck

    def submit(self, fn: Callable[[], Any]) -> _Work:
        work = _Work(fn)
        with self._lock:
            if self._closed:
                raise RuntimeError("the trainhub server is shutting down")
            self._queued += 1
            self._queue.put(work)
            self._start_if_short()
        return work

    def write_off(self, work: _Work) -> None:
        """Give up on ``work``: if it has not started it never will; if it runs, its thread
        no longer counts and another is started for the work waiting."""
        with self._lock:
            if work.future.done() or work.written_off:
                return
            work.written_off = True
            if work.future.running():
                self._live -= 1
                self._stuck += 1
                self._threads.discard(work.thread)  # not waited for at shutdown
                self._start_if_short()

    def shutdown(self, wait_s: float = 10.0) -> None:
        """Stop taking work; wait up to ``wait_s`` for the calls running (not the stuck ones),
        so that what they use (the store) is closed only after them."""
        with self._lock:
            self._closed = True
            for _ in range(self._live):
                self._queue.put(None)
            threads = list(self._threads)
        deadline = time.monotonic() + wait_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _start_if_short(self) -> None:
        if self._waiting < self._queued and self._live < self.size:
            self._live += 1
            self._started += 1
            name = f"{self.name}-{self._started}"
            thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._threads.add(thread)
            thread.start()

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _serve(self) -> None:
        while True:
            with self._lock:
                self._waiting += 1
            work = self._queue.get()
            with self._lock:
                self._waiting -= 1
                if work is None:
                    return
                self._queued -= 1
                if work.written_off or not work.future.set_running_or_notify_cancel():
                    continue
                work.thread = threading.current_thread()
            try:
                result = work.fn()
            except BaseException as e:
                work.future.set_exception(e)
            else:
                work.future.set_result(result)
            del work.fn
            with self._lock:
                if work.written_off:  # replaced meanwhile: this thread is one too many now
                    self._stuck -= 1
                    return


class ServiceCalls:
    def __init__(
        self,
        service: JobService,
        *,
        workers: int = 8,
        file_workers: int = 4,
        time_limit: float = DEFAULT_TIME_LIMIT_S,
    ):
        self.service = service
        self.time_limit = time_limit
        self._calls = Workers(workers, "trainhub-service")
        self._files = Workers(file_workers, "trainhub-files")

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` (a service or backend method) on a worker thread. A call given
        ``abandoned=`` (a ``threading.Event``) sees it set when its time runs out, so work not
        yet committed (a submit) stops there."""
        return await self._run(self._calls, fn, args, kwargs)

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a file read that does not touch the store."""
        return await self._run(self._files, fn, args, kwargs)

    async def _run(
        self, workers: Workers, fn: Callable[..., T], args: Any, kwargs: dict[str, Any]
    ) -> T:
        if workers.stuck >= MAX_STUCK:
            raise CallTimedOut(
                f"The trainhub server has {workers.stuck} requests stuck (a file system or the "
                "cluster does not answer); it takes no more until they end."
            )
        work = workers.submit(functools.partial(fn, *args, **kwargs))
        try:
            return await asyncio.wait_for(asyncio.wrap_future(work.future), self.time_limit)
        except TimeoutError:
            abandoned = kwargs.get("abandoned")
            if isinstance(abandoned, threading.Event):
                abandoned.set()
            workers.write_off(work)
            raise CallTimedOut(
                f"The request did not finish within {self.time_limit:g} seconds (a file of the "
                "job or the backend did not answer), so the server gave up on it; other "
                "requests go on. A submit stopped here makes no job unless it had already "
                "reached the backend: look at the job list before submitting again."
            ) from None
        except asyncio.CancelledError:
            workers.write_off(work)  # the request went away: nobody waits for the result
            raise

    def shutdown(self) -> None:
        self._calls.shutdown()
        self._files.shutdown()
