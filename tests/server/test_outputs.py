"""Job outputs over REST: a real job's files listed (tree, sizes, times) and downloaded as an
attachment; links, '..' and absolute paths refused without a byte of what they point at;
another user's job answers 404."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.server.conftest import OTHER, insert_job, spec, wait_state
from trainhub.jobs.directory import JobDir
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState

WRITER = new_notebook(
    cells=[
        new_code_cell(
            "import json, trainhub\n"
            "out = trainhub.outputs.path()\n"
            "(out / 'eval').mkdir()\n"
            "(out / 'eval' / 'results.json').write_text(json.dumps({'accuracy': 0.93}))\n"
            "(out / 'model card.md').write_text('# a model\\n')\n"
        )
    ]
)


async def test_a_real_jobs_outputs_are_listed_and_downloaded(
    api: Any, workspace: Path, server_service: JobService, raw_fetch: Any
) -> None:
    nbformat.write(WRITER, workspace / "writer.ipynb")
    status, job, _ = await api("POST", "jobs", body=spec("writer.ipynb"))
    assert status == 201, job
    record = wait_state(server_service, job["id"], {JobState.SUCCEEDED, JobState.FAILED})
    assert record.state == JobState.SUCCEEDED, JobDir(record.job_dir).read_log(0)[0]

    status, listing, _ = await api("GET", "jobs", job["id"], "outputs")
    assert status == 200
    assert [(e["path"], e["kind"]) for e in listing["entries"]] == [
        ("eval", "dir"),
        ("eval/results.json", "file"),
        ("model card.md", "file"),
    ]
    results = len(json.dumps({"accuracy": 0.93}))
    assert [e["bytes"] for e in listing["entries"]] == [results, results, len("# a model\n")]
    assert listing["files"] == 2 and listing["truncated"] is False

    status, data, headers = await api(
        "GET", "jobs", job["id"], "outputs", "file", params={"path": "eval/results.json"}, raw=True
    )
    assert status == 200 and json.loads(data) == {"accuracy": 0.93}
    assert headers["Content-Disposition"] == "attachment; filename*=UTF-8''results.json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Type"] == "application/octet-stream"
    status, data, headers = await api(
        "GET", "jobs", job["id"], "outputs", "file", params={"path": "model card.md"}, raw=True
    )
    assert status == 200 and data == b"# a model\n"
    assert headers["Content-Disposition"] == "attachment; filename*=UTF-8''model%20card.md"

    # The job (its code can) plants links: to the server's files, to its own directory.
    outputs = Path(record.job_dir) / "outputs"
    os.symlink("/etc/passwd", outputs / "passwd")
    os.symlink(record.job_dir, outputs / "up")
    os.symlink(outputs / "eval" / "results.json", outputs / "eval" / "again.json")
    os.mkfifo(outputs / "pipe")
    _, listing, _ = await api("GET", "jobs", job["id"], "outputs")
    assert [e["path"] for e in listing["entries"]] == [
        "eval",
        "eval/results.json",
        "model card.md",
    ]
    base = f"trainhub/api/jobs/{job['id']}/outputs/file?path="
    for path in (
        "passwd",
        "up%2Fspec.json",
        "eval%2Fagain.json",
        "pipe",
        "..%2Fspec.json",
        "eval%2F..%2F..%2Fspec.json",
        "%2Fetc%2Fpasswd",
        "eval",
        "",
    ):
        response = await raw_fetch(base + path)
        assert response.code == 400, (path, response.code, response.body)
        assert b"root:" not in response.body and b'"user"' not in response.body, path
        assert b"accuracy" not in response.body, path
    response = await raw_fetch(base + "nothing.txt")
    assert response.code == 404


async def test_outputs_of_another_users_job_are_not_found(
    api: Any, server_service: JobService
) -> None:
    theirs = insert_job(server_service, user=OTHER, state=JobState.SUCCEEDED, name="theirs")
    (Path(theirs.job_dir) / "outputs" / "secret.txt").write_text("theirs")
    for parts, params in (
        (("outputs",), None),
        (("outputs", "file"), {"path": "secret.txt"}),
    ):
        status, body, _ = await api("GET", "jobs", theirs.id, *parts, params=params)
        assert status == 404 and body == {"message": f"No job {theirs.id}."}
