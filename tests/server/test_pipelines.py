"""The pipeline routes on a real Jupyter server with the real local backend: start a run of a
workspace file, follow it to its end as the server's reconcile advances it, list its steps'
jobs by run; a pipeline with mistakes is a 400 naming each step and field, and nothing starts;
another user's run is not found; retry and cancel say when a run's state does not allow them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests.server.conftest import NOTEBOOK, OTHER, USER
from trainhub.jobs.service import JobService

TWO_STEPS = f"""\
parameters: {{lr: 0.5}}
steps:
  first:
    notebook: {NOTEBOOK}
    pipeline_parameters: [lr]
  second:
    notebook: {NOTEBOOK}
    depends_on: [first]
    parameters: {{epochs: 3}}
"""


async def until_ended(api: Any, service: JobService, run_id: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        await asyncio.to_thread(service.reconcile)  # what the server does every few seconds
        status, body, _ = await api("GET", "pipelines", "runs", run_id)
        assert status == 200, body
        if body["state"] != "running":
            return body
        assert time.monotonic() < deadline, body["step_views"]
        await asyncio.sleep(0.5)


async def test_a_run_starts_from_a_workspace_file_and_reads_back(
    api: Any, server_service: JobService, workspace: Path
) -> None:
    (workspace / "two.pipeline.yaml").write_text(TWO_STEPS)
    status, run, _ = await api(
        "POST", "pipelines", "runs", body={"file": "two.pipeline.yaml", "parameters": {"lr": 0.2}}
    )
    assert status == 201, run
    assert run["name"] == "two" and run["user"] == USER and run["parameters"] == {"lr": 0.2}
    first, second = run["step_views"]
    assert first["status"] == "active" and first["job_id"]
    assert second["status"] == "waiting" and second["depends_on"] == ["first"]

    status, page, _ = await api("GET", "jobs", params={"pipeline_run": run["id"]})
    assert status == 200 and [j["id"] for j in page["jobs"]] == [first["job_id"]]
    assert page["jobs"][0]["pipeline_run"] == run["id"] and page["total"] == 1
    status, job, _ = await api("GET", "jobs", first["job_id"])
    assert job["spec"]["parameters"] == {"lr": 0.2}

    done = await until_ended(api, server_service, run["id"])
    assert done["state"] == "succeeded" and done["succeeded"] == 2
    status, job, _ = await api("GET", "jobs", done["step_views"][1]["job_id"])
    assert job["spec"]["parameters"] == {"epochs": 3}
    assert job["spec"]["pipeline"] == {"run": run["id"], "step": "second", "name": "two"}

    status, listed, _ = await api("GET", "pipelines", "runs")
    assert status == 200 and run["id"] in [r["id"] for r in listed["runs"]]
    status, answer, _ = await api("POST", "pipelines", "runs", run["id"], "retry")
    assert status == 409 and "only a failed or cancelled run is retried" in answer["message"]
    status, answer, _ = await api("POST", "pipelines", "runs", run["id"], "cancel")
    assert status == 409 and "already ended (succeeded)" in answer["message"]
    # Run again with a parameter of one's own: the pipeline and the other parameters are the
    # run's; a private run that succeeded froze nothing any more, so the workspace's notebook runs.
    again = {"from_run": run["id"], "parameters": {"lr": 0.9}}
    status, answer, _ = await api("POST", "pipelines", "runs", body={**again, "file": "x.yaml"})
    assert status == 400 and "send no file or pipeline too" in answer["message"], answer
    status, rerun, _ = await api("POST", "pipelines", "runs", body=again)
    assert status == 201, rerun
    assert rerun["started_from"] == run["id"] and rerun["parameters"] == {"lr": 0.9}
    assert rerun["name"] == "two" and rerun["file"] == "two.pipeline.yaml"
    status, job, _ = await api("GET", "jobs", rerun["step_views"][0]["job_id"])
    assert job["spec"]["parameters"] == {"lr": 0.9}
    status, _, _ = await api("POST", "pipelines", "runs", rerun["id"], "cancel")
    assert status == 200
    status, answer, _ = await api("POST", "pipelines", "runs", body={"from_run": "none-123456"})
    assert status == 404, answer
    # The local backend keeps one user's jobs: nothing to share with a team.
    status, answer, _ = await api("PATCH", "pipelines", "runs", run["id"], body={"shared": "team"})
    assert status == 409, answer


async def test_mistakes_are_a_400_naming_each_step_and_field(
    api: Any, server_service: JobService
) -> None:
    pipeline = {
        "name": "broken",
        "steps": {
            "a": {"notebook": "missing.ipynb", "outputs": ["data"], "depends_on": ["c"]},
            "b": {"notebook": NOTEBOOK, "inputs": {"model": "a.model"}},
            "c": {"notebook": NOTEBOOK, "depends_on": ["b"]},
        },
    }
    for route in (("pipelines", "runs"), ("pipelines", "check")):
        status, answer, _ = await api("POST", *route, body={"pipeline": pipeline})
        assert status == 400, answer
        fields = {e["field"]: e["message"] for e in answer["errors"]}
        assert fields["steps.a.notebook"] == "no such file: missing.ipynb"
        assert fields["steps.b.inputs.model"] == "step 'a' has no output 'model'; it declares data"
        cycle = next(m for f, m in fields.items() if f.endswith(".depends_on"))
        assert cycle.startswith("a cycle: ")
    status, answer, _ = await api(
        "POST", "pipelines", "runs", body={"pipeline": {"steps": {"x": {"notebook": 3}}}}
    )
    assert status == 400 and {e["field"] for e in answer["errors"]} == {"steps.x.notebook"}
    status, answer, _ = await api("POST", "pipelines", "runs", body={"file": "nowhere.yaml"})
    assert status == 400 and answer["errors"] == [
        {"field": "file", "message": "no such file: nowhere.yaml"}
    ]
    status, listed, _ = await api("GET", "pipelines", "runs")
    assert "broken" not in [r["name"] for r in listed["runs"]]  # nothing started

    status, checked, _ = await api(
        "POST",
        "pipelines",
        "check",
        body={"pipeline": {"name": "ok", "steps": {"only": {"notebook": NOTEBOOK}}}},
    )
    assert status == 200 and list(checked["steps"]) == ["only"]


async def test_another_users_run_is_not_found(api: Any, server_service: JobService) -> None:
    pipeline = {"name": "theirs", "steps": {"only": {"notebook": NOTEBOOK}}}
    theirs = await asyncio.to_thread(server_service.pipelines.start, user=OTHER, pipeline=pipeline)
    for method, parts in (
        ("GET", ("pipelines", "runs", theirs.id)),
        ("POST", ("pipelines", "runs", theirs.id, "retry")),
        ("POST", ("pipelines", "runs", theirs.id, "cancel")),
    ):
        status, answer, _ = await api(method, *parts)
        assert status == 404 and answer["message"] == f"No pipeline run {theirs.id}."
    status, listed, _ = await api("GET", "pipelines", "runs")
    assert theirs.id not in [r["id"] for r in listed["runs"]]
    await until_ended(api_as_owner(server_service), server_service, theirs.id)


def api_as_owner(service: JobService) -> Any:
    """Reads of a run as its owner, through the service (the test's server user is another)."""

    async def call(method: str, *parts: str, **_: Any) -> tuple[int, Any, Any]:
        run = await asyncio.to_thread(service.pipelines.describe, parts[-1], user=OTHER)
        return 200, run.model_dump(mode="json"), {}

    return call
