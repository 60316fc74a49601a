"""Service calls run side by side on real threads; one stuck past its time limit ends with an
error, gives up what it had not committed, and its thread is replaced."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from trainhub.errors import BackendUnavailable
from trainhub_server.calls import CallTimedOut, ServiceCalls, Workers


def stuck_until(release: threading.Event, *, abandoned: threading.Event | None = None) -> str:
    release.wait(60)
    return "abandoned" if abandoned is not None and abandoned.is_set() else "done"


async def test_a_stuck_call_ends_with_an_error_and_holds_up_no_other() -> None:
    calls = ServiceCalls(None, workers=1, file_workers=1, time_limit=2)  # type: ignore[arg-type]
    release, abandoned = threading.Event(), threading.Event()
    try:
        stuck = asyncio.ensure_future(calls.call(stuck_until, release, abandoned=abandoned))
        await asyncio.sleep(1)
        # The only worker is taken: this call waits for the stuck one to be written off, then
        # a fresh thread answers it within its own time.
        other = await asyncio.wait_for(calls.call(lambda: "answered"), 10)
        assert other == "answered"
        with pytest.raises(CallTimedOut, match=r"did not finish within 2 seconds") as error:
            await asyncio.wait_for(stuck, 10)
        assert isinstance(error.value, BackendUnavailable)  # the server answers 503
        assert abandoned.is_set()  # what the stuck call had not committed, it gives up
        assert calls._calls.stuck == 1
        assert await asyncio.wait_for(calls.call(lambda: 7), 10) == 7
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while calls._calls.stuck and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert calls._calls.stuck == 0  # the stuck thread ended once its call returned
    calls.shutdown()


async def test_calls_run_side_by_side() -> None:
    calls = ServiceCalls(None, workers=4, time_limit=10)  # type: ignore[arg-type]
    barrier = threading.Barrier(4, timeout=5)  # passes only if four calls run at once
    results = await asyncio.gather(*(calls.call(barrier.wait) for _ in range(4)))
    assert sorted(results) == [0, 1, 2, 3]
    calls.shutdown()


def test_errors_reach_the_caller_and_threads_are_reused() -> None:
    workers = Workers(2, "test")
    futures = [workers.submit(lambda i=i: 1 / i).future for i in range(5)]
    with pytest.raises(ZeroDivisionError):
        futures[0].result(10)
    assert [f.result(10) for f in futures[1:]] == [1.0, 0.5, 1 / 3, 0.25]
    assert workers._started <= 2
    workers.shutdown()
