"""The MLflow mirror's pure parts and its bookkeeping: a job as MLflow requests (tags,
parameters, metrics with steps, within MLflow's batch limits), the teams file's ``mlflow:``
(each mistake named), the credentials read from files, the durable cursor, and a pass against a
server that is not there (the job's cursor backs off; nothing raises)."""

from __future__ import annotations

import copy
import socket
from pathlib import Path

import pytest
import yaml

from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.teams import TeamsError, load_teams, parse_teams
from trainhub.tracking import batches
from trainhub.tracking import cursor as cursors
from trainhub.tracking.config import MlflowServer
from trainhub.tracking.models import queue_model_version
from trainhub.tracking.pending import enroll, enroll_new, retry_delay, run_pass

REPO = Path(__file__).resolve().parents[2]
SPEC = {
    "name": "train",
    "source": {"path": "nb/train.ipynb"},
    "parameters": {"lr": 0.01, "model": {"layers": 3, "act": "relu"}, "tag": "x"},
}


def record(job_dir: str = "/nowhere", **fields) -> JobRecord:
    values = {
        "id": "train-1a2b",
        "name": "train",
        "user": "ada",
        "team": "vision",
        "priority": 1,
        "state": JobState.RUNNING,
        "spec": parse_spec(SPEC),
        "job_dir": job_dir,
        "gpus": 2,
        "created_at": 100.0,
        **fields,
    }
    return JobRecord(**values)


def test_a_jobs_tags_say_who_what_and_where_it_stands() -> None:
    verdict = Verdict(failure_class=FailureClass.CODE, reason="KeyError in cell 3, line 2")
    lineage = {
        "ran_image": {"image_id": "ghcr.io/x/pytorch@sha256:abc"},
        "git": {"commit": "0123abc"},
    }
    tags = batches.run_tags(record(state=JobState.FAILED, verdict=verdict), lineage)
    assert tags[batches.JOB_ID_TAG] == "train-1a2b"
    assert (tags["trainhub.user"], tags["trainhub.team"]) == ("ada", "vision")
    assert tags["trainhub.notebook"] == "nb/train.ipynb" and "trainhub.script" not in tags
    assert tags["trainhub.image_digest"] == "ghcr.io/x/pytorch@sha256:abc"
    assert (tags["trainhub.state"], tags["trainhub.failure_class"]) == ("failed", "code")
    assert tags["trainhub.verdict"] == "KeyError in cell 3, line 2"
    assert tags["mlflow.runName"] == "train" and tags["mlflow.user"] == "ada"
    assert tags["mlflow.source.git.commit"] == "0123abc"
    # What is not known is not sent (MLflow keeps no empty tag)
    assert "trainhub.sweep" not in batches.run_tags(record(), None)
    assert (
        batches.run_tags(record(), {"ran_image": {"backend": "local", "environment": "/v"}})[
            "trainhub.image_digest"
        ]
        == "local environment /v"
    )


def test_parameters_are_flat_text_and_the_jobs_size() -> None:
    assert batches.run_params(record()) == {
        "lr": "0.01",
        "model.layers": "3",
        "model.act": "relu",
        "tag": "x",
        "trainhub.gpus": "2",
        "trainhub.workers": "1",
    }


def test_scalars_become_metrics_with_their_steps() -> None:
    rows = [
        {"time": 1.5, "step": 0, "name": "loss", "value": 2.0, "rank": 0, "attempt": 0},
        {"time": 2.0, "step": 1, "name": "loss", "value": None, "nonfinite": "nan", "rank": 0},
        {"time": 2.0, "step": 1, "name": "acc@1", "value": 0.5, "rank": 1},
        {"time": 2.5, "step": 2, "name": "loss", "value": float("-inf"), "rank": 0},
        {"time": 3.0, "name": "no step", "value": 1.0},
        {"time": 3.0, "step": 3, "name": "text", "value": "oops"},
    ]
    assert batches.metrics(rows) == [
        {"key": "loss", "value": 2.0, "timestamp": 1500, "step": 0},
        {"key": "loss", "value": "NaN", "timestamp": 2000, "step": 1},
        {"key": "acc_1/rank1", "value": 0.5, "timestamp": 2000, "step": 1},
        {"key": "loss", "value": "-Infinity", "timestamp": 2500, "step": 2},
    ]


def test_batches_keep_within_mlflows_limits() -> None:
    metrics = [{"key": "m", "value": 1.0, "timestamp": 0, "step": i} for i in range(2500)]
    params = {f"p{i}": "v" for i in range(150)}
    bodies = batches.log_batches("r1", metrics=metrics, params=params, tags={"a": "b"})
    assert [len(b.get("metrics", b.get("params", b.get("tags", [])))) for b in bodies] == [
        1000,
        1000,
        500,
        100,
        50,
        1,
    ]
    assert all(b["run_id"] == "r1" and len(b) == 2 for b in bodies)
    assert [m["step"] for b in bodies[:3] for m in b["metrics"]] == list(range(2500))
    assert batches.log_batches("r1") == []
    assert [batches.run_status(s) for s in JobState] == [
        "RUNNING", "RUNNING", "RUNNING", "RUNNING", "FINISHED", "FAILED", "KILLED", "RUNNING"
    ]  # fmt: skip


