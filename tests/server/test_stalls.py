"""No request stalls another user's: a job's FIFOs are refused at once; a submit stuck on a FIFO
in its notebook's git repository (git waits on it) ends with a 503 within the server's time
limit while another user lists jobs, reads logs and submits; a submit given up, by the time
limit or by its client going away, makes no job."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.auth.identity import User

from tests.server.conftest import (
    USER,
    FixedUserIdentity,
    finish_job,
    insert_job,
    spec,
    tiny_notebook,
)
from trainhub.jobs.directory import JobDir
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.service import JobService

BOB, BOB_TOKEN = "bob", "bob-token"
TIME_LIMIT_S = 5.0
ANSWER_S = 20  # generous: "answered meanwhile" means well before the stuck call's end
STUCK = "stuck/train.ipynb"  # in a git repository whose index is a FIFO
# The stuck submit's job name, which no other test of the session's shared home uses: its
# directory coming and going is what these tests watch.
STALLED = "stalled-submit"


class AliceAndBob(FixedUserIdentity):
    """The server's token is alice (as in every server test); ``token bob-token`` is bob."""

    async def get_user_token(self, handler: Any) -> User | None:
        if self.get_token(handler) == BOB_TOKEN:
            return User(username=BOB, name=BOB, display_name=BOB)
        return await super().get_user_token(handler)


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **jp_server_config,
        "ServerApp": {**jp_server_config["ServerApp"], "identity_provider_class": AliceAndBob},
        "TrainhubExtension": {
            **jp_server_config["TrainhubExtension"],
            "call_time_limit": TIME_LIMIT_S,
        },
    }


@pytest.fixture
def fifo(workspace: Path) -> Any:
    """A notebook in a git repository whose index is a FIFO nobody writes to: git, asked which
    files of the folder travel with the notebook, waits on it. Afterwards the FIFO is opened
    for writing and closed, so whatever still waits on it goes on."""
    folder = workspace / "stuck"
    folder.mkdir()
    nbformat.write(tiny_notebook(), folder / "train.ipynb")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    path = folder / ".git" / "index"
    os.mkfifo(path)
    yield path
    release(path, wait=0)


