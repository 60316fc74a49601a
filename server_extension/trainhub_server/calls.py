"""Running job-service calls off the event loop.

The local backend's store keeps one SQLite connection with explicit transactions, which two
threads must never interleave, so every service call runs on one dedicated thread, in order.
Plain reads of a job directory (log tails) need no store and run on a small separate pool,
so a slow submit never holds up a live log.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from trainhub.jobs.service import JobService

T = TypeVar("T")


class ServiceCalls:
    def __init__(self, service: JobService, file_workers: int = 4):
        self.service = service
        self._serial = ThreadPoolExecutor(1, thread_name_prefix="trainhub-service")
        self._files = ThreadPoolExecutor(file_workers, thread_name_prefix="trainhub-files")

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` (a service or backend method) on the service thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._serial, functools.partial(fn, *args, **kwargs))

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a file read that does not touch the store."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._files, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        self._serial.shutdown(wait=True, cancel_futures=True)
        self._files.shutdown(wait=True, cancel_futures=True)
