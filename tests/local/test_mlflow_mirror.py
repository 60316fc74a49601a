"""Real torchrun jobs of a team with an MLflow server, mirrored into a real ``mlflow server``
(tests/fixtures/mlflow_server.py): the run, its parameters, its scalars with their steps, its
tags and the executed notebook read back through MLflow's REST API; a registered model version
as an MLflow model version; and a server that is down while the job runs: the job succeeds as
it would have, and the mirror catches up once the server is there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_notebook

from tests.fixtures.mlflow_server import REPO, MlflowServer, free_port, mlflow_command
from tests.local.conftest import Trainhub, wait_for
from trainhub.tracking import cursor as cursors
from trainhub.tracking.models import queue_model_version

EXPERIMENT = "vision-jobs"
STEPS = 6
TRAIN = f"""
import os
import torch.distributed as dist
import trainhub

dist.init_process_group("gloo")
for step in range({STEPS}):
    trainhub.log(step=step, loss=1.0 / (step + 1), lr=0.01)
print("rank", dist.get_rank(), "of", dist.get_world_size(), flush=True)
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def mlflow_bin() -> str:
    return mlflow_command()


@pytest.fixture
def servers(mlflow_bin: str, tmp_path: Path) -> Iterator[list[MlflowServer]]:
    started: list[MlflowServer] = []
    yield started
    for server in started:
        server.stop()


def mirrored(th: Trainhub, uri: str) -> Trainhub:
    """The job's team (vision) mirrors into ``uri``; the sender polls and backs off quickly."""
    data = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())
    data["teams"][0]["mlflow"] = {"tracking_uri": uri, "experiment": EXPERIMENT}
    teams = th.workspace.parent / "teams.yaml"
    teams.write_text(yaml.safe_dump(data))
    th.env.update(
        TRAINHUB_TEAMS_FILE=str(teams),
        TRAINHUB_MLFLOW_INTERVAL_SECONDS="1",
        TRAINHUB_MLFLOW_BACKOFF_SECONDS="0.5",
    )
    nbformat.write(new_notebook(cells=[new_code_cell(TRAIN)]), th.workspace / "train.ipynb")
    return th


def cursor(th: Trainhub, job_id: str) -> cursors.Cursor | None:
    return cursors.load(th.home / "mlflow", job_id)


def submit(th: Trainhub) -> str:
    return th.submit(
        "train.ipynb", "--team", "vision", "--nproc", "2", "--param", "lr=0.01",
        "--param", "layers=3",
    )  # fmt: skip


def history(server: MlflowServer, run: dict[str, Any], key: str) -> list[tuple[int, float]]:
    found = server.get("metrics/get-history", run_id=run["info"]["run_id"], metric_key=key)
    return sorted((m["step"], m["value"]) for m in found.get("metrics", []))


def check_run(server: MlflowServer, th: Trainhub, job: dict[str, Any]) -> dict[str, Any]:
    run = server.run_of_job(EXPERIMENT, job["id"])
    assert run is not None
    assert run["info"]["status"] == "FINISHED" and run["info"]["run_name"] == job["name"]
    params = {p["key"]: p["value"] for p in run["data"].get("params", [])}
    assert params == {"lr": "0.01", "layers": "3", "trainhub.gpus": "0", "trainhub.workers": "1"}
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert tags["trainhub.job_id"] == job["id"] and tags["trainhub.team"] == "vision"
    assert tags["trainhub.user"] == job["user"] and tags["trainhub.state"] == "succeeded"
    assert tags["trainhub.notebook"] == "train.ipynb"
    assert tags["trainhub.image_digest"].startswith("local environment ")
    assert history(server, run, "loss") == [(s, pytest.approx(1.0 / (s + 1))) for s in range(STEPS)]
    assert [step for step, _ in history(server, run, "lr")] == list(range(STEPS))
    notebook = json.loads(server.artifact(run, "notebook.ipynb"))
    assert notebook == json.loads((th.job_dir(job["id"]) / "notebook.ipynb").read_text())
    assert "rank 0 of 2" in json.dumps(notebook["cells"][-1]["outputs"])  # after the parameters
    return run


def test_a_torchrun_job_is_mirrored_into_its_teams_mlflow(
    trainhub_env: Trainhub, servers: list[MlflowServer], mlflow_bin: str, tmp_path: Path
) -> None:
    server = MlflowServer(mlflow_bin, tmp_path / "mlflow")
    servers.append(server.start())
    th = mirrored(trainhub_env, server.uri)
    job = th.wait(submit(th))
    assert job["state"] == "succeeded", job
    done = wait_for(lambda: (c := cursor(th, job["id"])) and c.done and c, 60, "the mirror")
    assert done.error is None and done.metrics_sent == 2 * STEPS
    run = check_run(server, th, job)

    # trainhub's registry registers a version of the job's model: an MLflow model version of
    # the job's run, its files among the run's artifacts; queued twice, made once.
    weights = tmp_path / "model"
    weights.mkdir()
    (weights / "weights.bin").write_bytes(b"\x00\x01weights")
    for _ in range(2):
        assert queue_model_version(th.home / "mlflow", job["id"], "classifier", 1, files=weights)
    th.run("jobs")  # a reconcile starts the sender
    wait_for(lambda: (c := cursor(th, job["id"])) and c.done, 60, "the model version")
    (version,) = server.get("model-versions/search", filter="name='classifier'")["model_versions"]
    assert version["run_id"] == run["info"]["run_id"] and version["version"] == "1"
    assert version["source"].endswith("/artifacts/models/classifier/v1")
    assert server.artifact(run, "models/classifier/v1/weights.bin") == b"\x00\x01weights"


def test_a_server_down_during_the_job_leaves_it_alone_and_the_mirror_catches_up(
    trainhub_env: Trainhub, servers: list[MlflowServer], mlflow_bin: str, tmp_path: Path
) -> None:
    server = MlflowServer(mlflow_bin, tmp_path / "mlflow", port=free_port())
    th = mirrored(trainhub_env, server.uri)  # nothing listens there yet
    job = th.wait(submit(th))
    assert job["state"] == "succeeded" and job["verdict"] is None, job
    events = [json.loads(line) for line in (th.job_dir(job["id"]) / "events.jsonl").open()]
    assert not [e for e in events if e["type"] == "mlflow"]  # the job never heard of it
    behind = wait_for(lambda: (c := cursor(th, job["id"])) and c.failures and c, 30, "a try")
    assert "unreachable" in (behind.error or "") and not behind.done and behind.run_id is None

    servers.append(server.start())
    wait_for(  # whoever reconciles next brings the sender back, if it gave up meanwhile
        lambda: th.run("jobs") and (c := cursor(th, job["id"])) and c.done, 90, "the catch-up", 2
    )
    check_run(server, th, job)
