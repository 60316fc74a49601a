"""A job can replace any of its files by a link, a FIFO or a directory: describe, events,
metrics, logs and checkpoints, over REST and websockets, refuse each with a 400 naming the file,
never send what the link points to, never wait on the FIFO, and never change another user's
job directory."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from tornado.httpclient import HTTPClientError

import trainhub.checkpoint as ckpt
from tests.fixtures.planted import plant
from tests.server.conftest import OTHER, finish_job, insert_job
from trainhub.jobs.directory import JobDir, append_jsonl
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState

SECRET = "theirs-secret"  # in every file of the other user's job
ANSWER_S = 10  # "never a hang": every refusal comes well within this


def fill(jobdir: JobDir, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lineage, events, metrics, a log and a checkpoint, each holding SECRET."""
    (jobdir.lineage).write_text(json.dumps({"user": OTHER, "note": SECRET}))
    jobdir.emit("submitted", user=OTHER, note=SECRET)
    append_jsonl(jobdir.metrics / "scalars.jsonl", {"step": 0, "name": SECRET, "value": 1.0})
    jobdir.rank_log(0).write_text(f"{SECRET} log\n")
    monkeypatch.delenv("TRAINHUB_JOB_DIR", raising=False)
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(jobdir.checkpoints))
    ckpt.save({"w": torch.zeros(2)}, 1, metrics={"loss": 1.0})


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: its bytes and modification time."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return files


@pytest.fixture
def jobs(server_service: JobService, monkeypatch: pytest.MonkeyPatch) -> Any:
    """(our job's record, the other user's record, snapshot of the other user's directory)."""
    ours = insert_job(server_service, name="planted")
    theirs = insert_job(server_service, user=OTHER, name="theirs", state=JobState.SUCCEEDED)
    fill(JobDir(theirs.job_dir), monkeypatch)
    before = snapshot(Path(theirs.job_dir))
    assert any(SECRET.encode() in data for data, _ in before.values())
    yield ours, theirs, before
    finish_job(server_service, ours.id)
    finish_job(server_service, theirs.id)


def refused(status: int, body: Any, name: str) -> None:
    text = json.dumps(body)
    assert status == 400, body
    assert f"{name} is " in body["message"] and "trainhub reads only" in body["message"], body
    assert SECRET not in text and "root:" not in text and "PATH=" not in text, body


async def ws_refused(jp_ws_fetch: Any, *parts: str) -> None:
    with pytest.raises(HTTPClientError) as refusal:
        await asyncio.wait_for(jp_ws_fetch("trainhub", "api", "jobs", *parts), ANSWER_S)
    assert refusal.value.code == 400


async def call(api: Any, *args: Any, **kwargs: Any) -> tuple[int, Any, Any]:
    return await asyncio.wait_for(api(*args, **kwargs), ANSWER_S)


TARGETS = ["/etc/passwd", "/proc/self/environ", "theirs", "fifo", "directory"]


@pytest.mark.parametrize("what", TARGETS)
async def test_planted_events_are_refused(api: Any, jp_ws_fetch: Any, jobs: Any, what: str) -> None:
    ours, theirs, before = jobs
    plant(Path(ours.job_dir), "events.jsonl", what, Path(theirs.job_dir))
    refused(*(await call(api, "GET", "jobs", ours.id))[:2], "events.jsonl")
    refused(*(await call(api, "GET", "jobs", ours.id, "events"))[:2], "events.jsonl")
    await ws_refused(jp_ws_fetch, ours.id, "events", "stream")
    # Cancelling appends an event: it goes nowhere but the job's own regular file.
    status, body, _ = await call(api, "POST", "jobs", ours.id, "cancel")
    assert status == 200 and SECRET not in json.dumps(body), body
    assert snapshot(Path(theirs.job_dir)) == before


@pytest.mark.parametrize("what", TARGETS)
async def test_planted_lineage_is_refused(api: Any, jobs: Any, what: str) -> None:
    ours, theirs, before = jobs
    plant(Path(ours.job_dir), "lineage.json", what, Path(theirs.job_dir))
    refused(*(await call(api, "GET", "jobs", ours.id))[:2], "lineage.json")
    assert snapshot(Path(theirs.job_dir)) == before


