"""The controller mirrors a team's jobs into the team's MLflow server (a real ``mlflow server``,
tests/fixtures/mlflow_server.py) with nobody logged in: the run made as the job starts, the
scalars the job's directory holds with their steps, its end as the run's status."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.mlflow_server import MlflowServer, mlflow_command
from tests.k8s.test_admin_apply import teams_for
from tests.k8s.test_backend import Team, wait_for
from tests.k8s.test_controller import Deployment, recorded, submit
from trainhub.jobs.states import JobState
from trainhub.teams import Controller


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    server = MlflowServer(mlflow_command(), tmp_path_factory.mktemp("mlflow")).start()
    yield server
    server.stop()


@pytest.fixture
def world(
    k8s_namespace: Any, tmp_path: Path, mlflow: MlflowServer
) -> Iterator[tuple[Team, Deployment]]:
    ns = k8s_namespace.name
    teams = teams_for([ns], tmp_path, mlflow={"tracking_uri": mlflow.uri, "experiment": ns})
    teams = teams.model_copy(update={"controller": Controller(namespace=f"{ns}-c")})
    deployment = Deployment(k8s_namespace, teams, tmp_path)
    team = Team(k8s_namespace, ns, teams, tmp_path)
    yield team, deployment
    deployment.close()
    team.cleanup()


def test_the_controller_mirrors_a_job_into_its_teams_mlflow(
    world: tuple[Team, Deployment], mlflow: MlflowServer
) -> None:
    team, deployment = world
    deployment.start("solo")
    job_id = submit(team, "train", parameters={"lr": 0.1})
    recorded(team, job_id, JobState.RUNNING)
    run = wait_for("the run", lambda: mlflow.run_of_job(team.ns, job_id), 60)
    assert run["info"]["status"] == "RUNNING"
    # What the job's rank 0 writes as it trains (kwok plays the pods, this test the rank).
    scalars = team.backend.jobs_root / job_id / "metrics" / "scalars.jsonl"
    scalars.parent.mkdir(exist_ok=True)
    rows = [{"time": 1.0 + s, "step": s, "name": "loss", "value": 1 / (s + 1)} for s in range(3)]
    scalars.write_text("".join(json.dumps({**r, "rank": 0, "attempt": 0}) + "\n" for r in rows))
    team.end_pods(job_id, result="Succeeded")
    recorded(team, job_id, JobState.SUCCEEDED)

    def finished() -> dict[str, Any] | None:
        found = mlflow.run_of_job(team.ns, job_id)
        return found if found and found["info"]["status"] == "FINISHED" else None

    run = wait_for("the run's end", finished, 60)
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    assert params["lr"] == "0.1" and params["trainhub.gpus"] == "2"
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert (tags["trainhub.user"], tags["trainhub.team"]) == ("ada", team.ns)
    assert tags["trainhub.state"] == "succeeded"
    loss = mlflow.get("metrics/get-history", run_id=run["info"]["run_id"], metric_key="loss")
    assert sorted(m["step"] for m in loss["metrics"]) == [0, 1, 2]
