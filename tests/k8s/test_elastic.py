"""Elastic jobs (``--workers MIN:MAX``) on a real control plane: Kueue admits the Job's
Workload slices (ElasticJobsViaWorkloadSlices), the backend's reconcile resizes the Job; kwok
plays the pods. The team's quota: 8 A100 GPUs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.test_admin_apply import teams_for
from tests.k8s.test_backend import Team, applied_team, wait_for
from tests.k8s.test_controller import Deployment, recorded
from trainhub.backends.kubernetes import elastic
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.jobs.states import JobState
from trainhub.teams import Controller

KUEUE = ("kueue.x-k8s.io", "v1beta2")
GPU = "nvidia.com/gpu"


def workers_events(team: Team, job_id: str) -> list[dict[str, Any]]:
    return [e for e in team.events(job_id) if e["type"] == "workers"]


def reserved_gpus(team: Team) -> int:
    """The GPUs Kueue holds for the team's admitted Workloads, all slices together."""
    workloads = client.CustomObjectsApi(team.api).list_namespaced_custom_object(
        *KUEUE, team.ns, "workloads"
    )["items"]
    total = 0
    for w in workloads:
        held = elastic.admitted_workers(w)
        if held:
            total += held * int(
                w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"][
                    "requests"
                ][GPU]
            )
    return total


def running_workers(team: Team, job_id: str) -> list[str]:
    return sorted(
        p.metadata.annotations["batch.kubernetes.io/job-completion-index"]
        for p in team.pods(job_id)
        if p.status.phase == "Running" and not p.metadata.deletion_timestamp
    )


def resize_until(team: Team, job_id: str, workers: list[str], timeout: float = 90) -> None:
    """Reconcile (as the controller does on each change) until ``workers`` run, checking the
    quota on every pass."""

    def reached() -> bool:
        team.backend.reconcile()
        assert reserved_gpus(team) <= 8, "Kueue admitted more than the team's quota"
        return running_workers(team, job_id) == workers

    wait_for(f"{job_id} running workers {workers}", reached, timeout)


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    yield from applied_team(k8s_namespace, tmp_path)