def test_the_teams_file_names_each_mistake_of_its_mlflow_section(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())
    good = copy.deepcopy(data)
    good["teams"][0]["mlflow"] = {
        "tracking_uri": "https://mlflow.example.org/",
        "token_file": "/etc/trainhub/mlflow/token",
    }
    vision = parse_teams(good).team("vision")
    assert vision.mlflow is not None and vision.mlflow.tracking_uri == "https://mlflow.example.org"
    assert vision.mlflow.experiment_for("vision") == "trainhub-vision"
    assert load_teams(REPO / "hub_config" / "teams.yaml").team("nlp").mlflow is None
    bad = copy.deepcopy(data)
    bad["teams"][0]["mlflow"] = {"tracking_uri": "https://ada:pw@mlflow.example.org"}
    bad["teams"][1]["mlflow"] = {"tracking_uri": "ftp://x", "token_file": "token"}
    with pytest.raises(TeamsError) as refused:
        parse_teams(bad)
    paths = {p for p, _ in refused.value.errors}
    assert paths == {
        "teams[0].mlflow.tracking_uri",
        "teams[1].mlflow.tracking_uri",
        "teams[1].mlflow.token_file",
    }
    assert "no credentials" in str(refused.value)


def test_credentials_are_read_from_their_files_when_sent(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    server = MlflowServer(tracking_uri="http://m:5000", token_file=str(token))
    assert server.authorization() == "Bearer t0ken"
    token.write_text("rotated")
    assert server.authorization() == "Bearer rotated"
    (tmp_path / "pw").write_text("s3cret")
    basic = MlflowServer(tracking_uri="http://m", username="u", password_file=str(tmp_path / "pw"))
    assert basic.authorization() == "Basic dTpzM2NyZXQ="
    token.unlink()
    with pytest.raises(OSError, match=r"mlflow\.token_file: cannot read token"):
        server.authorization()
    with pytest.raises(ValueError, match="go together"):
        MlflowServer(tracking_uri="http://m", username="u")


def test_a_cursor_is_pending_until_done_and_a_model_version_opens_it_again(
    tmp_path: Path,
) -> None:
    assert enroll(tmp_path, "train-1a2b") and not enroll(tmp_path, "train-1a2b")
    assert [c.job_id for c in cursors.pending(tmp_path)] == ["train-1a2b"]
    cursor = cursors.load(tmp_path, "train-1a2b")
    assert cursor is not None
    cursor.done, cursor.run_id = True, "r1"
    cursors.save(tmp_path, cursor)
    assert cursors.pending(tmp_path) == [] and not enroll(tmp_path, "train-1a2b")
    assert queue_model_version(tmp_path, "train-1a2b", "classifier", 7, files=tmp_path / "w")
    assert queue_model_version(tmp_path, "train-1a2b", "classifier", 7)  # the same: once
    assert not queue_model_version(tmp_path, "other-1", "classifier", 8)  # not mirrored
    (again,) = cursors.pending(tmp_path)
    assert again.run_id == "r1" and not again.done
    assert [(m["name"], m["version"], m["sent"]) for m in again.models] == [
        ("classifier", "7", False)
    ]
    with pytest.raises(ValueError, match="job id"):
        cursors.load(tmp_path, "../x")


def test_a_server_that_is_not_there_leaves_the_cursor_backing_off(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = MlflowServer(tracking_uri=f"http://127.0.0.1:{port}")
    job = record(job_dir=str(tmp_path / "job"))
    state = tmp_path / "mirror"
    enroll(state, job.id)
    result = run_pass(state, lambda _: job, lambda _: server, now=1000.0)
    assert (result.synced, result.failed) == (0, 1)
    (cursor,) = cursors.pending(state)
    assert cursor.failures == 1 and cursor.next_try == 1000.0 + retry_delay(1)
    assert "unreachable" in (cursor.error or "") and cursor.run_id is None
    # Not due yet: not tried; then again, backing off further.
    assert run_pass(state, lambda _: job, lambda _: server, now=1001.0).failed == 0
    run_pass(state, lambda _: job, lambda _: server, now=cursor.next_try)
    (cursor,) = cursors.pending(state)
    assert cursor.failures == 2 and retry_delay(2) == 2 * retry_delay(1)
    # A job that is gone, or a team that mirrors no more: done, said why.
    run_pass(state, lambda _: None, lambda _: server, now=10_000.0)
    assert cursors.pending(state) == []
    assert cursors.load(state, job.id).error == "the job is gone"  # type: ignore[union-attr]


def test_a_team_that_starts_mirroring_enrolls_its_jobs_from_then_on(tmp_path: Path) -> None:
    old = record(id="old-1", state=JobState.SUCCEEDED, finished_at=1.0)
    running = record(id="running-1", created_at=1.0)
    assert enroll_new(tmp_path, [old, running]) == 1
    later = record(
        id="later-1", state=JobState.FAILED, finished_at=(tmp_path / ".since").stat().st_mtime + 5
    )
    assert enroll_new(tmp_path, [old, running, later]) == 1
    assert sorted(c.job_id for c in cursors.pending(tmp_path)) == ["later-1", "running-1"]
