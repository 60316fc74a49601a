"""GET /trainhub/api/metrics on a real server with real jobs: Prometheus' text format, the
user's own jobs only, behind Jupyter Server's authentication; the Grafana dashboard's queries
name only metrics it emits (besides the sessions only the hub's metrics service sees)."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.promql import dashboard_queries, metric_names, samples, scraped_names
from tests.server.conftest import insert_job, spec, wait_state
from tests.server.token_users import token_header, token_users_config
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState

# Users no other module of the session submits as: the trainhub home is the session's, and
# the counts below are of all their jobs.
TOKENS = {"token-of-nora": "nora", "token-of-rex": "rex"}
HUB_ONLY = {"trainhub_gpu_sessions", "trainhub_idle_gpu_sessions", "trainhub_idle_gpus"}


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], monkeypatch) -> dict[str, Any]:
    return token_users_config(jp_server_config, TOKENS, monkeypatch)


def headers(user: str) -> dict[str, str]:
    return token_header(TOKENS, user)


async def test_the_users_own_jobs_are_exported_after_authentication(
    jp_fetch: Any, workspace: Any, server_service: JobService
) -> None:
    nbformat.write(
        new_notebook(cells=[new_code_cell("raise ValueError('bad batch')")]),
        workspace / "broken.ipynb",
    )
    ok = await jp_fetch(
        "trainhub",
        "api",
        "jobs",
        method="POST",
        body=json.dumps(spec()),
        headers=headers("nora"),
    )
    bad = await jp_fetch(
        "trainhub",
        "api",
        "jobs",
        method="POST",
        body=json.dumps(spec("broken.ipynb")),
        headers=headers("nora"),
    )
    ids = [json.loads(r.body)["id"] for r in (ok, bad)]
    ended = [wait_state(server_service, i, {JobState.SUCCEEDED, JobState.FAILED}) for i in ids]
    assert [r.state for r in ended] == [JobState.SUCCEEDED, JobState.FAILED]
    others = insert_job(server_service, user="rex", state=JobState.RUNNING, name="rexs")

    anonymous = await jp_fetch(
        "trainhub", "api", "metrics", headers={"Authorization": ""}, raise_error=False
    )
    assert anonymous.code == 403

    response = await jp_fetch("trainhub", "api", "metrics", headers=headers("nora"))
    assert response.headers["Content-Type"].startswith("text/plain")
    text = response.body.decode()
    jobs = samples(text, "trainhub_jobs")
    assert jobs[(("state", "succeeded"), ("team", ""))] == 1
    assert jobs[(("state", "failed"), ("team", ""))] == 1
    assert jobs[(("state", "running"), ("team", ""))] == 0  # rex's running job is not nora's
    assert samples(text, "trainhub_job_failures_total") == {
        (("failure_class", "code"), ("team", "")): 1
    }
    assert samples(text, "trainhub_queue_wait_seconds_count") == {(("team", ""),): 2}
    assert others.id not in text

    rexs = (await jp_fetch("trainhub", "api", "metrics", headers=headers("rex"))).body.decode()
    assert samples(rexs, "trainhub_jobs")[(("state", "running"), ("team", ""))] == 1
    assert samples(rexs, "trainhub_active_job_gpus") == {
        (("job_id", others.id), ("name", "rexs"), ("state", "running"), ("team", "")): 0
    }
    assert samples(rexs, "trainhub_job_failures_total") == {}

    # Every metric the dashboard names is in the scrape, but for the hub's session metrics.
    named = {n for q in dashboard_queries() for n in metric_names(q)}
    assert named - scraped_names(text) == HUB_ONLY


def test_metric_names_are_read_from_promql() -> None:
    expr = (
        "histogram_quantile(0.9, sum by (le, team) (rate(trainhub_queue_wait_seconds_bucket"
        '{team="a"}[5m]))) / on (team) group_left sum(x_total offset 1h) * 1e3'
    )
    assert metric_names(expr) == {"trainhub_queue_wait_seconds_bucket", "x_total"}
    assert all(metric_names(q) for q in dashboard_queries())  # every query reads a metric
