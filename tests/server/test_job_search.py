"""The jobs list found by search and filters, tags and notes changed after submission (PATCH),
the latest value of a chosen scalar per job, and the names of jobs run again — over REST on a
real server and the real local store."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tests.server.conftest import OTHER, USER, new_job_dir, spec, store_job
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.directory import JobDir, append_jsonl
from trainhub.jobs.models import JobRecord
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState


def ended_job(
    service: JobService,
    name: str,
    *,
    user: str = USER,
    parameters: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    state: JobState = JobState.SUCCEEDED,
) -> JobRecord:
    """An ended job in the store, with a job directory and no processes."""
    jobdir = new_job_dir(service, name)
    job_spec = parse_spec(spec(name=name, parameters=parameters or {}, tags=tags or []))
    write_json = {**job_spec.model_dump(mode="json"), "id": jobdir.root.name, "user": user}
    (jobdir.root / "spec.json").write_text(json.dumps(write_json))
    return store_job(
        service,
        jobdir,
        name=name,
        user=user,
        state=state,
        spec=job_spec,
        created_at=time.time(),
        finished_at=time.time(),
        tags=job_spec.tags,
    )


def unique() -> str:
    return f"s{os.urandom(3).hex()}"


async def found(api: Any, **params: str) -> tuple[list[str], int]:
    status, page, _ = await api("GET", "jobs", params={"limit": "500", **params})
    assert status == 200, page
    return [j["name"] for j in page["jobs"]], page["total"]


async def test_search_by_name_tag_and_parameter_value(api: Any, server_service: JobService) -> None:
    word = unique()
    ended_job(server_service, f"{word}-lr", parameters={"lr": 0.001, "optimizer": "adam"})
    ended_job(server_service, f"{word}-sgd", parameters={"lr": 0.1, "optimizer": "sgd"})
    tagged = ended_job(server_service, f"other-{unique()}", tags=[f"{word}-tag"]).name
    ended_job(server_service, f"{word}-theirs", user=OTHER, parameters={"lr": 0.001})

    names, total = await found(api, q=word)
    assert sorted(names) == sorted([f"{word}-lr", f"{word}-sgd", tagged]) and total == 3
    assert not any("theirs" in n for n in names)  # another user's job is never found
    assert (await found(api, q=f"{word} lr=0.001"))[0] == [f"{word}-lr"]  # every word
    assert (await found(api, q=f"{word} ADAM"))[0] == [f"{word}-lr"]  # any case
    assert (await found(api, q=f"{word}-tag"))[0] == [tagged]
    # % and _ are themselves, not LIKE's wildcards
    assert (await found(api, q=f"{word}%lr"))[0] == []
    assert (await found(api, q=f"{word}_lr"))[0] == []


async def test_search_with_state_filter_and_paging(api: Any, server_service: JobService) -> None:
    word = unique()
    for i in range(5):
        ended_job(
            server_service, f"{word}-{i}", state=JobState.FAILED if i % 2 else JobState.SUCCEEDED
        )
    names, total = await found(api, q=word, state="failed")
    assert sorted(names) == [f"{word}-1", f"{word}-3"] and total == 2
    _, first, _ = await api("GET", "jobs", params={"q": word, "limit": "2"})
    assert [j["name"] for j in first["jobs"]] == [f"{word}-4", f"{word}-3"]
    assert first["total"] == 5 and first["next_before"] is not None
    _, second, _ = await api(
        "GET", "jobs", params={"q": word, "limit": "2", "before": str(first["next_before"])}
    )
    assert [j["name"] for j in second["jobs"]] == [f"{word}-2", f"{word}-1"]


async def test_edit_tags_and_note(api: Any, server_service: JobService) -> None:
    word = unique()
    job = ended_job(server_service, f"{word}-job", tags=["submitted"])
    status, summary, _ = await api(
        "PATCH",
        "jobs",
        job.id,
        body={"tags": ["best", "lr-sweep", "best"], "note": "diverged at step 900"},
    )
    assert status == 200, summary
    assert summary["tags"] == ["best", "lr-sweep"] and summary["note"] == "diverged at step 900"
    status, described, _ = await api("GET", "jobs", job.id)
    assert described["tags"] == ["best", "lr-sweep"]
    assert described["note"] == "diverged at step 900"
    assert described["spec"]["tags"] == ["submitted"]  # the spec stays what was submitted
    assert (await found(api, q=f"{word} diverged"))[0] == [f"{word}-job"]
    assert (await found(api, q=f"{word} lr-sweep"))[0] == [f"{word}-job"]
    assert (await found(api, q=f"{word} submitted"))[0] == []  # the old tag is gone

    # Only the note: the tags stay; kept in the store across a new connection.
    status, summary, _ = await api("PATCH", "jobs", job.id, body={"note": ""})
    assert status == 200 and summary["tags"] == ["best", "lr-sweep"] and summary["note"] == ""
    reopened = LocalBackend(server_service.backend.home, slots=2)  # type: ignore[attr-defined]
    try:
        again = reopened.get(job.id)
        assert again is not None and again.tags == ["best", "lr-sweep"] and again.note == ""
    finally:
        reopened.close()


async def test_edit_refusals(api: Any, server_service: JobService) -> None:
    job = ended_job(server_service, f"{unique()}-job")
    theirs = ended_job(server_service, f"{unique()}-theirs", user=OTHER)
    status, error, _ = await api("PATCH", "jobs", theirs.id, body={"note": "mine now"})
    assert status == 404 and error["message"] == f"No job {theirs.id}."
    assert server_service.record(theirs.id).note == ""
    for body, field in (
        ({"tags": "best"}, "tags"),
        ({"tags": [""]}, "tags.0"),
        ({"note": "x" * 2001}, "note"),
        ({"spec": {"name": "x"}}, "spec"),
        ({"tags": [f"t{i}" for i in range(33)]}, "tags"),
    ):
        status, error, _ = await api("PATCH", "jobs", job.id, body=body)
        assert status == 400, (body, error)
        assert error["errors"][0]["field"] == field, (body, error)
    assert server_service.record(job.id).tags == []


async def test_sharing_needs_a_hub_with_teams(api: Any, server_service: JobService) -> None:
    """The local backend keeps one user's jobs: a job stays private, saying why; a bad value is
    refused naming the field (team sharing itself: tests/hub/test_team_sharing.py)."""
    job = ended_job(server_service, f"{unique()}-job")
    status, error, _ = await api("PATCH", "jobs", job.id, body={"shared": "team"})
    assert status == 409, error
    assert "sharing with a team needs a hub with teams" in error["message"]
    status, error, _ = await api("PATCH", "jobs", job.id, body={"shared": "everyone"})
    assert status == 400 and error["errors"][0]["field"] == "shared", error
    status, summary, _ = await api("PATCH", "jobs", job.id, body={"shared": "private"})
    assert status == 200 and summary["shared"] == "private"
    status, described, _ = await api("GET", "jobs", job.id)
    assert described["shared"] == "private"


async def test_latest_scalar_per_job(api: Any, server_service: JobService) -> None:
    word = unique()
    job = ended_job(server_service, f"{word}-a")
    quiet = ended_job(server_service, f"{word}-b")
    scalars = JobDir(job.job_dir).metrics / "scalars.jsonl"
    for step in range(3000):  # more than the tail that is read: the newest is at the end
        append_jsonl(
            scalars, {"time": time.time(), "step": step, "name": "loss", "value": 1 / (step + 1)}
        )
        if step % 100 == 0:
            append_jsonl(
                scalars, {"time": time.time(), "step": step, "name": "acc", "value": step / 3000}
            )
    status, page, _ = await api("GET", "jobs", params={"q": word, "scalar": "acc"})
    assert status == 200
    by_name = {j["name"]: j for j in page["jobs"]}
    assert by_name[f"{word}-a"]["scalar"] == {"name": "acc", "step": 2900, "value": 2900 / 3000}
    assert by_name[f"{word}-b"]["scalar"] is None
    _, page, _ = await api("GET", "jobs", params={"q": word})
    assert all(j["scalar"] is None for j in page["jobs"])  # only when asked
    _, page, _ = await api("GET", "jobs", params={"q": f"{word}-a", "scalar": "loss"})
    assert page["jobs"][0]["scalar"]["step"] == 2999
    assert quiet.id not in {j["id"] for j in page["jobs"]}


async def test_resubmitted_jobs_get_distinct_names(api: Any, server_service: JobService) -> None:
    name = f"{unique()}-run"
    first = ended_job(server_service, name, parameters={"lr": 0.5})
    status, second, _ = await api("POST", "jobs", first.id, "resubmit")
    assert status == 201, second
    await api("POST", "jobs", second["id"], "cancel")
    assert second["name"] == f"{name}-2" and second["origin"] == f"resubmit of {first.id}"
    status, third, _ = await api("POST", "jobs", second["id"], "resubmit")
    assert status == 201, third
    await api("POST", "jobs", third["id"], "cancel")
    assert third["name"] == f"{name}-3"  # counts on from the family, not name-2-2
    status, fourth, _ = await api("POST", "jobs", first.id, "resubmit")
    await api("POST", "jobs", fourth["id"], "cancel")
    assert fourth["name"] == f"{name}-4"
    # A name of one's own is kept.
    status, own, _ = await api(
        "POST", "jobs", first.id, "resubmit", body={"overrides": {"name": f"{name}-fresh"}}
    )
    await api("POST", "jobs", own["id"], "cancel")
    assert own["name"] == f"{name}-fresh"
    # The list says what each runs again, and gives the parameters.
    _, page, _ = await api("GET", "jobs", params={"q": name})
    by_id = {j["id"]: j for j in page["jobs"]}
    assert by_id[third["id"]]["origin"] == f"resubmit of {second['id']}"
    assert by_id[first.id]["origin"] is None and by_id[first.id]["parameters"] == {"lr": 0.5}


async def test_bad_list_parameters(api: Any) -> None:
    status, error, _ = await api("GET", "jobs", params={"q": "x" * 201})
    assert status == 400 and error["errors"][0]["field"] == "q"
