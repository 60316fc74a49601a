"""Checkpoints over REST: list, manifest, download, delete, fork from; no path escapes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

import trainhub.checkpoint as ckpt
from tests.server.conftest import insert_job
from trainhub.jobs.directory import JobDir
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


@pytest.fixture
def job_with_checkpoints(
    server_service: JobService, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    """A finished job with checkpoints at steps 10 and 20, written by the real library."""
    record = insert_job(server_service, state=JobState.SUCCEEDED, name="ckpt")
    jobdir = JobDir(record.job_dir)
    monkeypatch.delenv("TRAINHUB_JOB_DIR", raising=False)
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(jobdir.checkpoints))
    for step in (10, 20):
        ckpt.save({"w": torch.full((4,), float(step))}, step, metrics={"loss": 1.0 / step})
    return record.id, jobdir.root


async def test_list_and_manifest(api: Any, job_with_checkpoints: tuple[str, Path]) -> None:
    job_id, _ = job_with_checkpoints
    status, body, _ = await api("GET", "jobs", job_id, "checkpoints")
    assert status == 200
    assert [c["step"] for c in body["checkpoints"]] == [10, 20]
    assert body["checkpoints"][0]["metrics"] == {"loss": 0.1}
    status, info, _ = await api("GET", "jobs", job_id, "checkpoints", "20")
    assert status == 200
    assert info["step"] == 20 and [f["name"] for f in info["files"]] == ["state.pt"]
    assert info["bytes"] == info["files"][0]["bytes"] > 0
    status, error, _ = await api("GET", "jobs", job_id, "checkpoints", "30")
    assert status == 404 and "step 30" in error["message"]


async def test_download_is_an_attachment(api: Any, job_with_checkpoints: tuple[str, Path]) -> None:
    job_id, root = job_with_checkpoints
    status, data, headers = await api(
        "GET", "jobs", job_id, "checkpoints", "10", "files", "state.pt", raw=True
    )
    assert status == 200
    assert data == (root / "checkpoints" / "0000000010" / "state.pt").read_bytes()
    assert headers["Content-Disposition"] == "attachment; filename*=UTF-8''state.pt"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Type"] == "application/octet-stream"
    state = torch.load(__import__("io").BytesIO(data))
    assert torch.equal(state["w"], torch.full((4,), 10.0))
    status, error, _ = await api("GET", "jobs", job_id, "checkpoints", "10", "files", "nope.pt")
    assert status == 404 and "nope.pt" in error["message"]


async def test_file_names_cannot_escape_the_checkpoint(
    raw_fetch: Any, job_with_checkpoints: tuple[str, Path]
) -> None:
    job_id, root = job_with_checkpoints
    step_dir = root / "checkpoints" / "0000000010"
    os.symlink(root / "spec.json", step_dir / "leak.json")
    base = f"trainhub/api/jobs/{job_id}/checkpoints/10/files/"
    for name in (
        "..%2Fspec.json",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "leak.json",
        "%2E%2E",
    ):
        response = await raw_fetch(base + name)
        assert response.code == 400, (name, response.code, response.body)
        assert b'"user"' not in response.body and b"root:" not in response.body, name


async def test_delete(api: Any, job_with_checkpoints: tuple[str, Path]) -> None:
    job_id, root = job_with_checkpoints
    status, body, _ = await api("DELETE", "jobs", job_id, "checkpoints", "10")
    assert (status, body) == (204, b"")
    assert not (root / "checkpoints" / "0000000010").exists()
    _, listed, _ = await api("GET", "jobs", job_id, "checkpoints")
    assert [c["step"] for c in listed["checkpoints"]] == [20]
    status, _, _ = await api("DELETE", "jobs", job_id, "checkpoints", "10")
    assert status == 404


async def test_fork_from_a_checkpoint(api: Any, job_with_checkpoints: tuple[str, Path]) -> None:
    job_id, _ = job_with_checkpoints
    status, job, _ = await api(
        "POST",
        "jobs",
        job_id,
        "checkpoints",
        "10",
        "fork",
        body={"overrides": {"name": "forked"}},
    )
    assert status == 201, job
    assert job["spec"]["fork_from"] == {"job_id": job_id, "step": 10}
    assert job["name"] == "forked" and job["resubmitted_from"] == job_id
    assert job["origin"] == f"fork of {job_id} at step 10"
    status, error, _ = await api("POST", "jobs", job_id, "checkpoints", "99", "fork")
    assert status == 404 and "step 99" in error["message"]
    # The fork's older spelling, in scripts written before it had a word of its own.
    status, older, _ = await api("POST", "jobs", job_id, "checkpoints", "20", "resume")
    assert status == 201 and older["spec"]["fork_from"] == {"job_id": job_id, "step": 20}
    for forked in (job, older):
        await api("POST", "jobs", forked["id"], "cancel")
