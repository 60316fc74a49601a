"""Bad input answers 400 (or 413 past a documented limit) naming the field, never 500, and
stores nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.server.conftest import SLEEPER, insert_job, spec
from trainhub.jobs.directory import JobDir
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


async def jobs_count(api: Any) -> int:
    _, page, _ = await api("GET", "jobs", params={"limit": "500"})
    return len(page["jobs"])


async def test_refused_specs_name_the_field_and_create_nothing(api: Any) -> None:
    before = await jobs_count(api)
    cases = [
        (spec(parameters={"class": 1}), "parameters", "keyword"),
        (spec(parameters={"lr": "x" * (100 << 10)}), "parameters", "larger than 64 KiB"),
        (
            json.dumps(spec(parameters={"lr": "DEEP"})).replace('"DEEP"', "[" * 500 + "]" * 500),
            "parameters",
            "deeper",
        ),
        (spec(max_runtime=1e300), "max_runtime", "at most 366 days"),
        (spec(max_runtime="99999999999d"), "max_runtime", "at most 366 days"),
        (spec(tags=[f"t{i}" for i in range(40)]), "tags", "at most 32"),
    ]
    for body, field, words in cases:
        status, error, _ = await api("POST", "jobs", body=body)
        assert status == 400, (field, status, str(error)[:300])
        messages = {e["field"]: e["message"] for e in error["errors"]}
        assert field in messages and words in messages[field], error
    # A NaN is not JSON, but Python's encoder writes one; the server must not take it.
    status, error, _ = await api(
        "POST", "jobs", body=json.dumps(spec(parameters={"lr": float("nan")}))
    )
    assert status == 400 and "parameters" in [e["field"] for e in error["errors"]], error
    assert await jobs_count(api) == before


async def test_bodies_past_the_limits(api: Any) -> None:
    status, error, _ = await api("POST", "jobs", body="[" * 100_000 + "]" * 100_000)
    assert status == 400 and error["errors"][0]["field"] == "body", error
    status, error, _ = await api("POST", "jobs", body=json.dumps(spec(padding="x" * (2 << 20))))
    assert status == 413 and "1 MiB" in error["message"], error


async def test_integers_past_what_the_api_counts_in(api: Any, finished_job: str) -> None:
    status, error, _ = await api("GET", "jobs", params={"before": str(2**63)})
    assert status == 400 and error["errors"][0]["field"] == "before", error
    status, error, _ = await api(
        "GET", "jobs", finished_job, "logs", "0", params={"offset": str(2**62)}
    )
    assert status == 400 and error["errors"][0]["field"] == "offset", error


async def test_a_long_cancel_reason_is_refused(api: Any) -> None:
    # A job that is still there to cancel (the tiny notebook may end before the second call).
    status, job, _ = await api("POST", "jobs", body=spec(SLEEPER))
    assert status == 201, job
    status, error, _ = await api(
        "POST", "jobs", job["id"], "cancel", body={"reason": "x" * 100_000}
    )
    assert status == 400 and error["errors"][0]["field"] == "reason", error
    status, _, _ = await api("POST", "jobs", job["id"], "cancel", body={"reason": "done"})
    assert status == 200


def fields(error: dict[str, Any]) -> list[str]:
    return [e["field"] for e in error.get("errors", [])]


async def test_parameters_nested_past_what_the_parser_takes_name_the_parameter(api: Any) -> None:
    before = await jobs_count(api)
    deep = "[" * 5000 + "]" * 5000
    body = json.dumps(spec(parameters={"lr": "DEEP"})).replace('"DEEP"', deep)
    status, error, _ = await api("POST", "jobs", body=body)
    assert status == 400, error
    assert error["errors"] == [
        {"field": "parameters", "message": "lr: nests deeper than 32 levels"}
    ], error
    status, error, _ = await api("POST", "jobs", body='{"a": ' + deep + "}")
    assert status == 400 and fields(error) == ["a"], error
    assert await jobs_count(api) == before


async def test_numbers_and_names_in_the_path_are_checked_and_named(
    api: Any, server_service: JobService
) -> None:
    job = insert_job(server_service, state=JobState.SUCCEEDED, name="paths").id
    cases = [
        ("GET", ("logs", "abc"), "rank"),
        ("GET", ("logs", "-1"), "rank"),
        ("GET", ("logs", str(2**70)), "rank"),
        ("GET", ("logs", "1e3"), "rank"),
        ("GET", ("checkpoints", "x1"), "step"),
        ("DELETE", ("checkpoints", "-5"), "step"),
        ("GET", ("checkpoints", "1.5", "files", "state.pt"), "step"),
        ("POST", ("checkpoints", "9" * 30, "fork"), "step"),
        ("GET", ("metrics", "GPU"), "kind"),
        ("GET", ("metrics", "0"), "kind"),
    ]
    for method, parts, field in cases:
        status, error, headers = await api(method, "jobs", job, *parts)
        assert status == 400, (parts, status, error)
        assert headers["Content-Type"].startswith("application/json")
        assert fields(error) == [field], (parts, error)
    status, log, _ = await api("GET", "jobs", job, "logs", "0")  # the same routes still serve
    assert status == 200 and log["offset"] == 0, log


async def test_a_rank_log_that_is_a_directory_names_the_rank(
    api: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, state=JobState.SUCCEEDED, name="dirlog")
    JobDir(record.job_dir).rank_log(0).mkdir(parents=True)
    status, error, _ = await api("GET", "jobs", record.id, "logs", "0")
    assert status == 400, error
    assert fields(error) == ["rank"] and "is a directory" in error["errors"][0]["message"]


async def test_a_checkpoint_file_name_leading_out_names_the_name(
    api: Any, server_service: JobService
) -> None:
    record = insert_job(server_service, state=JobState.SUCCEEDED, name="ckname")
    step = JobDir(record.job_dir).checkpoints / "0000000001"
    step.mkdir(parents=True)
    (step / "manifest.json").write_text(json.dumps({"step": 1, "time": 0.0, "files": []}))
    status, error, _ = await api("GET", "jobs", record.id, "checkpoints", "1", "files", "..")
    assert status == 400 and fields(error) == ["name"], error


async def test_offsets_past_what_a_file_system_holds_read_nothing(
    api: Any, finished_job: str
) -> None:
    offset = str(2**53)  # the largest the API takes; no file system seeks that far
    for kind in ("events", "metrics/scalars"):
        status, page, _ = await api(
            "GET", "jobs", finished_job, *kind.split("/"), params={"offset": offset}
        )
        assert status == 200, (kind, page)
        assert page["next_offset"] == 2**53 and not (page.get("events") or page.get("records"))
    status, chunk, _ = await api(
        "GET", "jobs", finished_job, "logs", "0", params={"offset": offset}
    )
    assert status == 200 and chunk["text"] == "" and chunk["next_offset"] == 2**53, chunk


async def test_query_arguments_are_checked_by_the_documented_models(
    api: Any, finished_job: str
) -> None:
    before = await jobs_count(api)
    status, error, _ = await api("POST", "jobs", body=spec(), params={"dry_run": "maybe"})
    assert status == 400 and fields(error) == ["dry_run"], error  # never a real submit
    cases = [
        (("jobs",), {"limit": "0"}, "limit"),
        (("jobs",), {"limit": "501"}, "limit"),
        (("jobs",), {"state": "sleeping"}, "state"),
        (("jobs",), {"state": ""}, "state"),
        (("jobs",), {"before": ""}, "before"),
        (("jobs", finished_job, "events"), {"offset": "-1"}, "offset"),
        (("jobs", finished_job, "events"), {"limit": "ten"}, "limit"),
        (("jobs", finished_job, "metrics", "scalars"), {"offset": "1.5"}, "offset"),
        (("jobs", finished_job, "logs", "0"), {"length": "0"}, "length"),
        (("notebook", "parameters"), {}, "path"),
    ]
    for parts, params, field in cases:
        status, error, _ = await api("GET", *parts, params=params)
        assert status == 400 and fields(error) == [field], (parts, params, error)
    assert await jobs_count(api) == before


async def test_cancel_and_change_bodies_are_checked_by_the_documented_models(
    api: Any, server_service: JobService
) -> None:
    job = insert_job(server_service, state=JobState.SUCCEEDED, name="bodies").id
    before = await jobs_count(api)
    for parts, body, field in [
        (("cancel",), {"reason": 5}, "reason"),
        (("cancel",), {"reason": ["a"]}, "reason"),
        (("resubmit",), {"overrides": "x"}, "overrides"),
        (("resubmit",), {"overrides": [1]}, "overrides"),
        (("checkpoints", "1", "fork"), {"overrides": 3}, "overrides"),
    ]:
        status, error, _ = await api("POST", "jobs", job, *parts, body=body)
        assert status == 400 and fields(error) == [field], (parts, body, error)
    assert await jobs_count(api) == before


async def test_websocket_paths_and_offsets_are_checked_before_the_upgrade(
    jp_ws_fetch: Any, server_service: JobService
) -> None:
    job = insert_job(server_service, state=JobState.SUCCEEDED, name="wsinput").id
    for parts, params, field in [
        (("logs", "abc", "stream"), None, "rank"),
        (("logs", "0", "stream"), {"offset": "-3"}, "offset"),
        (("metrics", "GPU", "stream"), None, "kind"),
        (("events", "stream"), {"offset": "x"}, "offset"),
    ]:
        with pytest.raises(HTTPClientError) as refused:
            await jp_ws_fetch("trainhub", "api", "jobs", job, *parts, params=params)
        assert refused.value.code == 400, parts
        assert fields(json.loads(refused.value.response.body)) == [field], parts


async def test_numbers_past_a_float_s_range_are_refused_naming_the_field(api: Any) -> None:
    before = await jobs_count(api)
    cases = [
        (spec(resources={"memory": "9" * 400 + "Ti"}), "resources.memory", "not a quantity"),
        (spec(resources={"memory": "9" * 400}), "resources.memory", "not a quantity"),
        (spec(max_runtime=10**400), "max_runtime", "at most 366 days"),
        (spec(max_runtime="9" * 400), "max_runtime", "at most 366 days"),
        (spec(max_runtime="9" * 5000 + "d"), "max_runtime", "at most 366 days"),
        (spec(max_runtime=True), "max_runtime", "not a duration"),
    ]
    for body, field, words in cases:
        status, error, _ = await api("POST", "jobs", body=body)
        assert status == 400, (field, status, str(error)[:300])
        messages = {e["field"]: e["message"] for e in error["errors"]}
        assert field in messages and words in messages[field], error
    assert await jobs_count(api) == before


async def test_a_nul_character_is_refused_naming_the_field(api: Any) -> None:
    before = await jobs_count(api)
    cases = [
        (spec(source={"path": "tiny\x00.ipynb"}), "source.path"),
        (spec(source={"kind": "script", "path": "x\x00.py"}), "source.path"),
        (spec(source={"kind": "script", "path": "x.py", "args": ["a\x00"]}), "source.args.0"),
        (spec(env={"A": "x\x00y"}), "env.A"),
        (spec(image="python\x00"), "image"),
    ]
    for body, field in cases:
        status, error, _ = await api("POST", "jobs", body=body)
        assert status == 400, (field, status, error)
        assert fields(error) == [field] and "NUL" in error["errors"][0]["message"], error
    # Wherever else a refusal comes from, it names at least the body.
    status, error, _ = await api(
        "POST", "jobs", body=spec(datasets=[{"name": "d", "path": "/tmp/\x00"}])
    )
    assert status == 400 and fields(error), error
    assert await jobs_count(api) == before
