"""Open in TensorBoard: the server starts TensorBoard over a job's real event files and proxies
it to the session's user only; another user's private job is refused, and TensorBoard stops
when unused and ends with the server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
from torch.utils.tensorboard import SummaryWriter

from tests.server.conftest import OTHER, insert_job
from trainhub.jobs.directory import JobDir
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


def write_events(service: JobService, job_id: str) -> None:
    """What a job's SummaryWriter leaves in its outputs."""
    outputs = JobDir(service.record(job_id).job_dir).outputs
    with SummaryWriter(str(outputs / "runs" / "train")) as writer:
        for step in range(5):
            writer.add_scalar("loss", 1.0 / (step + 1), step)


async def test_tensorboard_serves_a_jobs_scalars_and_ends_with_the_server(
    jp_fetch: Any, jp_serverapp: Any, server_service: JobService
) -> None:
    job = insert_job(server_service, state=JobState.SUCCEEDED, name="tb")
    write_events(server_service, job.id)

    async def fetch(*parts: str, **kwargs: Any) -> Any:
        return await jp_fetch("trainhub", *parts, raise_error=False, **kwargs)

    async def open_board(*ids: str) -> Any:
        return await fetch("tensorboard", method="POST", body=json.dumps({"ids": list(ids)}))

    opened = await open_board(job.id)
    assert opened.code == 200, opened.body
    answer = json.loads(opened.body)
    assert answer["runs"] == [job.id]
    url = answer["url"]
    assert url.endswith("/") and "/trainhub/tensorboard/" in url
    board_id = url.rstrip("/").rsplit("/", 1)[1]

    page = await fetch(f"tensorboard/{board_id}/")
    assert page.code == 200 and b"<title>TensorBoard</title>" in page.body, page.body[:300]
    tags = json.loads((await fetch("tensorboard", board_id, "data/plugin/scalars/tags")).body)
    run = f"{job.id}/outputs/runs/train"
    assert tags == {run: {"loss": {"displayName": "loss", "description": ""}}}
    scalars = await fetch(
        "tensorboard", board_id, "data/plugin/scalars/scalars", params={"run": run, "tag": "loss"}
    )
    assert [(step, round(value, 4)) for _, step, value in json.loads(scalars.body)] == [
        (step, round(1.0 / (step + 1), 4)) for step in range(5)
    ]
    # The same jobs again: the same TensorBoard.
    again = await open_board(job.id)
    assert json.loads(again.body)["url"] == url

    # Another user's private job is not found; an unknown board neither.
    private = insert_job(server_service, user=OTHER, state=JobState.SUCCEEDED, name="private")
    refused = await open_board(private.id)
    assert refused.code == 404, refused.body
    assert (await open_board(job.id, private.id)).code == 404
    assert (await fetch("tensorboard/0123456789abcdef/")).code == 404
    bad = await fetch("tensorboard", method="POST", body=json.dumps({"ids": "x"}))
    assert bad.code == 400 and "ids" in bad.body.decode()

    extension = jp_serverapp.extension_manager.extension_points["trainhub"].app
    boards = extension.tensorboards
    (board,) = boards.boards.values()
    assert not board.scratch.exists()  # its flags are gone once it listens
    # Unused past the idle timeout: stopped; the next "Open" starts it again, at a new URL.
    idle = psutil.Process(board.process.pid)
    boards.reap(now=board.last_used + boards.idle_seconds + 1)
    assert not boards.boards and not idle.is_running()
    assert (await fetch(f"tensorboard/{board_id}/")).code == 404
    reopened = json.loads((await open_board(job.id)).body)["url"]
    assert reopened != url and (await fetch(reopened.split("/trainhub/", 1)[1])).code == 200

    (board,) = boards.boards.values()
    process = psutil.Process(board.process.pid)
    assert process.is_running() and board.owner == "alice"
    await extension.stop_extension()
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    assert not board.scratch.exists() and not extension.tensorboards.boards


def test_tensorboard_dies_with_a_killed_server(tmp_path: Path) -> None:
    """Even a server killed outright leaves no TensorBoard behind."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\n"
            "from trainhub.metrics.tensorboard_processes import TensorBoards\n"
            f"board = TensorBoards().open('alice', {{'job': Path({str(tmp_path)!r})}})\n"
            "print(board.process.pid, board.scratch, flush=True)\ntime.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    pid, scratch = server.stdout.readline().split()  # type: ignore[union-attr]
    try:
        board = psutil.Process(int(pid))
        assert board.is_running()
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(scratch, ignore_errors=True)  # a killed server cannot clear it
    gone, _ = psutil.wait_procs([board], timeout=10)
    assert gone == [board]
