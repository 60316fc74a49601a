"""The cluster-wide metrics service in a real JupyterHub (hub_config/jupyterhub_config.py
unchanged, plus loopback addresses and the dummy authenticator), over a local store holding
real jobs of two users: a scrape needs a hub token allowed to access the service, holds every
user's jobs, and every metric the Grafana dashboard names."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import requests
from nbformat.v4 import new_code_cell, new_notebook

from tests.hub.conftest import ROOT, Hub, free_port, wait_for, write_test_config
from tests.promql import dashboard_queries, metric_names, samples, scraped_names
from tests.server.conftest import spec, wait_state, write_workspace
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


@pytest.fixture(scope="module")
def jobs_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local store with real jobs: ada's that succeeded, bo's that failed in its cell."""
    home = tmp_path_factory.mktemp("hub-metrics-home")
    workspace = tmp_path_factory.mktemp("hub-metrics-workspace")
    write_workspace(workspace)
    nbformat.write(
        new_notebook(cells=[new_code_cell("raise KeyError('validation')")]),
        workspace / "broken.ipynb",
    )
    saved = os.environ.get("TRAINHUB_GPUS")
    os.environ["TRAINHUB_GPUS"] = "0"
    try:
        service = JobService(LocalBackend(home), workspace_root=workspace, jobs_root=home / "jobs")
        ids = [
            service.submit(spec(team="vision"), user="ada").id,
            service.submit(spec("broken.ipynb", team="nlp"), user="bo").id,
        ]
        ended = [wait_state(service, i, {JobState.SUCCEEDED, JobState.FAILED}) for i in ids]
        assert [r.state for r in ended] == [JobState.SUCCEEDED, JobState.FAILED]
        service.backend.close()
    finally:
        if saved is None:
            os.environ.pop("TRAINHUB_GPUS", None)
        else:
            os.environ["TRAINHUB_GPUS"] = saved
    yield home


@pytest.fixture(scope="module")
def metrics_hub(
    chp: str, jobs_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Hub, str]]:
    tmp = tmp_path_factory.mktemp("metrics-hub")
    # The hub tests' config, where no server is ever spawned: what it says of spawning is unused.
    port, admin_token = write_test_config(tmp, chp, ["ada", "bo"], "127.0.0.1", "")
    scrape_token = secrets.token_hex(16)
    env = {
        **os.environ,
        "TRAINHUB_BACKEND": "local",
        "TRAINHUB_HOME": str(jobs_home),
        "TRAINHUB_METRICS_PORT": str(free_port()),
        "TRAINHUB_METRICS_SCRAPE_TOKEN": scrape_token,
        "TRAINHUB_IDLE_INTERVAL_SECONDS": "1",
        "TRAINHUB_IDLE_STATE_FILE": str(tmp / "idle-gpu-sessions.json"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spawner")]),
    }
    hub = Hub(dir=tmp, env=env, port=port, admin_token=admin_token)
    hub.start()
    try:
        yield hub, scrape_token
    finally:
        hub.stop()


def scrape(hub: Hub, token: str | None) -> requests.Response:
    headers = {"Authorization": f"token {token}"} if token else {}
    return requests.get(
        f"{hub.url}/services/trainhub-metrics/metrics",
        headers=headers,
        timeout=30,
        allow_redirects=False,
    )


def test_every_teams_jobs_are_scraped_with_a_token_allowed_to(metrics_hub: Any) -> None:
    hub, token = metrics_hub
    first = wait_for("the metrics service", lambda: scrape(hub, token).status_code == 200 or None)
    assert first
    assert scrape(hub, None).status_code == 403
    users_token = hub.user_token("ada")  # a user's token holds no access to the service
    assert scrape(hub, users_token).status_code == 403

    # The idle-GPU service has written its first pass (no GPU session on this hub).
    wait_for("the idle sessions file", lambda: (hub.dir / "idle-gpu-sessions.json").exists())
    response = scrape(hub, token)
    assert response.headers["Content-Type"].startswith("text/plain")
    text = response.text
    jobs = samples(text, "trainhub_jobs")
    assert jobs[(("state", "succeeded"), ("team", "vision"))] == 1
    assert jobs[(("state", "failed"), ("team", "nlp"))] == 1
    assert jobs[(("state", "failed"), ("team", "vision"))] == 0
    assert samples(text, "trainhub_job_failures_total") == {
        (("failure_class", "code"), ("team", "nlp")): 1
    }
    assert samples(text, "trainhub_queue_wait_seconds_count") == {
        (("team", "nlp"),): 1,
        (("team", "vision"),): 1,
    }
    allocated = samples(text, "trainhub_gpu_allocated_seconds_total")
    assert set(allocated) == {(("team", "nlp"),), (("team", "vision"),)}  # CPU jobs: 0 GPUs
    assert samples(text, "trainhub_idle_gpu_sessions") == {
        (("team", "nlp"),): 0,
        (("team", "vision"),): 0,
    }
    assert samples(text, "trainhub_exporter_source_errors") == {(): 0}

    named = {n for q in dashboard_queries() for n in metric_names(q)}
    assert named, "the dashboard names no metric"
    assert named <= scraped_names(text), named - scraped_names(text)
    # Nothing carried between scrapes: the same store, the same figures.
    time.sleep(0.1)
    assert samples(scrape(hub, token).text, "trainhub_jobs") == jobs
