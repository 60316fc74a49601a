"""The controller's promises on the real node, with no session and no CLI call reconciling: a
killed training pod is retried and its next attempt resumes from the job's checkpoint, decided
and carried out by `trainhub controller` alone (its own process, its ServiceAccount's token)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.k8s import test_real_jobs
from tests.k8s.test_backend import wait_for
from tests.k8s.test_controller import Deployment
from tests.k8s.test_real_jobs import SLOW, RealTeam
from trainhub.jobs.states import FailureClass, JobState

# The fixtures: the curated image imported into the node, and an umask the pods' user can write.
pytorch_image, open_umask = test_real_jobs.pytorch_image, test_real_jobs.open_umask


class ControlledTeam(RealTeam):
    """A real-node team whose teams file runs the controller: its service never reconciles,
    and neither does this test."""

    def more_data(self, ns: str) -> dict[str, Any]:
        # Its members share the pods' user: the test's service (root) hands each job directory
        # to it (tests/hub/test_real_member_files.py runs members of their own).
        return {"controller": {"namespace": f"{ns}-c", "per_user_ids": False}}

    def until(self, job_id: str, what: str, test: Any, timeout: float = 240) -> Any:
        def check() -> Any:
            described = self.service.describe(job_id, user=self.user)
            return described if test(described) else None

        return wait_for(f"{job_id}: {what}", check, timeout)


@pytest.fixture
def controlled(
    k8s_namespace: Any, k8s_real_node: Any, pytorch_image: str, tmp_path: Path, open_umask: None
) -> Iterator[tuple[ControlledTeam, Deployment]]:
    team = ControlledTeam(k8s_namespace, k8s_real_node, pytorch_image, tmp_path)
    assert team.backend.controlled
    (tmp_path / "controller").mkdir()
    deployment = Deployment(k8s_namespace, team.backend.teams, tmp_path / "controller")
    deployment.start("only")
    yield team, deployment
    deployment.close()
    team.cleanup()


def test_with_nobody_logged_in_a_killed_pod_is_retried_and_resumes_from_its_checkpoint(
    controlled: tuple[ControlledTeam, Deployment],
) -> None:
    t, _ = controlled
    job_id = t.submit_spec(t.spec(SLOW, retry={"infrastructure": 1, "backoff_seconds": 1}))
    t.kill_worker_once_saved(job_id, worker=1)

    done = t.ended(job_id)
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(job_id, 0)[-3000:])
    assert done.attempt == 1 and done.retries == {"infrastructure": 1}
    events = t.events(job_id)
    (verdict,) = [e for e in events if e["type"] == "verdict"]
    assert verdict["failure_class"] == FailureClass.INFRASTRUCTURE.value
    assert verdict["reason"] == "worker 1 was killed by SIGKILL", verdict
    (retry,) = [e for e in events if e["type"] == "retry"]
    resumed = [line for line in t.rank_log(job_id, 0).splitlines() if "resumed from step" in line]
    assert resumed and int(resumed[-1].rsplit(" ", 1)[1]) >= retry["resume_step"] >= 19
