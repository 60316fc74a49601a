"""Submitting, listing, describing, cancelling and resubmitting jobs over REST."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from tests.server.conftest import (
    OTHER,
    SLEEPER,
    USER,
    finish_job,
    insert_job,
    spec,
    wait_state,
)
from trainhub.bundle.layout import REQUIREMENTS
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


async def wait_for_state(
    api: Any, job_id: str, states: set[str], timeout: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, job, _ = await api("GET", "jobs", job_id)
        assert status == 200, job
        if job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"{job_id} still {job['state']}"
        await asyncio.sleep(0.3)


async def test_create_from_notebook_runs_and_reads_back(api: Any) -> None:
    status, job, _ = await api("POST", "jobs", body=spec(parameters={"lr": 0.25}))
    assert status == 201, job
    assert job["user"] == USER and job["source"] == "tiny.ipynb"
    assert job["spec"]["parameters"] == {"lr": 0.25}
    job = await wait_for_state(api, job["id"], {"succeeded", "failed"})
    assert job["state"] == "succeeded", job["verdict"]
    assert [e["state"] for e in job["timeline"] if e["type"] == "state"][-1] == "succeeded"

    status, body, _ = await api("GET", "jobs", job["id"], "logs")
    assert (status, body) == (200, {"ranks": [0]})
    status, log, _ = await api("GET", "jobs", job["id"], "logs", "0")
    assert status == 200 and "hello from the job 0.25" in log["text"]
    assert log["offset"] == 0 and log["next_offset"] == len(log["text"].encode())

    status, scalars, _ = await api("GET", "jobs", job["id"], "metrics", "scalars")
    assert status == 200
    assert [(r["step"], r["name"], r["value"]) for r in scalars["records"]] == [(0, "loss", 1.5)]


async def test_validation_errors_name_the_field(api: Any) -> None:
    cases = [
        (spec(resources={"gpus_per_worker": -1}), "resources.gpus_per_worker"),
        (spec(name="Not A Name"), "name"),
        (spec("missing.ipynb"), "source.path"),
        (
            spec(source={"path": "tiny.ipynb", "cells": {"mode": "indices", "indices": [9]}}),
            "source",
        ),
        (spec(unknown=1), "unknown"),
        (spec(resources={"workers": "3:2"}), "resources.min_workers"),  # elastic: MIN > MAX
    ]
    for body, field in cases:
        status, error, _ = await api("POST", "jobs", body=body)
        assert status == 400, (body, error)
        assert field in [e["field"] for e in error["errors"]], error
        assert all(e["message"] for e in error["errors"])
    status, error, _ = await api("POST", "jobs", body="{not json")
    assert status == 400 and error["errors"][0]["field"] == "body"
    status, error, _ = await api("GET", "jobs", params={"state": "sleeping"})
    assert status == 400 and error["errors"][0]["field"] == "state"
    status, error, _ = await api("GET", "jobs", params={"limit": "0"})
    assert status == 400 and error["errors"][0]["field"] == "limit"


async def test_dry_run_validates_without_creating(api: Any) -> None:
    _, before, _ = await api("GET", "jobs")
    status, body, _ = await api("POST", "jobs", body=spec(), params={"dry_run": "1"})
    assert (status, body) == (200, {"valid": True, "warnings": []})
    status, body, _ = await api(
        "POST",
        "jobs",
        params={"dry_run": "1"},
        body=spec(source={"path": "tiny.ipynb", "cells": {"mode": "indices", "indices": [0]}}),
    )
    assert status == 400 and "markdown cell" in body["message"]
    status, body, _ = await api(
        "POST",
        "jobs",
        params={"dry_run": "1"},
        body=spec(resources={"workers": 64, "processes_per_worker": 1}),
    )
    assert status == 403 and body["message"]
    status, body, _ = await api(  # an elastic job whose MAX the machine could never hold
        "POST", "jobs", params={"dry_run": "1"}, body=spec(resources={"workers": "1:64"})
    )
    assert status == 400 and body["errors"][0]["field"] == "resources.workers", body
    _, after, _ = await api("GET", "jobs")
    assert after["total"] == before["total"]


async def test_list_pages_and_filters(api: Any, server_service: JobService) -> None:
    ids = [
        insert_job(server_service, state=JobState.SUCCEEDED, name=f"page{i}").id for i in range(5)
    ]
    failed = insert_job(server_service, state=JobState.FAILED, name="failedone").id
    insert_job(server_service, user=OTHER, state=JobState.SUCCEEDED, name="notmine")

    status, page, _ = await api("GET", "jobs", params={"limit": "2"})
    assert status == 200
    assert [j["id"] for j in page["jobs"]] == [failed, ids[4]]
    assert page["next_before"] == page["jobs"][-1]["seq"]
    _, page2, _ = await api(
        "GET", "jobs", params={"limit": "2", "before": str(page["next_before"])}
    )
    assert [j["id"] for j in page2["jobs"]] == [ids[3], ids[2]]
    assert page2["total"] == page["total"]
    assert all(j["user"] == USER for j in page["jobs"] + page2["jobs"])

    _, only_failed, _ = await api("GET", "jobs", params={"state": "failed"})
    assert failed in [j["id"] for j in only_failed["jobs"]]
    assert {j["state"] for j in only_failed["jobs"]} == {"failed"}
    assert only_failed["total"] == len(only_failed["jobs"])


async def test_a_list_is_sent_with_its_etag_and_changes_with_its_jobs(
    api: Any, jp_fetch: Any, server_service: JobService
) -> None:
    job_id = insert_job(server_service, state=JobState.SUCCEEDED, name="etagged").id
    _, first, headers = await api("GET", "jobs", raw=True)
    assert headers["Etag"] == f'"{hashlib.sha1(first).hexdigest()}"'
    _, again, headers_again = await api("GET", "jobs", raw=True)
    assert (again, headers_again["Etag"]) == (first, headers["Etag"])
    unchanged = await jp_fetch(
        "trainhub", "api", "jobs", headers={"If-None-Match": headers["Etag"]}, raise_error=False
    )
    assert unchanged.code == 304 and not unchanged.body

    status, _, _ = await api("PATCH", "jobs", job_id, body={"note": "seen"})
    assert status == 200
    _, edited, headers_edited = await api("GET", "jobs", raw=True)
    assert headers_edited["Etag"] != headers["Etag"]
    assert json.loads(edited)["jobs"][0]["note"] == "seen"


async def test_queued_job_explains_its_wait_and_cancels(
    api: Any, server_service: JobService
) -> None:
    status, sleeper, _ = await api("POST", "jobs", body=spec(SLEEPER))
    assert status == 201
    await wait_for_state(api, sleeper["id"], {"running"})
    # Two slots, one taken by the sleeper: a job asking for both must wait.
    status, big, _ = await api("POST", "jobs", body=spec(resources={"processes_per_worker": 2}))
    assert status == 201, big
    status, big, _ = await api("GET", "jobs", big["id"])
    assert big["state"] == "queued"
    assert big["wait_reason"] and big["position"] == 0

    _, queued, _ = await api("GET", "jobs", params={"state": "queued"})
    assert [j["id"] for j in queued["jobs"]] == [big["id"]]

    status, big, _ = await api(
        "POST", "jobs", big["id"], "cancel", body={"reason": "changed my mind"}
    )
    assert status == 200 and big["state"] == "cancelled"
    assert big["verdict"]["reason"] == "changed my mind"
    status, again, _ = await api("POST", "jobs", big["id"], "cancel")
    assert status == 409 and "already cancelled" in again["message"]

    status, _, _ = await api("POST", "jobs", sleeper["id"], "cancel")
    assert status == 200
    record = await asyncio.to_thread(
        wait_state, server_service, sleeper["id"], {JobState.CANCELLED, JobState.FAILED}, 60
    )
    assert record.state == JobState.CANCELLED


async def test_suspend_and_resume_a_running_job(api: Any) -> None:
    status, job, _ = await api("POST", "jobs", body=spec(SLEEPER))
    assert status == 201
    await wait_for_state(api, job["id"], {"running"})
    status, error, _ = await api("POST", "jobs", job["id"], "resume")
    assert status == 409 and "not suspended" in error["message"]

    status, asked, _ = await api("POST", "jobs", job["id"], "suspend", body={"reason": "lunch"})
    assert status == 200 and asked["id"] == job["id"], asked
    suspended = await wait_for_state(api, job["id"], {"suspended", "failed", "cancelled"}, 60)
    assert suspended["state"] == "suspended" and suspended["suspended_step"] is None
    _, listed, _ = await api("GET", "jobs", params={"state": "suspended"})
    assert [j["id"] for j in listed["jobs"]] == [job["id"]]
    status, error, _ = await api("POST", "jobs", job["id"], "suspend")
    assert status == 409 and "already suspended" in error["message"]

    status, resumed, _ = await api("POST", "jobs", job["id"], "resume")
    assert status == 200 and resumed["id"] == job["id"] and resumed["attempt"] == 1, resumed
    await wait_for_state(api, job["id"], {"running"})
    await api("POST", "jobs", job["id"], "suspend")
    await wait_for_state(api, job["id"], {"suspended"}, 60)
    # A suspended job runs nothing: a cancel ends it on the spot.
    status, cancelled, _ = await api("POST", "jobs", job["id"], "cancel")
    assert status == 200 and cancelled["state"] == "cancelled", cancelled


async def test_resubmit_with_overrides(api: Any, finished_job: str) -> None:
    status, job, _ = await api(
        "POST", "jobs", finished_job, "resubmit", body={"overrides": {"parameters": {"lr": 0.5}}}
    )
    assert status == 201, job
    assert job["id"] != finished_job and job["resubmitted_from"] == finished_job
    assert job["spec"]["parameters"] == {"lr": 0.5}
    status, error, _ = await api(
        "POST", "jobs", finished_job, "resubmit", body={"overrides": {"resources": {"workers": 0}}}
    )
    assert status == 400 and error["errors"][0]["field"] == "resources.workers"
    status, error, _ = await api("POST", "jobs", finished_job, "resubmit", body={"overrides": [1]})
    assert status == 400 and error["errors"][0]["field"] == "overrides"
    await api("POST", "jobs", job["id"], "cancel")


async def test_events_range_read(api: Any, finished_job: str) -> None:
    status, first, _ = await api("GET", "jobs", finished_job, "events", params={"limit": "2"})
    assert status == 200 and len(first["events"]) == 2
    assert first["events"][0]["type"] == "submitted"
    _, rest, _ = await api(
        "GET", "jobs", finished_job, "events", params={"offset": str(first["next_offset"])}
    )
    _, whole, _ = await api("GET", "jobs", finished_job, "events")
    assert first["events"] + rest["events"] == whole["events"]
    assert rest["next_offset"] == whole["next_offset"]
    cells = [e for e in whole["events"] if e["type"] == "cell" and e["phase"] == "end"]
    assert [e["cell_index"] for e in cells] == [1, 2]


async def test_log_range_read(api: Any, finished_job: str) -> None:
    _, whole, _ = await api("GET", "jobs", finished_job, "logs", "0")
    first_line = whole["text"].split("\n", 1)[0] + "\n"
    _, head, _ = await api(
        "GET",
        "jobs",
        finished_job,
        "logs",
        "0",
        params={"length": str(len(first_line.encode()) + 3)},
    )
    assert head["text"] == first_line  # cut back to the line boundary
    _, tail, _ = await api(
        "GET", "jobs", finished_job, "logs", "0", params={"offset": str(head["next_offset"])}
    )
    assert head["text"] + tail["text"] == whole["text"]
    # A rank the job does not have is an error naming those it has (an absent log of a rank
    # it has reads empty: tests/server/test_logs.py).
    status, missing, _ = await api("GET", "jobs", finished_job, "logs", "7")
    assert status == 404 and missing["message"].endswith("has no rank 7; its only rank is 0.")
    status, error, _ = await api("GET", "jobs", finished_job, "logs", "0", params={"offset": "-1"})
    assert status == 400 and error["errors"][0]["field"] == "offset"
    status, error, _ = await api("GET", "jobs", finished_job, "metrics", "bogus")
    assert status == 400 and error["errors"][0]["field"] == "kind"


async def test_another_users_job_is_not_found(api: Any, session_service: JobService) -> None:
    theirs = session_service.submit(spec(), user=OTHER).id
    reads = [
        ("GET", (theirs,)),
        ("GET", (theirs, "events")),
        ("GET", (theirs, "logs")),
        ("GET", (theirs, "logs", "0")),
        ("GET", (theirs, "metrics", "scalars")),
        ("GET", (theirs, "checkpoints")),
        ("GET", (theirs, "checkpoints", "1")),
        ("DELETE", (theirs, "checkpoints", "1")),
        ("POST", (theirs, "cancel")),
        ("POST", (theirs, "suspend")),
        ("POST", (theirs, "resume")),
        ("POST", (theirs, "resubmit")),
        ("POST", (theirs, "checkpoints", "1", "fork")),
        ("POST", (theirs, "checkpoints", "1", "resume")),
        ("GET", (theirs, "checkpoints", "1", "files", "state.pt")),
    ]
    for method, parts in reads:
        status, body, _ = await api(method, "jobs", *parts)
        assert status == 404, (method, parts, body)
        assert body["message"] == f"No job {theirs}."
    _, page, _ = await api("GET", "jobs", params={"limit": "500"})
    assert theirs not in [j["id"] for j in page["jobs"]]
    assert session_service.record(theirs).user == OTHER
    session_service.cancel(theirs, user=OTHER)


async def test_unknown_job_is_not_found(api: Any) -> None:
    status, body, _ = await api("GET", "jobs", "no-such-job")
    assert (status, body) == (404, {"message": "No job no-such-job."})


async def test_an_admitted_job_says_what_it_does_before_its_ranks_run(
    api: Any, server_service: JobService
) -> None:
    starting = insert_job(server_service, name="starting", state=JobState.STARTING)
    status, body, _ = await api("GET", "jobs", starting.id)
    assert status == 200 and body["state"] == "starting"
    assert body["wait_reason"] == "starting its ranks"
    (Path(starting.job_dir) / "bundle").mkdir(exist_ok=True)
    (Path(starting.job_dir) / "bundle" / REQUIREMENTS).write_text(
        json.dumps([{"cell_index": 0, "line": 1, "source": "%pip install tqdm", "argv": ["tqdm"]}])
    )
    _, page, _ = await api("GET", "jobs", params={"state": "starting"})
    (listed,) = [j for j in page["jobs"] if j["id"] == starting.id]
    assert listed["wait_reason"] == (
        "installing the packages its %pip lines ask for; its ranks start next"
    )
    finish_job(server_service, starting.id, JobState.CANCELLED)
