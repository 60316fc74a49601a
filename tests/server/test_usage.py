"""GET /trainhub/api/usage as two users: each sees their own jobs, and team totals only of the
team their session belongs to; another user's figures never appear. The users have names no
other server test uses, because the session's store is shared."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.server.conftest import new_job_dir, spec, store_job
from tests.server.token_users import token_header, token_users_config
from trainhub.jobs.directory import append_jsonl
from trainhub.jobs.models import JobRecord
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

TOKENS = {"token-of-una": "una", "token-of-ivo": "ivo"}


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], monkeypatch) -> dict[str, Any]:
    return token_users_config(jp_server_config, TOKENS, monkeypatch)


@pytest.fixture
def as_user(jp_fetch: Any) -> Any:
    async def call(user: str, **params: str) -> tuple[int, Any]:
        response = await jp_fetch(
            "trainhub",
            "api",
            "usage",
            params=params,
            headers=token_header(TOKENS, user),
            raise_error=False,
        )
        return response.code, json.loads(response.body)

    return call


def ended_job(
    service: JobService, user: str, team: str, gpus: int, seconds: float, utilization: float
) -> JobRecord:
    """An ended job with a job directory the sampler could have written: ``gpus`` GPUs at
    ``utilization`` for ``seconds``."""
    jobdir = new_job_dir(service, f"{user}-{team}")
    end = time.time() - 60
    start = end - seconds
    for t in range(1, int(seconds) + 1):
        for gpu in range(gpus):
            append_jsonl(
                jobdir.metrics / "gpu.jsonl",
                {"time": start + t, "gpu": gpu, "utilization": utilization},
            )
    return store_job(
        service,
        jobdir,
        name="usage",
        user=user,
        team=team,
        state=JobState.SUCCEEDED,
        spec=parse_spec(spec(team=team)),
        gpus=gpus,
        created_at=start - 10,
        admitted_at=start - 1,
        started_at=start,
        finished_at=end,
    )


def groups(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["key"]: g for g in report["groups"]}


async def test_each_user_sees_their_own_usage_and_only_their_own_teams_totals(
    as_user: Any, server_service: JobService, monkeypatch
) -> None:
    unas_vision = ended_job(server_service, "una", "vision", gpus=2, seconds=100, utilization=50)
    unas_nlp = ended_job(server_service, "una", "nlp", gpus=1, seconds=40, utilization=5)
    ended_job(server_service, "ivo", "vision", gpus=1, seconds=30, utilization=100)
    ended_job(server_service, "ivo", "nlp", gpus=4, seconds=80, utilization=0)

    status, report = await as_user("una")
    assert status == 200, report
    assert report["by"] == "user" and report["waste_utilization_pct"] == 10
    (mine,) = report["groups"]
    assert (mine["key"], mine["jobs"]) == ("una", 2)
    assert mine["gpu_allocated_s"] == pytest.approx(2 * 100 + 40)
    assert mine["gpu_busy_s"] == pytest.approx(2 * 100 * 0.5 + 40 * 0.05)
    assert mine["gpu_waste_s"] == pytest.approx(40)  # the 5 % job only
    assert mine["queue_wait_s"] == pytest.approx(2 * 9)

    _, ivos = await as_user("ivo", by="pool")
    assert sum(g["jobs"] for g in ivos["groups"]) == 2
    assert sum(g["gpu_allocated_s"] for g in ivos["groups"]) == pytest.approx(30 + 4 * 80)

    # A session of team vision: its team's totals (every member's jobs in it), no other team's.
    monkeypatch.setenv("TRAINHUB_TEAM", "vision")
    _, by_team = await as_user("una", by="team")
    assert list(groups(by_team)) == ["vision"]
    vision = groups(by_team)["vision"]
    assert vision["jobs"] == 2
    assert vision["gpu_allocated_s"] == pytest.approx(2 * 100 + 30)
    assert vision["gpu_busy_s"] == pytest.approx(2 * 100 * 0.5 + 30 * 1.0)
    _, ivos_team = await as_user("ivo", by="team")
    assert ivos_team["groups"] == by_team["groups"]
    # Grouped otherwise, the team's session still shows the user's own jobs alone.
    _, days = await as_user("una", by="day")
    assert sum(g["jobs"] for g in days["groups"]) == 2

    # Without a team of one's own, by team groups one's own jobs by the team they named.
    monkeypatch.delenv("TRAINHUB_TEAM")
    _, own = await as_user("una", by="team")
    assert {k: g["jobs"] for k, g in groups(own).items()} == {"vision": 1, "nlp": 1}
    assert groups(own)["nlp"]["gpu_allocated_s"] == pytest.approx(
        unas_nlp.gpus * (unas_nlp.finished_at - unas_nlp.started_at)
    )
    assert groups(own)["vision"]["gpu_allocated_s"] == pytest.approx(
        unas_vision.gpus * (unas_vision.finished_at - unas_vision.started_at)
    )

    # Nothing ended in the last minute (the jobs ended a minute ago).
    _, recent = await as_user("una", since="1m")
    assert recent["groups"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"since": "soon"}, "since"), ({"by": "month"}, "by"), ({"since": ""}, "since")],
)
async def test_a_bad_argument_is_refused_naming_it(as_user: Any, params, field) -> None:
    status, body = await as_user("una", **params)

    assert status == 400, body
    assert field in json.dumps(body)
