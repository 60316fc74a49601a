"""One watcher serves every jobs/stream connection: one snapshot per user per tick, and a slow
connection holds at most one pending summary per job."""

from __future__ import annotations

import asyncio

from trainhub.jobs.models import JobSummary
from trainhub.jobs.states import JobState
from trainhub_server.watch import JobsWatcher


def summary(job_id: str, state: JobState, seq: int) -> JobSummary:
    return JobSummary(
        id=job_id,
        name=job_id,
        user="ada",
        state=state,
        priority="normal",
        gpus=0,
        world_size=1,
        created_at=1700000000.0 + seq,
        source="a.ipynb",
        seq=seq,
    )


async def test_one_snapshot_per_user_and_tick_whatever_the_connections():
    calls: list[str] = []
    step = {"n": 0}

    async def snapshot(user: str, watched: set[str]) -> dict[str, JobSummary]:
        calls.append(user)
        state = JobState.RUNNING if step["n"] < 3 else JobState.SUCCEEDED
        return {f"{user}-1": summary(f"{user}-1", state, 1)}

    watcher = JobsWatcher(snapshot, interval=0.02)
    subs = [watcher.subscribe("ada" if i % 2 else "bob") for i in range(200)]
    first = await asyncio.gather(*(s.next() for s in subs))
    assert all(len(batch) == 1 for batch in first)
    assert {batch[0].id for batch in first} == {"ada-1", "bob-1"}
    ticks_before = len(calls)
    await asyncio.sleep(0.2)
    ticks = len(calls) - ticks_before
    assert ticks >= 4 and calls.count("ada") == calls.count("bob"), (
        calls
    )  # per user, not per connection
    assert len(calls) < 200, "one snapshot per connection"
    step["n"] = 3
    changed = await asyncio.wait_for(subs[0].next(), 2)
    assert [j.state for j in changed] == [JobState.SUCCEEDED]
    for s in subs:
        watcher.unsubscribe(s)
    watcher.stop()


async def test_a_slow_connection_holds_one_summary_per_job():
    step = {"n": 0}

    async def snapshot(user: str, watched: set[str]) -> dict[str, JobSummary]:
        step["n"] += 1  # every job changes on every tick
        return {f"j{i}": summary(f"j{i}", JobState.RUNNING, step["n"]) for i in range(10)}

    watcher = JobsWatcher(snapshot, interval=0.01)
    slow = watcher.subscribe("ada")
    await asyncio.sleep(0.3)  # many ticks, nobody reads
    assert step["n"] > 10 and len(slow.pending) == 10
    batch = await slow.next()
    assert len(batch) == 10 and all(j.seq == batch[0].seq for j in batch)
    watcher.unsubscribe(slow)
    watcher.stop()