def release(path: Path, wait: float = 10) -> bool:
    """Let a reader waiting in open() on the FIFO go on (it reads end of file), then remove
    the FIFO so that no later reader waits; False when no reader came within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            path.unlink()
            return True
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                return False
        time.sleep(0.05)


@pytest.fixture
def bob(http_server_client: Any, jp_base_url: str, workspace: Path) -> Any:
    """``await bob("GET", "jobs")`` -> (status, JSON): requests as the second user."""
    (workspace / "bob").mkdir()
    nbformat.write(tiny_notebook(), workspace / "bob" / "tiny.ipynb")

    async def call(method: str, *parts: str, body: Any = None) -> tuple[int, Any]:
        response = await asyncio.wait_for(
            http_server_client.fetch(
                jp_base_url + "/".join(("trainhub", "api", *parts)),
                method=method,
                headers={"Authorization": f"token {BOB_TOKEN}"},
                body=None if method == "GET" else json.dumps(body or {}),
                raise_error=False,
            ),
            ANSWER_S,
        )
        return response.code, json.loads(response.body or b"null")

    return call


def alice_jobs(service: JobService, name: str) -> list[str]:
    return [
        r.id for r in service.backend.list_jobs(JobFilter(user=USER), limit=1000) if r.name == name
    ]


def job_dirs(service: JobService, name: str) -> list[Path]:
    return sorted(service.jobs_root.glob(f"{name}-*"))


async def bob_is_answered(bob: Any, service: JobService) -> None:
    """Bob lists his jobs, reads a log and submits a notebook, each answered in time."""
    theirs = insert_job(service, user=BOB, name="bobs")
    JobDir(theirs.job_dir).rank_log(0).write_text("bob's log\n")
    status, page = await bob("GET", "jobs")
    assert status == 200 and theirs.id in [j["id"] for j in page["jobs"]], page
    status, log = await bob("GET", "jobs", theirs.id, "logs", "0")
    assert (status, log["text"]) == (200, "bob's log\n"), log
    status, job = await bob("POST", "jobs", body=spec("bob/tiny.ipynb", name="bobs-run"))
    assert status == 201 and job["user"] == BOB, job
    status, _ = await bob("POST", "jobs", job["id"], "cancel")
    assert status == 200
    finish_job(service, theirs.id)


@pytest.mark.parametrize("planted", ["lineage.json", "logs/rank-0.log", "events.jsonl"])
async def test_a_fifo_in_a_job_is_refused_at_once(
    api: Any, bob: Any, server_service: JobService, planted: str
) -> None:
    record = insert_job(server_service, name="fifo")
    path = Path(record.job_dir) / planted
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    request = (
        ("jobs", record.id, "logs", "0") if planted.startswith("logs") else ("jobs", record.id)
    )
    started = time.monotonic()
    alice = asyncio.ensure_future(api("GET", *request))
    await bob_is_answered(bob, server_service)
    status, error, _ = await asyncio.wait_for(alice, ANSWER_S)
    assert status == 400 and f"{planted} is a FIFO" in error["message"], error
    assert time.monotonic() - started < ANSWER_S
    finish_job(server_service, record.id)


async def test_a_submit_stuck_on_a_fifo_ends_with_503_while_another_user_goes_on(
    api: Any, bob: Any, server_service: JobService, fifo: Path
) -> None:
    started = time.monotonic()
    alice = asyncio.ensure_future(api("POST", "jobs", body=spec(STUCK, name=STALLED)))
    await until(lambda: bool(job_dirs(server_service, STALLED)))  # alice's submit has begun
    await bob_is_answered(bob, server_service)
    status, error, _ = await asyncio.wait_for(alice, TIME_LIMIT_S + ANSWER_S)
    assert status == 503, error
    assert f"did not finish within {TIME_LIMIT_S:g} seconds" in error["message"], error
    assert time.monotonic() - started < TIME_LIMIT_S + ANSWER_S
    # Still stuck afterwards, the call is let go: it makes no job, and leaves no directory.
    assert release(fifo)
    await until(lambda: not job_dirs(server_service, STALLED))
    assert alice_jobs(server_service, STALLED) == []


async def test_a_submit_whose_client_went_away_makes_no_job(
    http_server_client: Any,  # the server listens
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    server_service: JobService,
    workspace: Path,
    fifo: Path,
) -> None:
    body = json.dumps(spec(STUCK, name=STALLED)).encode()
    head = (
        f"POST {jp_base_url}trainhub/api/jobs HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{jp_http_port}\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    _, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    writer.write(head + body)
    await writer.drain()
    await until(lambda: bool(job_dirs(server_service, STALLED)))  # the submit has begun
    writer.close()
    await writer.wait_closed()
    await asyncio.sleep(0.5)  # the server sees the connection close
    assert release(fifo)  # well within the time limit: only the client's going stops it
    await until(lambda: not job_dirs(server_service, STALLED))
    assert alice_jobs(server_service, STALLED) == []


async def test_the_same_submit_with_its_client_still_there_makes_the_job(
    api: Any, server_service: JobService, fifo: Path
) -> None:
    alice = asyncio.ensure_future(api("POST", "jobs", body=spec(STUCK, name=STALLED)))
    await until(lambda: bool(job_dirs(server_service, STALLED)))
    assert release(fifo)
    status, job, _ = await asyncio.wait_for(alice, ANSWER_S)
    assert status == 201, job
    assert alice_jobs(server_service, STALLED) == [job["id"]]
    status, _, _ = await api("POST", "jobs", job["id"], "cancel")
    assert status == 200


async def until(condition: Any, timeout: float = ANSWER_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)
