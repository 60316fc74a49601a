"""Waits that cannot heal, on the real node (its kubelet and containerd): an image that is not
in the node's store (nothing outside can be reached, so the pull fails) and a dataset claim
that does not exist. Each is explained in the sentence the researcher reads, then ends the job
with a verdict naming it, its Job gone and its quota released.

Marked real_node by their fixture (tests/fixtures/k8s.py); no image is imported, so each costs
seconds: the pull fails at once, the scheduler refuses the claim at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.test_admin_apply import apply_teams
from tests.k8s.test_backend import wait_for
from tests.k8s.test_real_jobs import RealTeam, open_umask  # noqa: F401 (a fixture)
from tests.k8s.test_waits import jobs_in, reserved, sentence
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import FailureClass, JobState
from trainhub.teams import parse_teams

# What root writes stays writable for the pods' user (see test_real_jobs).
pytestmark = pytest.mark.usefixtures("open_umask")
ABSENT = "registry.invalid/trainhub/absent:1"  # in no store, and no registry to pull it from


def no_grace_team(k8s_namespace: Any, node: Any, tmp_path: Path, **team_extra: Any) -> RealTeam:
    """A real-node team that ends a stuck job as soon as its cause is certain."""
    return RealTeam(k8s_namespace, node, ABSENT, tmp_path, wait_grace_minutes=0, **team_extra)


@pytest.fixture
def stuck_team(k8s_namespace: Any, k8s_real_node: Any, tmp_path: Path) -> Iterator[RealTeam]:
    team = no_grace_team(
        k8s_namespace, k8s_real_node, tmp_path, datasets={"ghost": {"claim": "ghost-claim"}}
    )
    yield team
    team.cleanup()


def ends(team: RealTeam, job_id: str, words: str) -> Any:
    """The sentence while it waits, then (the grace period being 0) the end it leads to."""
    reason = sentence(team, job_id, words, timeout=120)
    assert team.service.describe(job_id, user=team.user).state == JobState.STARTING
    ended = team.until(job_id, "ended", lambda d: d.state == JobState.FAILED, timeout=60)
    wait_for("the Job gone", lambda: jobs_in(team) == [])
    wait_for("the quota released", lambda: reserved(team, f"{team.ns}-real") == "0")
    return reason, ended


def test_an_image_not_in_the_nodes_store_ends_the_job_naming_it(stuck_team: RealTeam) -> None:
    spec = stuck_team.script_spec("train.py", workers=1, retry={"environment": 0})
    job_id = stuck_team.submit_spec(spec)
    reason, ended = ends(stuck_team, job_id, "cannot pull its image")
    assert reason.startswith(f"worker 0 cannot pull its image {ABSENT}")
    assert "(Kubernetes: " in reason
    assert ended.verdict.failure_class == FailureClass.ENVIRONMENT
    assert ended.verdict.reason.startswith(f"worker 0 cannot pull its image {ABSENT}")


def test_a_claim_that_does_not_exist_ends_the_job_naming_it(stuck_team: RealTeam) -> None:
    spec = {
        **stuck_team.script_spec("train.py", workers=1, retry={"environment": 0}),
        "datasets": ["ghost"],
    }
    job_id = stuck_team.submit_spec(spec)
    reason, ended = ends(stuck_team, job_id, "ghost-claim")
    assert reason.startswith("worker 0 cannot be scheduled: the volume claim ghost-claim")
    assert ended.verdict.failure_class == FailureClass.ENVIRONMENT


def test_pods_of_a_pool_without_the_nodes_toleration_are_explained(
    k8s_namespace: Any, k8s_real_node: Any, tmp_path: Path
) -> None:
    """The walk-through of the issue: a pool that selects the real node by its labels but
    declares no toleration. Submit refuses it, naming the taint, before anything is created."""
    team = RealTeam(k8s_namespace, k8s_real_node, ABSENT, tmp_path)
    try:
        pool = team.data["pools"][0]
        pool.pop("tolerations")
        teams = parse_teams(team.data)
        apply_teams(k8s_namespace, teams)
        team.backend.teams = teams
        with pytest.raises(SpecError) as e:
            team.service.submit(team.script_spec("train.py", workers=2), user=team.user)
        assert e.value.errors[0].field == "queue"
        assert k8s_real_node.taint["key"] in e.value.errors[0].message
        assert client.BatchV1Api(team.api).list_namespaced_job(team.ns).items == []
    finally:
        team.cleanup()


def test_a_request_larger_than_the_node_ends_the_job_with_the_figures(
    k8s_namespace: Any, k8s_real_node: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More CPU than the real node has (a quota that would admit it): the scheduler's
    "Insufficient cpu", told with the request and the node's allocatable, then the end."""
    pool = f"{k8s_namespace.name}-real"
    quota = {pool: {"gpus": 2, "cpu": "64", "memory": "6Gi"}}
    team = no_grace_team(k8s_namespace, k8s_real_node, tmp_path, quota=quota)
    try:
        # As if the node shrank after the submit was checked (submit refuses it otherwise).
        monkeypatch.setattr(team.backend, "check_fits", lambda record, placement: None)
        spec = team.script_spec("train.py", workers=1, cpu=16, retry={"infrastructure": 0})
        job_id = team.submit_spec(spec)
        reason, ended = ends(team, job_id, "asks for more")
        assert reason.startswith("worker 0 asks for more CPU (16 CPU, 1500Mi memory; its pool's")
        assert "Insufficient cpu" in reason
        assert ended.verdict.failure_class == FailureClass.INFRASTRUCTURE
        assert ended.verdict.reason.endswith("; ended, as waiting cannot mend it")
    finally:
        team.cleanup()
