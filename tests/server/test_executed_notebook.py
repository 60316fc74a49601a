"""GET jobs/{id}/notebook and jobs/{id}/notebook/html on a real job that ran a figure, HTML and a
failing cell; another user's job answers 404; a link, FIFO or directory planted as
notebook.ipynb answers 400 naming it, and nothing behind it is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.fixtures.planted import plant
from tests.server.conftest import OTHER, USER, finish_job, insert_job, spec, wait_state
from tests.server.test_confinement import SECRET, TARGETS, call, refused
from tests.server.test_confinement import jobs as jobs
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState

NOTEBOOK = "executed.ipynb"
CELLS = [
    new_markdown_cell("# Executed"),
    new_code_cell("print('hello from the job')"),
    new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])"),
    new_code_cell(
        "from IPython.display import HTML, display\n"
        "display(HTML('<b>kept</b><script>window.hijacked = 1</script>'))"
    ),
    new_code_cell("raise RuntimeError('the failing cell')"),
]


@pytest.fixture(scope="module")
def executed_job(session_service: JobService) -> tuple[str, Path]:
    nbformat.write(new_notebook(cells=CELLS), session_service.workspace_root / NOTEBOOK)
    described = session_service.submit(spec(NOTEBOOK), user=USER)
    record = wait_state(session_service, described.id, {JobState.SUCCEEDED, JobState.FAILED})
    assert record.state == JobState.FAILED, record.verdict
    return described.id, Path(record.job_dir)


async def test_the_executed_notebook_as_json(api: Any, executed_job: tuple[str, Path]) -> None:
    job_id, job_dir = executed_job
    status, body, _ = await api("GET", "jobs", job_id, "notebook")
    assert status == 200, body
    assert body == json.loads((job_dir / "notebook.ipynb").read_text())
    nbformat.validate(nbformat.from_dict(body))
    markdown, *cells = body["cells"]  # the notebook as written, markdown too
    assert markdown["cell_type"] == "markdown" and markdown["source"] == "# Executed"
    assert [c["metadata"]["trainhub"]["cell_index"] for c in cells] == [1, 2, 3, 4]
    assert cells[0]["outputs"][0]["text"] == "hello from the job\n"
    assert any("image/png" in o.get("data", {}) for o in cells[1]["outputs"])
    (error,) = cells[3]["outputs"]
    assert (error["ename"], error["evalue"]) == ("RuntimeError", "the failing cell")
    assert body["metadata"]["trainhub"]["state"] == "failed"

    status, body, _ = await api("GET", "jobs", job_id, "notebook", params={"rank": "1"})
    assert status == 404 and "has no rank 1; its only rank is 0" in body["message"], body
    status, body, _ = await api("GET", "jobs", job_id, "notebook", params={"rank": "one"})
    assert status == 400 and body["errors"][0]["field"] == "rank", body


async def test_the_executed_notebook_as_an_html_download(
    api: Any, executed_job: tuple[str, Path]
) -> None:
    job_id, _ = executed_job
    status, body, headers = await api("GET", "jobs", job_id, "notebook", "html", raw=True)
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/html")
    assert headers["Content-Disposition"] == f"attachment; filename*=UTF-8''{job_id}.html"
    assert headers["X-Content-Type-Options"] == "nosniff"
    page = body.decode()
    assert "hello from the job" in page and "data:image/png;base64," in page
    assert "RuntimeError" in page and "the failing cell" in page
    # The job's HTML is sanitized: its markup stays, its script is only text.
    assert "<b>kept</b>&lt;script&gt;window.hijacked" in page
    assert "<script>window.hijacked" not in page
    # Opened from disk, the page loads nothing from elsewhere and runs no script at all.
    assert "<script" not in page.lower() and "cdnjs" not in page
    assert "script-src 'none'" in page


async def test_another_users_notebook_answers_404(api: Any, server_service: JobService) -> None:
    theirs = insert_job(server_service, user=OTHER, name="theirs", state=JobState.SUCCEEDED)
    (Path(theirs.job_dir) / "notebook.ipynb").write_text(
        json.dumps({"cells": [{"source": SECRET}], "metadata": {}, "nbformat": 4})
    )
    for parts in (("notebook",), ("notebook", "html")):
        status, body, _ = await api("GET", "jobs", theirs.id, *parts, raw=True)
        assert status == 404 and SECRET.encode() not in body, body
    finish_job(server_service, theirs.id)


async def test_a_job_that_has_not_started_says_so(api: Any, server_service: JobService) -> None:
    queued = insert_job(server_service, name="waiting", state=JobState.QUEUED)
    status, body, _ = await api("GET", "jobs", queued.id, "notebook")
    assert status == 404, body
    assert body["message"] == (
        f"Job {queued.id} has not started; its executed notebook appears as it runs."
    )
    finish_job(server_service, queued.id, JobState.CANCELLED)


@pytest.mark.parametrize("what", TARGETS)
async def test_a_planted_notebook_is_refused(api: Any, jobs: Any, what: str) -> None:
    ours, theirs, _ = jobs
    (Path(theirs.job_dir) / "notebook.ipynb").write_text(json.dumps({"secret": SECRET}))
    plant(Path(ours.job_dir), "notebook.ipynb", what, Path(theirs.job_dir))
    refused(*(await call(api, "GET", "jobs", ours.id, "notebook"))[:2], "notebook.ipynb")
    status, body, _ = await call(api, "GET", "jobs", ours.id, "notebook", "html")
    refused(status, body, "notebook.ipynb")
