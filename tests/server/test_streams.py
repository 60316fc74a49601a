"""Websockets: logs resumed from an offset lose no line; events, metrics and the job list."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.server.conftest import OTHER, finish_job, insert_job
from trainhub.jobs.directory import JobDir, append_jsonl
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


def append_lines(path: Any, start: int, stop: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.writelines(f"line {i}\n" for i in range(start, stop))


async def receive(ws: Any, timeout: float = 10) -> dict[str, Any] | None:
    message = await asyncio.wait_for(ws.read_message(), timeout)
    return None if message is None else json.loads(message)


async def test_log_stream_resumes_from_offset_without_loss(
    jp_ws_fetch: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="streamer")
    log = JobDir(record.job_dir).rank_log(0)
    append_lines(log, 0, 500)

    text, next_offset = "", 0
    ws = await jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "0", "stream")
    while text.count("\n") < 500:
        message = await receive(ws)
        assert message is not None and message["offset"] == next_offset
        text += message["text"]
        next_offset = message["next_offset"]
    ws.close()

    # Written while nobody listens, and a partial line finished after the reconnect.
    append_lines(log, 500, 800)
    with open(log, "a") as f:
        f.write("line 800 begins")
    ws = await jp_ws_fetch(
        "trainhub",
        "api",
        "jobs",
        record.id,
        "logs",
        "0",
        "stream",
        params={"offset": str(next_offset)},
    )
    with open(log, "a") as f:
        f.write(" and ends\n")
    append_lines(log, 801, 1000)
    finish_job(server_service, record.id)
    while True:
        message = await receive(ws)
        assert message is not None
        if message.get("type") == "end":
            break
        assert message["offset"] == next_offset
        text += message["text"]
        next_offset = message["next_offset"]
    expected = [f"line {i}" for i in range(1000)]
    expected[800] = "line 800 begins and ends"
    assert text.splitlines() == expected
    assert next_offset == log.stat().st_size
    assert await receive(ws) is None  # closed after the end


async def test_log_stream_coalesces_fast_writes(
    jp_ws_fetch: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="fast")
    log = JobDir(record.job_dir).rank_log(0)
    ws = await jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "0", "stream")
    for start in range(0, 2000, 100):  # 2,000 lines in ~0.2 s
        append_lines(log, start, start + 100)
        await asyncio.sleep(0.01)
    finish_job(server_service, record.id)
    messages, lines = 0, 0
    while (message := await receive(ws)) and message.get("type") != "end":
        messages += 1
        lines += message["text"].count("\n")
    assert lines == 2000
    assert messages < 100  # one message per tick, not one per line


async def test_events_and_metrics_streams(jp_ws_fetch: Any, server_service: JobService) -> None:
    record = insert_job(server_service, name="evented")
    jobdir = JobDir(record.job_dir)
    _, offset = jobdir.read_events()
    jobdir.emit("cell", rank=0, cell_index=1, phase="start")
    ws = await jp_ws_fetch(
        "trainhub", "api", "jobs", record.id, "events", "stream", params={"offset": str(offset)}
    )
    message = await receive(ws)
    assert [e["type"] for e in message["events"]] == ["cell"]
    assert message["next_offset"] == jobdir.events.stat().st_size

    scalars = jobdir.metrics / "scalars.jsonl"
    append_jsonl(
        scalars, {"time": 1.0, "step": 0, "name": "loss", "value": 2.0, "rank": 0, "attempt": 0}
    )
    metrics = await jp_ws_fetch(
        "trainhub", "api", "jobs", record.id, "metrics", "scalars", "stream"
    )
    message = await receive(metrics)
    assert [r["value"] for r in message["records"]] == [2.0]
    append_jsonl(
        scalars, {"time": 2.0, "step": 1, "name": "loss", "value": 1.0, "rank": 0, "attempt": 0}
    )
    message = await receive(metrics)
    assert [r["step"] for r in message["records"]] == [1]

    jobdir.emit("state", state="succeeded")
    finish_job(server_service, record.id)
    message = await receive(ws)
    assert (message["events"][-1]["type"], message["events"][-1]["state"]) == ("state", "succeeded")
    assert await receive(ws) == {"type": "end"}
    assert await receive(metrics) == {"type": "end"}


async def test_jobs_stream_pushes_changes(jp_ws_fetch: Any, server_service: JobService) -> None:
    mine = insert_job(server_service, name="watched")
    theirs = insert_job(server_service, user=OTHER, name="unwatched")
    ws = await jp_ws_fetch("trainhub", "api", "jobs", "stream")
    seen: dict[str, dict[str, Any]] = {}
    while mine.id not in seen:
        message = await receive(ws)
        assert message["type"] == "job"
        seen[message["job"]["id"]] = message["job"]
    assert seen[mine.id]["state"] == "running"
    finish_job(server_service, mine.id, JobState.FAILED)
    while True:
        message = await receive(ws)
        assert message["job"]["id"] != theirs.id
        if message["job"]["id"] == mine.id:
            break
    assert message["job"]["state"] == "failed"
    finish_job(server_service, theirs.id)


@pytest.mark.parametrize(
    "route", [("logs", "0", "stream"), ("events", "stream"), ("metrics", "gpu", "stream")]
)
async def test_streams_of_another_users_job_are_refused(
    jp_ws_fetch: Any, server_service: JobService, route: tuple[str, ...]
) -> None:
    theirs = insert_job(server_service, user=OTHER, name="private")
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("trainhub", "api", "jobs", theirs.id, *route)
    assert refused.value.code == 404
    finish_job(server_service, theirs.id)