@pytest.mark.parametrize("what", TARGETS)
async def test_planted_metrics_file_is_refused(
    api: Any, jp_ws_fetch: Any, jobs: Any, what: str
) -> None:
    ours, theirs, before = jobs
    plant(Path(ours.job_dir), "metrics/scalars.jsonl", what, Path(theirs.job_dir))
    status, body, _ = await call(api, "GET", "jobs", ours.id, "metrics", "scalars")
    refused(status, body, "metrics/scalars.jsonl")
    await ws_refused(jp_ws_fetch, ours.id, "metrics", "scalars", "stream")
    status, body, _ = await call(api, "GET", "jobs", ours.id, "metrics", "gpu")
    assert (status, body) == (200, {"records": [], "next_offset": 0})  # the others still read
    assert snapshot(Path(theirs.job_dir)) == before


async def test_whole_folders_swapped_for_another_users_are_refused(
    api: Any, jp_ws_fetch: Any, jobs: Any
) -> None:
    ours, theirs, before = jobs
    job_dir = Path(ours.job_dir)
    for folder in ("logs", "metrics", "checkpoints"):
        plant(job_dir, folder, "theirs", Path(theirs.job_dir))

    status, body, _ = await call(api, "GET", "jobs", ours.id, "metrics", "scalars")
    refused(status, body, "metrics")
    await ws_refused(jp_ws_fetch, ours.id, "metrics", "gpu", "stream")

    refused(*(await call(api, "GET", "jobs", ours.id, "logs", "0"))[:2], "logs")
    refused(*(await call(api, "GET", "jobs", ours.id, "logs"))[:2], "logs")
    await ws_refused(jp_ws_fetch, ours.id, "logs", "0", "stream")

    for request in (
        ("GET", "jobs", ours.id, "checkpoints"),
        ("GET", "jobs", ours.id, "checkpoints", "1"),
        ("GET", "jobs", ours.id, "checkpoints", "1", "files", "state.pt"),
        ("DELETE", "jobs", ours.id, "checkpoints", "1"),
        ("POST", "jobs", ours.id, "checkpoints", "1", "fork"),
    ):
        status, body, _ = await call(api, *request, raw=True)
        assert status == 400, (request, status, body)
        assert b"checkpoints is a symbolic link" in body, (request, body)
        assert SECRET.encode() not in body and not body.startswith(b"PK"), request

    # Describe reads neither folder: it still answers, with the job's own lineage and events.
    status, body, _ = await call(api, "GET", "jobs", ours.id)
    assert status == 200 and SECRET not in json.dumps(body)
    assert snapshot(Path(theirs.job_dir)) == before
    assert (Path(theirs.job_dir) / "checkpoints" / "0000000001" / "state.pt").is_file()


async def test_the_job_directory_itself_swapped_is_refused(
    api: Any, server_service: JobService, jobs: Any
) -> None:
    ours, theirs, before = jobs
    job_dir = Path(ours.job_dir)
    shutil.rmtree(job_dir)
    os.symlink(theirs.job_dir, job_dir)
    for request in (("GET", "jobs", ours.id), ("GET", "jobs", ours.id, "events")):
        status, body, _ = await call(api, *request)
        assert status == 400 and "the job directory is a symbolic link" in body["message"], body
        assert SECRET not in json.dumps(body)
    status, body, _ = await call(api, "POST", "jobs", ours.id, "cancel")
    assert status == 200, body
    assert snapshot(Path(theirs.job_dir)) == before
    os.unlink(job_dir)


async def test_the_job_list_is_unaffected(api: Any, server_service: JobService, jobs: Any) -> None:
    ours, theirs, _ = jobs
    for name in ("events.jsonl", "lineage.json"):
        plant(Path(ours.job_dir), name, "fifo", Path(theirs.job_dir))
    status, body, _ = await call(api, "GET", "jobs")
    assert status == 200 and ours.id in [j["id"] for j in body["jobs"]]
    other = insert_job(server_service, name="unaffected", state=JobState.SUCCEEDED)
    status, body, _ = await call(api, "GET", "jobs", other.id)
    assert status == 200 and body["id"] == other.id
