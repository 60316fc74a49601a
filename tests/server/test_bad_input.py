"""Bad input answers 400 (or 413 past a documented limit) naming the field, never 500, and
stores nothing."""

from __future__ import annotations

import json
from typing import Any

from tests.server.conftest import spec


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
    status, job, _ = await api("POST", "jobs", body=spec())
    assert status == 201, job
    status, error, _ = await api(
        "POST", "jobs", job["id"], "cancel", body={"reason": "x" * 100_000}
    )
    assert status == 400 and error["errors"][0]["field"] == "reason", error
    status, _, _ = await api("POST", "jobs", job["id"], "cancel", body={"reason": "done"})
    assert status == 200
