"""trainhub's retries on a real control plane (kwok plays the pods, told how to end): a failed
attempt the retry policy allows is replaced, after its backoff, by the next attempt's Job; a
code error or used-up retries end the job. The real node runs the same with real pods
(tests/k8s/test_real_jobs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.k8s.test_backend import Team, applied_team, wait_for
from trainhub.backends.kubernetes.recovery import RETRY_ANNOTATION
from trainhub.jobs.states import FailureClass, JobState


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    yield from applied_team(k8s_namespace, tmp_path)


def submit(team: Team, retry: dict[str, Any]) -> str:
    spec = {
        "name": "flaky",
        "source": {"path": "train.py"},
        "team": team.ns,
        "resources": {"workers": 2, "gpus_per_worker": 1},
        "retry": retry,
    }
    return team.service.submit(spec, user="ada").id


def reconciled(team: Team, job_id: str, test: Any, what: str, timeout: float = 60) -> Any:
    def check() -> Any:
        team.backend.reconcile()
        described = team.service.describe(job_id, user="ada")
        return described if test(described) else None

    return wait_for(f"{job_id}: {what}", check, timeout)


def save_checkpoint(team: Team, job_id: str, step: int, monkeypatch: Any) -> Path:
    """A checkpoint in the job's directory, saved as a rank saves it."""
    import trainhub.checkpoint as ckpt

    monkeypatch.delenv("TRAINHUB_JOB_DIR", raising=False)
    monkeypatch.setenv(
        "TRAINHUB_CHECKPOINT_DIR", str(team.backend.jobs_root / job_id / "checkpoints")
    )
    info = ckpt.save({"weights": [1.0, 2.0]}, step).wait()
    assert info is not None
    return info.path


def test_a_killed_worker_is_retried_after_the_backoff_from_the_latest_checkpoint(
    team: Team, monkeypatch: Any
) -> None:
    job_id = submit(team, {"infrastructure": 1, "backoff_seconds": 2})
    team.wait_state(job_id, JobState.RUNNING)
    first_uid = team.backend.batch.read_namespaced_job(job_id, team.ns).metadata.uid
    saved = save_checkpoint(team, job_id, 19, monkeypatch)
    team.end_pods(job_id, result="Failed", exit_code="137")

    retrying = reconciled(team, job_id, lambda d: d.state == JobState.RETRYING, "retrying")
    job = team.backend.batch.read_namespaced_job(job_id, team.ns)
    assert job.metadata.uid == first_uid and RETRY_ANNOTATION in job.metadata.annotations
    assert retrying.attempt == 0  # until the next attempt's Job exists
    events = team.events(job_id)
    (verdict,) = [e for e in events if e["type"] == "verdict"]
    assert verdict["failure_class"] == FailureClass.INFRASTRUCTURE.value and verdict["retriable"]
    (retry,) = [e for e in events if e["type"] == "retry"]
    assert (retry["attempt"], retry["backoff_seconds"], retry["resume_step"]) == (1, 2.0, 19)
    assert retry["not_before"] - retry["time"] == pytest.approx(2.0, abs=0.5)

    again = reconciled(team, job_id, lambda d: d.attempt == 1, "attempt 1", timeout=30)
    job = team.backend.batch.read_namespaced_job(job_id, team.ns)
    assert job.metadata.uid != first_uid and RETRY_ANNOTATION not in job.metadata.annotations
    assert again.retries == {"infrastructure": 1}
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert (env["TRAINHUB_ATTEMPT"], env["TRAINHUB_RESUME_FROM"]) == ("1", str(saved))
    assert f"--rdzv-id={job_id}-1" in job.spec.template.spec.containers[0].command
    # The headless Service stayed, now owned by the new Job.
    service = team.backend.core.read_namespaced_service(job_id, team.ns)
    assert [o.uid for o in service.metadata.owner_references] == [job.metadata.uid]

    team.wait_state(job_id, JobState.RUNNING)
    team.end_pods(job_id, result="Succeeded")
    done = reconciled(team, job_id, lambda d: d.state.terminal, "the end")
    assert done.state == JobState.SUCCEEDED and done.attempt == 1

    def states() -> list[tuple[str, int | None]]:
        team.backend.reconcile()  # the read above may see the end before reconcile records it
        return [(e["state"], e.get("attempt")) for e in team.events(job_id) if e["type"] == "state"]

    recorded = wait_for(
        "the end recorded", lambda: (s := states()) and s[-1][0] == "succeeded" and s
    )
    assert ("retrying", 1) in recorded and ("starting", 1) not in recorded[-2:]


def test_used_up_retries_and_code_errors_end_the_job(team: Team) -> None:
    job_id = submit(team, {"infrastructure": 0})
    team.wait_state(job_id, JobState.RUNNING)
    team.end_pods(job_id, result="Failed", exit_code="137")
    done = reconciled(team, job_id, lambda d: d.state.terminal, "the end")
    assert done.state == JobState.FAILED and done.verdict.failure_class == "infrastructure"
    assert not [e for e in team.events(job_id) if e["type"] == "retry"]
