"""The schedule routes on a real Jupyter server with the real local backend: create, list,
describe, pause, resume, run now (a real job), delete; bad input names the field; another
user's schedule is not found; a change starts the local scheduler, which leaves once no
schedule is left."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.local.conftest import wait_for
from tests.server.conftest import NOTEBOOK, OTHER, spec, wait_state
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState
from trainhub.schedules import local


def schedule_body(**fields: Any) -> dict[str, Any]:
    return {
        "name": "nightly",
        "target": {"kind": "notebook", "job": spec(NOTEBOOK)},
        "cron": "0 2 * * *",
        "timezone": "Europe/Berlin",
        **fields,
    }


async def test_a_schedule_is_created_read_paused_run_now_and_deleted(
    api: Any, server_service: JobService, trainhub_home: Path
) -> None:
    status, created, _ = await api("POST", "schedules", body=schedule_body(concurrency="replace"))
    assert status == 201, created
    sid = created["id"]
    try:
        assert created["concurrency"] == "replace" and created["cron_text"] == "At 02:00 every day"
        assert created["next_at_local"].endswith(("T02:00:00+01:00", "T02:00:00+02:00"))
        # The change started this data directory's scheduler.
        await asyncio.to_thread(wait_for, lambda: local.running(trainhub_home), 20, "the scheduler")

        status, listed, _ = await api("GET", "schedules")
        assert status == 200 and sid in [s["id"] for s in listed["schedules"]]
        status, paused, _ = await api("POST", "schedules", sid, "pause")
        assert status == 200 and paused["paused"] and paused["next_at"] is None
        status, resumed, _ = await api("POST", "schedules", sid, "resume")
        assert status == 200 and not resumed["paused"] and resumed["next_at"]

        status, ran, _ = await api("POST", "schedules", sid, "run-now")
        assert status == 200, ran
        run = ran["runs"][0]
        assert run["at"] is None and run["state"] == "submitted"
        record = await asyncio.to_thread(
            wait_state, server_service, run["job_id"], {JobState.SUCCEEDED, JobState.FAILED}
        )
        assert record.state == JobState.SUCCEEDED
        assert f"schedule:{sid}@n" in " ".join(record.spec.tags)
        status, described, _ = await api("GET", "schedules", sid)
        assert status == 200 and described["runs"][0]["outcome"] == "succeeded"
    finally:
        status, _, _ = await api("DELETE", "schedules", sid)
    assert status == 204
    status, _, _ = await api("GET", "schedules", sid)
    assert status == 404
    # No schedule left: the scheduler ends on its own.
    await asyncio.to_thread(
        wait_for, lambda: not local.running(trainhub_home), 20, "the scheduler to leave"
    )


async def test_bad_schedules_are_refused_naming_the_field(api: Any) -> None:
    body = schedule_body(cron="0 25 * * *", timezone="Europe/Atlantis", missed="later")
    status, answer, _ = await api("POST", "schedules", body=body)
    assert status == 400
    fields = {e["field"]: e["message"] for e in answer["errors"]}
    assert set(fields) == {"cron", "timezone", "missed"}, fields
    assert "Europe/Atlantis" in fields["timezone"]

    status, answer, _ = await api("POST", "schedules", body=schedule_body(target={"kind": "x"}))
    assert status == 400 and answer["errors"][0]["field"] == "target.kind"
    # The target is checked as a submit would check it: a notebook that is not there.
    missing = schedule_body(target={"kind": "notebook", "job": spec("absent.ipynb")})
    status, answer, _ = await api("POST", "schedules", body=missing)
    assert status in (400, 404) and "absent.ipynb" in answer["message"]
    status, listed, _ = await api("GET", "schedules")
    assert listed["schedules"] == []


async def test_another_users_schedule_is_not_found(
    api: Any, server_service: JobService, trainhub_home: Path
) -> None:
    theirs = server_service.schedules.create(schedule_body(), user=OTHER)
    try:
        for method, parts in (
            ("GET", ()),
            ("POST", ("pause",)),
            ("POST", ("run-now",)),
            ("DELETE", ()),
        ):
            status, _, _ = await api(method, "schedules", theirs.id, *parts)
            assert status == 404, (method, parts)
    finally:
        server_service.schedules.delete(theirs.id, user=OTHER)
    await asyncio.to_thread(
        wait_for, lambda: not local.running(trainhub_home), 20, "the scheduler to leave"
    )


async def test_a_pipeline_schedule_is_checked_and_runs_now_as_a_pipeline_run(
    api: Any, server_service: JobService, workspace: Path
) -> None:
    from tests.server.test_pipelines import TWO_STEPS, until_ended

    (workspace / "two.pipeline.yaml").write_text(TWO_STEPS)
    target = {"kind": "pipeline", "file": "two.pipeline.yaml", "parameters": {"nope": 1}}
    status, answer, _ = await api("POST", "schedules", body=schedule_body(target=target))
    assert status == 400 and answer["errors"][0]["field"] == "target.pipeline.parameters.nope"
    target = {"kind": "pipeline", "file": "two.pipeline.yaml", "parameters": {"lr": 0.2}}
    status, created, _ = await api("POST", "schedules", body=schedule_body(target=target))
    assert status == 201, created
    sid = created["id"]
    try:
        assert created["target"] == {**target, "cache": True}
        status, ran, _ = await api("POST", "schedules", sid, "run-now")
        assert status == 200, ran
        run = ran["runs"][0]
        assert run["state"] == "submitted" and run["job_id"] is None and run["pipeline_run"]
        done = await until_ended(api, server_service, run["pipeline_run"])
        assert done["state"] == "succeeded" and done["parameters"] == {"lr": 0.2}
        status, described, _ = await api("GET", "schedules", sid)
        assert described["runs"][0]["outcome"] == "succeeded"
    finally:
        await api("DELETE", "schedules", sid)
