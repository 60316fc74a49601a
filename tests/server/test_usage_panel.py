"""GET /trainhub/api/usage/panel and jobs/{id}/usage on a real server: a user's own figures,
their team's totals only for the session's own team, the local admission's capacity as the
quota, failures by class, the most wasteful jobs with their goodput; another user's job is not
found. The users have names no other server test uses (the session's store is shared)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.server.conftest import SLOTS, new_job_dir, spec, store_job
from tests.server.token_users import token_header, token_users_config
from trainhub.jobs.directory import append_jsonl
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState

TOKENS = {"token-of-pia": "pia", "token-of-otto": "otto"}


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], monkeypatch) -> dict[str, Any]:
    return token_users_config(jp_server_config, TOKENS, monkeypatch)


@pytest.fixture
def as_user(jp_fetch: Any) -> Any:
    async def call(user: str, *path: str) -> tuple[int, Any]:
        response = await jp_fetch(
            "trainhub",
            "api",
            *path,
            headers=token_header(TOKENS, user),
            raise_error=False,
        )
        return response.code, json.loads(response.body)

    return call


def ended_job(
    service: JobService,
    user: str,
    team: str,
    *,
    gpus: int,
    seconds: float,
    first_step_after: float | None,
    failure: FailureClass | None = None,
) -> JobRecord:
    """An ended job that ran ``seconds``, logging a step a second from ``first_step_after``
    (no step when None)."""
    jobdir = new_job_dir(service, f"{user}-{team}")
    end = time.time() - 60
    start = end - seconds
    append_jsonl(
        jobdir.root / "events.jsonl",
        {"time": start, "type": "state", "state": "running", "attempt": 0},
    )
    if first_step_after is not None:
        for i, t in enumerate(range(int(first_step_after), int(seconds))):
            append_jsonl(
                jobdir.metrics / "scalars.jsonl",
                {"time": start + t, "step": i, "name": "loss", "value": 1.0, "rank": 0},
            )
    return store_job(
        service,
        jobdir,
        name="panel",
        user=user,
        team=team,
        state=JobState.FAILED if failure else JobState.SUCCEEDED,
        verdict=Verdict(failure_class=failure, reason="it failed") if failure else None,
        spec=parse_spec(spec(team=team)),
        gpus=gpus,
        created_at=start - 30,
        admitted_at=start - 20,
        started_at=start,
        finished_at=end,
    )


async def test_the_panel_shows_a_users_own_figures_and_their_teams(
    as_user: Any, server_service: JobService, monkeypatch
) -> None:
    # pia: a clean job (10 s of start-up in 100), a late one (60 s in 100), a code failure.
    clean = ended_job(server_service, "pia", "optics", gpus=2, seconds=100, first_step_after=10)
    late = ended_job(server_service, "pia", "optics", gpus=1, seconds=100, first_step_after=60)
    ended_job(
        server_service,
        "pia",
        "optics",
        gpus=1,
        seconds=20,
        first_step_after=None,
        failure=FailureClass.CODE,
    )
    # otto, same team: an infrastructure failure with 4 GPUs.
    ended_job(
        server_service,
        "otto",
        "optics",
        gpus=4,
        seconds=50,
        first_step_after=5,
        failure=FailureClass.INFRASTRUCTURE,
    )

    monkeypatch.setenv("TRAINHUB_TEAM", "optics")
    status, panel = await as_user("pia", "usage", "panel")
    assert status == 200, panel
    assert (panel["user"], panel["team"]) == ("pia", "optics")
    mine_hours = (2 * 100 + 100 + 20) / 3600
    assert panel["mine"]["month"] == pytest.approx(mine_hours)
    assert panel["team_hours"]["month"] == pytest.approx(mine_hours + 4 * 50 / 3600)
    assert sum(d["mine"] for d in panel["daily"]) == pytest.approx(mine_hours)
    assert len(panel["daily"]) == 30

    # Failures of the team over 30 days: one of each class among 4 ended jobs.
    rates = {f["failure_class"]: f["rate"] for f in panel["failures"]}
    assert rates == {"code": 0.25, "infrastructure": 0.25}
    assert panel["ended_30d"] == 4
    assert panel["typical_wait_s"] == pytest.approx(10)

    # The quota: the local admission's machine (CPU slots; the test server has no GPU).
    (slots,) = panel["quotas"]
    assert panel["quota_source"] == "local admission"
    assert (slots["pool"], slots["resource"], slots["nominal"]) == ("local", "cpu slots", SLOTS)
    assert slots["used"] + slots["lendable"] == SLOTS
    assert panel["waiting"] >= panel["waiting_mine"] == 0

    # The most wasteful of pia's jobs first: the late one lost 60 GPU-s, the clean one 20.
    wasteful = [w["job_id"] for w in panel["wasteful"]]
    assert wasteful[:2] == [late.id, clean.id]
    assert panel["wasteful"][0]["goodput"] == pytest.approx(0.4)
    assert panel["wasteful"][1]["goodput"] == pytest.approx(0.9)
    assert panel["wasteful"][0]["startup_s"] == pytest.approx(60)
    # Never another user's (the server's store also holds other tests' jobs of pia's).
    assert not any(w["job_id"].startswith("otto-") for w in panel["wasteful"])

    # pia's goodput: the productive share of her jobs' GPU time (the step-less job is out).
    assert panel["goodput_30d"] == pytest.approx((0.9 * 200 + 0.4 * 100) / 300)

    # One job's goodput, for the job view; another user's job is not found.
    status, row = await as_user("pia", "jobs", late.id, "usage")
    assert status == 200, row
    assert (row["goodput"], row["gpu_startup_s"]) == (pytest.approx(0.4), pytest.approx(60))
    _, clean_row = await as_user("pia", "jobs", clean.id, "usage")
    assert clean_row["startup_s"] == pytest.approx(10)  # of time; 2 GPUs: 20 GPU-seconds
    assert clean_row["gpu_startup_s"] == pytest.approx(20)
    status, _ = await as_user("otto", "jobs", late.id, "usage")
    assert status == 404

    # Without a team of one's own: one's own figures, no team totals.
    monkeypatch.delenv("TRAINHUB_TEAM")
    _, alone = await as_user("otto", "usage", "panel")
    assert alone["team"] is None and alone["team_hours"] is None
    assert alone["mine"]["month"] == pytest.approx(4 * 50 / 3600)
    assert [f["failure_class"] for f in alone["failures"]] == ["infrastructure"]
    assert alone["failures"][0]["rate"] == 1.0
