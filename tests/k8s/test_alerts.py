"""Alerts of Kubernetes jobs on the real control plane: a preemption by Kueue and a failed
pod are announced once each, from the reconcile that records them in the owner's session, to
a real HTTP receiver."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.k8s import test_backend
from tests.k8s.test_backend import Team
from tests.local.conftest import wait_for
from tests.local.test_alerts import Receiver
from trainhub.jobs.states import JobState

team = test_backend.team  # the fixture: a team's namespace, queues and backend


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    hook = Receiver()
    home = tmp_path / "alerts-home"
    home.mkdir()
    (home / "alerts.yaml").write_text(json.dumps({"webhooks": [hook.url]}))
    monkeypatch.setenv("TRAINHUB_HOME", str(home))
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")  # a session of the jobs' owner
    yield hook
    hook.close()


def submit(team: Team, name: str, priority: str, notify: list[str], **fields: Any) -> str:
    spec = {
        "name": name,
        "source": {"path": "train.py"},
        "priority": priority,
        "team": team.ns,
        "resources": {"workers": 1, "gpus_per_worker": 8},
        "notify": notify,
        **fields,
    }
    return team.service.submit(spec, user="ada").id


def test_a_preemption_and_a_failure_are_announced_once_each(
    team: Team, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    low = submit(team, "low", "low", ["preemption", "failure"], retry={"infrastructure": 0})
    team.wait_state(low, JobState.RUNNING)
    high = submit(team, "high", "high", [])
    team.wait_state(high, JobState.RUNNING)
    team.wait_state(low, JobState.QUEUED)
    wait_for(lambda: receiver.posts, 30, "the preemption alert")
    team.backend.reconcile()
    time.sleep(1)
    ((_, body),) = receiver.posts
    assert body["text"].startswith(f"trainhub job low ({low}) was preempted")

    team.service.cancel(high, user="ada")
    team.wait_state(low, JobState.RUNNING, timeout=120)
    team.end_pods(low, result="Failed", exit_code="137", reason="OOMKilled")
    failed = team.wait_state(low, JobState.FAILED)
    wait_for(lambda: len(receiver.posts) == 2, 30, "the failure alert")
    team.backend.reconcile()
    time.sleep(1)
    assert len(receiver.posts) == 2
    text = receiver.posts[1][1]["text"]
    assert text == f"trainhub job low ({low}) failed: {failed.verdict.reason}"

    # Reconciled in another user's session, ada's job is recorded but not announced there.
    monkeypatch.setenv("JUPYTERHUB_USER", "bo")
    other = submit(team, "other", "normal", ["failure"], retry={"infrastructure": 0})
    team.wait_state(other, JobState.RUNNING, timeout=120)
    team.end_pods(other, result="Failed", exit_code="137", reason="OOMKilled")
    team.wait_state(other, JobState.FAILED)
    time.sleep(2)
    assert len(receiver.posts) == 2
    outbox = Path(os.environ["TRAINHUB_HOME"]) / "alerts" / "outbox"
    assert list(outbox.glob("*.json")) == []  # nothing queued either
    assert len((outbox / "delivered.jsonl").read_text().splitlines()) == 2
