"""Log reads through the REST API and the websocket: whole characters with exact offsets, only
the job's own files, and an error naming the ranks a job has."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.fixtures.planted import plant
from tests.server.conftest import finish_job, insert_job
from trainhub.api import Job
from trainhub.errors import NotFound
from trainhub.jobs.directory import JobDir
from trainhub.jobs.service import JobService

TEXT = "é 日本 \U0001f600 ok\nnext é line\n日本\U0001f600 end"
DATA = TEXT.encode()


async def read_all(
    api: Any, job_id: str, offset: int, length: int | None = None
) -> tuple[str, int]:
    """Everything the REST API has from ``offset``, chunk after chunk."""
    text = ""
    while True:
        params = {"offset": str(offset), **({"length": str(length)} if length else {})}
        status, body, _ = await api("GET", "jobs", job_id, "logs", "0", params=params)
        assert status == 200, body
        assert body["offset"] == offset
        assert body["next_offset"] == offset + len(body["text"].encode())
        if not body["text"]:
            return text, offset
        text, offset = text + body["text"], body["next_offset"]


async def test_rest_reads_split_characters_whole_at_every_flush_position(
    api: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="utf8")
    log = JobDir(record.job_dir).rank_log(0)
    for cut in range(len(DATA) + 1):
        log.unlink(missing_ok=True)
        log.write_bytes(DATA[:cut])
        first, offset = await read_all(api, record.id, 0)
        with open(log, "ab") as f:
            f.write(DATA[cut:])
        rest, offset = await read_all(api, record.id, offset, length=[None, 1, 5][cut % 3])
        assert first + rest == TEXT, cut
        assert offset == len(DATA)
    finish_job(server_service, record.id)


async def test_the_stream_sends_split_characters_whole(
    jp_ws_fetch: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="utf8-stream")
    log = JobDir(record.job_dir).rank_log(0)
    ws = await jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "0", "stream")
    for i in range(len(DATA)):  # one byte per flush: every character arrives split
        with open(log, "ab") as f:
            f.write(DATA[i : i + 1])
        await asyncio.sleep(0.01)
    finish_job(server_service, record.id)
    text, next_offset = "", 0
    while True:
        message = json.loads(await asyncio.wait_for(ws.read_message(), 10))
        if message.get("type") == "end":
            break
        assert message["offset"] == next_offset
        text, next_offset = text + message["text"], message["next_offset"]
    assert text == TEXT and next_offset == len(DATA)


PLANTS = ["/etc/passwd", "/proc/self/environ", "fifo", "directory", "other job's logs"]


@pytest.mark.parametrize("what", PLANTS)
async def test_a_planted_rank_log_is_refused(
    api: Any, jp_ws_fetch: Any, server_service: JobService, what: str
) -> None:
    record = insert_job(server_service, name="planted")
    other = insert_job(server_service, name="other")
    job_dir = Path(record.job_dir)
    (job_dir / "logs").mkdir(exist_ok=True)
    if what == "other job's logs":  # the whole logs folder a link to the other job's
        (Path(other.job_dir) / "logs" / "rank-0.log").write_text("someone else's log\n")
        plant(job_dir, "logs", "theirs", Path(other.job_dir))
    else:
        plant(job_dir, "logs/rank-0.log", what, Path(other.job_dir))
    status, error, _ = await asyncio.wait_for(api("GET", "jobs", record.id, "logs", "0"), 10)
    assert status == 400, error
    assert "logs" in error["message"] and "trainhub reads only" in error["message"]
    assert "root:" not in json.dumps(error) and "someone else" not in json.dumps(error)
    with pytest.raises(HTTPClientError) as refused:
        await asyncio.wait_for(
            jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "0", "stream"), 10
        )
    assert refused.value.code == 400
    if what == "other job's logs":
        status, error, _ = await api("GET", "jobs", record.id, "logs")
        assert status == 400 and "logs is a symbolic link" in error["message"], error
    finish_job(server_service, record.id)
    finish_job(server_service, other.id)


async def test_a_rank_the_job_does_not_have_names_those_it_has(
    api: Any, jp_ws_fetch: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="one-rank")
    status, error, _ = await api("GET", "jobs", record.id, "logs", "5")
    assert status == 404 and error["message"] == (
        f"Job {record.id} has no rank 5; its only rank is 0."
    )
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "5", "stream")
    assert refused.value.code == 404
    status, body, _ = await api("GET", "jobs", record.id, "logs", "0")
    assert status == 200 and body == {"text": "", "offset": 0, "next_offset": 0}
    finish_job(server_service, record.id)


def test_the_python_api_reads_split_characters_whole(server_service: JobService) -> None:
    # The notebook API acts as the account running the kernel.
    record = insert_job(server_service, name="api-utf8", user=getpass.getuser())
    log = JobDir(record.job_dir).rank_log(0)
    log.write_bytes(DATA[:4])  # "é " and the first byte of "日"
    job = Job(record.id)
    assert list(job.iter_logs()) == ["é "]  # what is written whole so far
    with open(log, "ab") as f:
        f.write(DATA[4:])
    finish_job(server_service, record.id)
    assert list(job.iter_logs(follow=True)) == TEXT.split("\n")
    assert job.logs() == TEXT
    with pytest.raises(NotFound, match="has no rank 1; its only rank is 0"):
        job.logs(rank=1)


async def test_a_log_replaced_by_a_link_while_followed_ends_the_stream(
    jp_ws_fetch: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, name="swapped")
    log = JobDir(record.job_dir).rank_log(0)
    log.write_text("first\n")
    ws = await jp_ws_fetch("trainhub", "api", "jobs", record.id, "logs", "0", "stream")
    message = json.loads(await asyncio.wait_for(ws.read_message(), 10))
    assert message["text"] == "first\n"
    log.unlink()
    os.symlink("/etc/passwd", log)
    assert await asyncio.wait_for(ws.read_message(), 10) is None  # closed, nothing of the link
    assert ws.close_code == 1008 and "symbolic link" in ws.close_reason
    finish_job(server_service, record.id)
