"""The sweep routes on a real Jupyter server with the real local backend: start, read, list,
filter the jobs list by sweep, cancel; bad input names the field; another user's sweep is
not found."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.server.conftest import NOTEBOOK, OTHER, SLEEPER, USER, spec, wait_state
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


def sweep_body(path: str = NOTEBOOK, **sweep: Any) -> dict[str, Any]:
    return {
        "job": spec(path),
        "sweep": {"space": {"lr": {"kind": "list", "values": [0.1, 0.2]}}, **sweep},
    }


async def until(
    api: Any, service: JobService, sweep_id: str, done: Any, timeout: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        await asyncio.to_thread(service.reconcile)  # what the server does every few seconds
        status, body, _ = await api("GET", "sweeps", sweep_id)
        assert status == 200, body
        if done(body):
            return body
        assert time.monotonic() < deadline, (body["trial_views"], body["submitted"])
        await asyncio.sleep(0.5)


async def test_a_sweep_runs_its_trials_one_at_a_time_and_reads_back(
    api: Any, server_service: JobService
) -> None:
    status, created, _ = await api("POST", "sweeps", body=sweep_body(max_running=1, metric="loss"))
    assert status == 201, created
    sweep_id = created["id"]
    assert created["trials"] == 2 and created["submitted"] == 1 and created["user"] == USER
    first = created["trial_views"][0]
    assert first["parameters"] == {"lr": 0.1} and first["job_id"]

    status, page, _ = await api("GET", "jobs", params={"sweep": sweep_id})
    assert status == 200 and [j["id"] for j in page["jobs"]] == [first["job_id"]]
    assert page["jobs"][0]["sweep_id"] == sweep_id and page["total"] == 1

    # The server's periodic reconcile submits the second trial once the first has ended.
    done = await until(api, server_service, sweep_id, lambda s: s["state"] == "finished")
    views = done["trial_views"]
    assert [v["state"] for v in views] == ["succeeded", "succeeded"]
    assert [v["parameters"]["lr"] for v in views] == [0.1, 0.2]
    assert views[0]["scalars"]["loss"]["last"] == 1.5 and done["best_trial"] == 0
    status, job, _ = await api("GET", "jobs", views[1]["job_id"])
    assert job["spec"]["sweep"] == {"id": sweep_id, "trial": 1} and job["sweep_id"] == sweep_id
    assert job["spec"]["parameters"]["lr"] == 0.2

    status, listed, _ = await api("GET", "sweeps")
    assert status == 200 and sweep_id in [s["id"] for s in listed["sweeps"]]


async def test_bad_sweeps_are_refused_naming_the_field(api: Any) -> None:
    bad_range = sweep_body()
    bad_range["sweep"]["space"]["lr"] = {"kind": "range", "start": 1, "stop": 0, "step": 1}
    status, body, _ = await api("POST", "sweeps", body=bad_range)
    assert status == 400
    assert body["errors"] == [
        {"field": "sweep.space.lr.range", "message": "stop must be at least start"}
    ]

    status, body, _ = await api("POST", "sweeps", body=sweep_body(max_running=0, sampler="x"))
    assert status == 400
    assert {e["field"] for e in body["errors"]} == {"sweep.max_running", "sweep.sampler"}

    # A parameter the notebook's parameters cell does not assign: refused before any job
    unknown = sweep_body()
    unknown["sweep"]["space"] = {"momentum": {"kind": "list", "values": [0.9]}}
    status, body, _ = await api("POST", "sweeps", body=unknown)
    assert status == 400 and "momentum" in body["message"]
    status, listed, _ = await api("GET", "sweeps")
    assert not any(s["name"] == "tiny" and s["submitted"] == 0 for s in listed["sweeps"])


async def test_a_range_whose_count_overflows_a_float_is_a_400_naming_it(api: Any) -> None:
    for overflowing in (
        {"kind": "range", "start": 1e-300, "stop": 1e300, "step": 1.5, "scale": "log"},
        {"kind": "range", "start": -1e308, "stop": 1e308, "step": 1},
        {"kind": "range", "start": 0, "stop": 1, "step": 1e-320},
    ):
        body = sweep_body()
        body["sweep"]["space"]["lr"] = overflowing
        status, answer, _ = await api("POST", "sweeps", body=body)
        assert status == 400, (overflowing, answer)
        assert answer["errors"] == [
            {
                "field": "sweep.space.lr.range",
                "message": "gives more than 1000 values; at most 1000",
            }
        ]


async def test_numbers_past_a_float_are_a_400_naming_the_dimension(api: Any) -> None:
    huge = 10**400  # a JSON integer: too large for a float
    for dimension, says in (
        ({"kind": "range", "start": 0, "stop": huge, "step": 1}, "stop: 1000000000000000000"),
        ({"kind": "uniform", "low": -huge, "high": 1}, "low: -100000000000000000"),
        ({"kind": "uniform", "low": -1e308, "high": 1e308}, "high - low is past the largest"),
    ):
        body = sweep_body()
        body["sweep"]["space"]["lr"] = dimension
        status, answer, _ = await api("POST", "sweeps", body=body)
        assert status == 400, (dimension, answer)
        (error,) = answer["errors"]
        assert error["field"].startswith("sweep.space.lr."), error
        assert says in error["message"], error


async def test_cancelling_a_sweep_cancels_its_trials(api: Any, server_service: JobService) -> None:
    body = sweep_body(SLEEPER, max_running=2)
    body["job"]["allow_new_parameters"] = True
    body["sweep"]["space"]["lr"]["values"] = [1, 2, 3]
    status, created, _ = await api("POST", "sweeps", body=body)
    assert status == 201, created
    sweep_id = created["id"]
    job_ids = [t["job_id"] for t in created["trial_views"]]
    assert len(job_ids) == 2
    wait_state(server_service, job_ids[0], {JobState.RUNNING})

    status, cancelled, _ = await api(
        "POST", "sweeps", sweep_id, "cancel", body={"reason": "enough"}
    )
    assert status == 200 and cancelled["state"] == "cancelled"
    for job_id in job_ids:
        record = await asyncio.to_thread(wait_state, server_service, job_id, {JobState.CANCELLED})
        assert record.verdict is not None and record.verdict.reason == "enough"
    await asyncio.to_thread(server_service.reconcile)  # nothing more is submitted
    status, after, _ = await api("GET", "sweeps", sweep_id)
    assert after["submitted"] == 2 and after["state"] == "cancelled"


async def test_another_users_sweep_is_not_found(api: Any, server_service: JobService) -> None:
    body = sweep_body(SLEEPER)
    body["job"]["allow_new_parameters"] = True
    theirs = await asyncio.to_thread(server_service.create_sweep, body, user=OTHER)
    try:
        for method, parts in (
            ("GET", ("sweeps", theirs.id)),
            ("POST", ("sweeps", theirs.id, "cancel")),
        ):
            status, answer, _ = await api(method, *parts)
            assert status == 404 and answer["message"] == f"No sweep {theirs.id}."
        status, listed, _ = await api("GET", "sweeps")
        assert theirs.id not in [s["id"] for s in listed["sweeps"]]
        status, page, _ = await api("GET", "jobs", params={"sweep": theirs.id})
        assert page["jobs"] == [] and page["total"] == 0
    finally:
        await asyncio.to_thread(server_service.cancel_sweep, theirs.id, user=OTHER)