@pytest.fixture
def never_preempting(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    """A team whose queue does not preempt within itself: the controller shrinks elastic jobs
    to make room for higher-priority ones instead of Kueue evicting them whole."""
    yield from applied_team(k8s_namespace, tmp_path, preemption={"within_cluster_queue": "Never"})


def test_elastic_job_starts_at_min_and_grows_when_a_blocking_job_ends(team: Team) -> None:
    blocker = team.submit("blocker", gpus=6)
    team.wait_state(blocker, JobState.RUNNING)
    job_id = team.submit("elastic", workers="1:3", gpus=2)  # type: ignore[arg-type]
    team.wait_state(job_id, JobState.RUNNING)
    resize_until(team, job_id, ["0"])
    for _ in range(3):  # no room: it stays at MIN
        team.backend.reconcile()
    assert running_workers(team, job_id) == ["0"]
    team.end_pods(blocker, result="Succeeded")
    team.wait_state(blocker, JobState.SUCCEEDED)
    resize_until(team, job_id, ["0", "1", "2"])
    wait_for(
        "the grown size recorded",
        lambda: team.backend.reconcile() or len(workers_events(team, job_id)) >= 2,
    )
    events = workers_events(team, job_id)
    assert [(e["previous"], e["workers"]) for e in events] == [(None, 1), (1, 3)]
    assert events[0]["reason"] == "admitted" and "room for 2 more" in events[1]["reason"]
    team.end_pods(job_id, result="Succeeded")
    team.wait_state(job_id, JobState.SUCCEEDED)


def test_elastic_job_shrinks_for_a_higher_priority_job(never_preempting: Team) -> None:
    team = never_preempting
    job_id = team.submit("elastic", workers="1:3", gpus=2, priority="low")  # type: ignore[arg-type]
    team.wait_state(job_id, JobState.RUNNING)
    resize_until(team, job_id, ["0", "1", "2"])  # 6 of 8 GPUs
    urgent = team.submit("urgent", gpus=4, priority="high")
    resize_until(team, job_id, ["0", "1"])
    team.wait_state(urgent, JobState.RUNNING)
    assert team.state(job_id) == JobState.RUNNING
    wait_for(
        "the shrink recorded",
        lambda: team.backend.reconcile() or len(workers_events(team, job_id)) >= 3,
    )
    events = workers_events(team, job_id)
    assert [(e["previous"], e["workers"]) for e in events] == [(None, 1), (1, 3), (3, 2)]
    assert "higher-priority job waits" in events[2]["reason"] and urgent in events[2]["reason"]
    assert not any(e["type"] == "preempted" for e in team.events(job_id))
    team.end_pods(job_id, result="Succeeded")
    team.wait_state(job_id, JobState.SUCCEEDED)


def test_elastic_jobs_growing_at_once_never_exceed_the_quota(team: Team) -> None:
    """Two elastic jobs of up to 6 GPUs each, resized by two reconcilers at once (a session
    and the controller, say): Kueue admits slices only within the 8 GPUs."""
    jobs = [team.submit(f"elastic-{n}", workers="1:3", gpus=2) for n in range(2)]  # type: ignore[arg-type]
    for job_id in jobs:
        team.wait_state(job_id, JobState.RUNNING)
    peaks: list[int] = []
    stop = threading.Event()

    def reconcile_loop(backend: KubernetesBackend) -> None:
        while not stop.is_set():
            backend.reconcile()

    second = KubernetesBackend(team.backend.teams, team.ns, api_client=team.api)
    threads = [threading.Thread(target=reconcile_loop, args=(b,)) for b in (team.backend, second)]
    for t in threads:
        t.start()
    try:

        def settled() -> bool:
            peaks.append(reserved_gpus(team))
            sizes = [len(running_workers(team, j)) for j in jobs]
            return sum(sizes) == 4 and min(sizes) >= 1

        wait_for("both grown into the quota", settled, 90)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert max(peaks) <= 8
    for job_id in jobs:
        team.end_pods(job_id, result="Succeeded")
        team.wait_state(job_id, JobState.SUCCEEDED)


def test_with_nobody_logged_in_the_controller_grows_it_and_usage_counts_each_size(
    k8s_namespace: Any, tmp_path: Path
) -> None:
    teams = teams_for([k8s_namespace.name], tmp_path)
    teams = teams.model_copy(update={"controller": Controller(namespace=f"{k8s_namespace.name}-c")})
    deployment = Deployment(k8s_namespace, teams, tmp_path)
    team = Team(k8s_namespace, k8s_namespace.name, teams, tmp_path)
    assert team.backend.controlled  # the service's reconcile does nothing: the controller's job
    try:
        deployment.start("solo")
        blocker = team.submit("blocker", gpus=6)
        recorded(team, blocker, JobState.RUNNING)
        job_id = team.submit("elastic", workers="1:3", gpus=2)  # type: ignore[arg-type]
        recorded(team, job_id, JobState.RUNNING)
        time.sleep(3)  # at one worker a while (Kueue's times are whole seconds)
        team.end_pods(blocker, result="Succeeded")
        wait_for("grown to 3", lambda: (1, 3) in sizes(team, job_id), 90)
        wait_for("3 running", lambda: len(running_workers(team, job_id)) == 3, 60)
        time.sleep(2)
        team.end_pods(job_id, result="Succeeded")
        recorded(team, job_id, JobState.SUCCEEDED)
        row = team.service.job_usage(job_id, user="ada")
        # 2 GPUs a while, then 6: less than 6 GPUs throughout, more than 2
        assert 2 * row.wall_s < row.gpu_allocated_s < 6 * row.wall_s, row
    finally:
        deployment.close()
        team.cleanup()


def sizes(team: Team, job_id: str) -> list[tuple[int | None, int]]:
    return [(e["previous"], e["workers"]) for e in workers_events(team, job_id)]
