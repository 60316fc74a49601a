"""The Kubernetes backend on a real control plane: Kueue admits, queues, preempts and lends;
kwok plays the pods (their ending is told through kwok.trainhub.io/* annotations)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from tests.fixtures.k8s import shared_claim
from tests.k8s.test_admin_apply import apply_teams, teams_for
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.jobs.service import JobService
from trainhub.jobs.states import FailureClass, JobState
from trainhub.usage.kueue import workload_times
from trainhub.usage.models import UsageBy, UsageQuery

T = TypeVar("T")


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Team:
    def __init__(self, k8s_namespace: Any, ns: str, teams: Any, tmp: Path):
        self.ns, self.api = ns, k8s_namespace.api
        workspace = tmp / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "train.py").write_text("print('training')\n")
        shared_claim(client.CoreV1Api(self.api), ns, tmp / ns)
        self.backend = KubernetesBackend(teams, ns, api_client=self.api)
        self.service = JobService(
            self.backend, workspace_root=workspace, jobs_root=self.backend.jobs_root
        )

    def submit(
        self,
        name: str,
        *,
        workers: int = 1,
        gpus: int = 8,
        priority: str = "normal",
        retry: dict[str, Any] | None = None,
    ) -> str:
        spec = {
            "name": name,
            "source": {"path": "train.py"},
            "priority": priority,
            "team": self.ns,
            "resources": {"workers": workers, "gpus_per_worker": gpus},
            **({"retry": retry} if retry is not None else {}),
        }
        return self.service.submit(spec, user="ada").id

    def state(self, job_id: str) -> JobState:
        return self.service.describe(job_id, user="ada").state

    def wait_state(self, job_id: str, state: JobState, timeout: float = 60) -> Any:
        """Once the job reads ``state``, a reconcile (which the server runs periodically)
        records it in the job directory, as reads never do."""

        def reached() -> Any:
            described = self.service.describe(job_id, user="ada")
            if described.state != state:
                return None
            self.backend.reconcile()
            return described

        return wait_for(f"{job_id} {state.value}", reached, timeout)

    def pods(self, job_id: str) -> list[Any]:
        return (
            client.CoreV1Api(self.api)
            .list_namespaced_pod(self.ns, label_selector=f"trainhub.io/job-id={job_id}")
            .items
        )

    def end_pods(self, job_id: str, **annotations: str) -> None:
        for pod in self.pods(job_id):
            client.CoreV1Api(self.api).patch_namespaced_pod(
                pod.metadata.name,
                self.ns,
                {
                    "metadata": {
                        "annotations": {
                            f"kwok.trainhub.io/{k.replace('_', '-')}": v
                            for k, v in annotations.items()
                        }
                    }
                },
            )

    def events(self, job_id: str) -> list[dict[str, Any]]:
        return self.service.events(job_id, user="ada")[0]

    def delete_job(self, job_id: str, *, wait: bool = True) -> None:
        """Delete the job's Job object as a user of the cluster might (its pods first), and
        unless ``wait`` is false, wait until it is gone."""
        client.BatchV1Api(self.api).delete_namespaced_job(
            job_id, self.ns, propagation_policy="Foreground"
        )
        if wait:
            wait_for(
                "Job gone",
                lambda: (
                    not self.backend.batch.list_namespaced_job(
                        self.ns, label_selector=f"trainhub.io/job-id={job_id}"
                    ).items
                ),
            )

    def cleanup(self) -> None:
        client.CoreV1Api(self.api).delete_persistent_volume(f"{self.ns}-shared")


def applied_team(k8s_namespace: Any, tmp_path: Path, **teams_fields: Any) -> Iterator[Team]:
    """For a fixture to ``yield from``: the namespace's team (``teams_for`` with these fields)
    applied to the cluster, its team volume removed after."""
    ns = k8s_namespace.name
    teams = teams_for([ns], tmp_path, **teams_fields)
    apply_teams(k8s_namespace, teams)
    t = Team(k8s_namespace, ns, teams, tmp_path)
    yield t
    t.cleanup()


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    yield from applied_team(k8s_namespace, tmp_path)


def test_job_is_admitted_runs_and_succeeds(team: Team) -> None:
    job_id = team.submit("two-workers", workers=2, gpus=4)
    team.wait_state(job_id, JobState.RUNNING)
    pods = team.pods(job_id)
    assert sorted(
        p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pods
    ) == ["0", "1"]
    assert all(p.spec.node_name.startswith("kwok-a100-") for p in pods)
    team.end_pods(job_id, result="Succeeded")
    done = team.wait_state(job_id, JobState.SUCCEEDED)
    assert done.verdict is None and done.started_at is not None
    states = [e["state"] for e in team.events(job_id) if e["type"] == "state"]
    assert states[0] == "queued" and states[-1] == "succeeded" and "running" in states
    assert any(e["type"] == "k8s_event" for e in team.events(job_id))


def test_job_beyond_quota_waits_with_a_reason(team: Team) -> None:
    first = team.submit("big")
    team.wait_state(first, JobState.RUNNING)
    second = team.submit("more", gpus=4)

    expected = (
        f"waiting for 4 nvidia.com/gpu in pool {team.ns}-a100 "
        f"in ClusterQueue {team.ns} (8 of 8 in use)"
    )

    def reason() -> str | None:
        # Kueue refreshes the ClusterQueue's usage figures a moment after it admits.
        return team.service.describe(second, user="ada").wait_reason

    wait_for(f"the wait reason {expected!r}", lambda: reason() == expected)
    assert team.state(second) == JobState.QUEUED


def test_higher_priority_preempts_lower(team: Team) -> None:
    low = team.submit("low", priority="low")
    team.wait_state(low, JobState.RUNNING)
    high = team.submit("high", priority="high")
    team.wait_state(high, JobState.RUNNING)
    team.wait_state(low, JobState.QUEUED)
    assert any(e["type"] == "preempted" for e in team.events(low))
    assert team.service.describe(low, user="ada").retries.get("preempted", 0) >= 1


def test_failing_pod_gets_its_verdict(team: Team) -> None:
    job_id = team.submit("oom", gpus=1, retry={"infrastructure": 0})  # the verdict is final
    team.wait_state(job_id, JobState.RUNNING)
    team.end_pods(job_id, result="Failed", exit_code="137", reason="OOMKilled")
    failed = team.wait_state(job_id, JobState.FAILED)
    assert failed.verdict.failure_class == FailureClass.INFRASTRUCTURE
    assert failed.verdict.reason == "worker 0 was killed by the kernel's out-of-memory killer"
    # The verdict is in the job directory too, and outlives the Job object.
    team.delete_job(job_id)
    again = team.service.describe(job_id, user="ada")
    assert (again.state, again.verdict.reason) == (JobState.FAILED, failed.verdict.reason)


def test_cancel_removes_job_service_and_pods(team: Team) -> None:
    job_id = team.submit("cancel-me", workers=2, gpus=1)
    team.wait_state(job_id, JobState.RUNNING)
    cancelled = team.service.cancel(job_id, user="ada", reason="not needed")
    assert cancelled.state == JobState.CANCELLED
    core = client.CoreV1Api(team.api)
    wait_for("pods gone", lambda: not team.pods(job_id))
    wait_for(
        "service gone",
        lambda: (
            not core.list_namespaced_service(
                team.ns, label_selector=f"trainhub.io/job-id={job_id}"
            ).items
        ),
    )
    assert team.state(job_id) == JobState.CANCELLED
    # Read from its directory now that the Job is gone: it ran, and for how long.
    described = team.service.describe(job_id, user="ada")
    assert described.verdict.reason == "not needed"
    assert described.started_at is not None
    assert team.backend.get(job_id).admitted_at is not None
    assert described.started_at <= described.finished_at <= time.time()


def test_team_borrows_idle_quota_and_gives_it_back(k8s_namespace: Any, tmp_path: Path) -> None:
    ns = k8s_namespace.name
    other = f"{ns}-b"
    client.CoreV1Api(k8s_namespace.api).create_namespace({"metadata": {"name": other}})
    teams = teams_for([ns, other], tmp_path)
    apply_teams(k8s_namespace, teams)
    a, b = (
        Team(k8s_namespace, ns, teams, tmp_path / "a"),
        Team(k8s_namespace, other, teams, tmp_path / "b"),
    )
    try:
        # 16 GPUs: team a's 8 plus team b's idle 8, borrowed through the cohort.
        wide = a.submit("wide", workers=2, gpus=8)
        a.wait_state(wide, JobState.RUNNING)
        # The Usage panel's quota per pool, as each team's ClusterQueue has it.
        pool = f"{ns}-a100"

        def gpus(t: Team) -> Any:
            return next(
                q
                for q in t.backend.quotas()[0]
                if q.pool == pool and q.resource == "nvidia.com/gpu"
            )

        borrowing = wait_for(
            "a's borrowing in its ClusterQueue",
            lambda: q if (q := gpus(a)).borrowed == 8 else None,
        )
        assert borrowing.used == 16 and gpus(a).nominal == 8 and gpus(a).lendable == 0
        assert (gpus(b).used, gpus(b).nominal, gpus(b).lendable) == (0, 8, 8)
        mine = b.submit("mine", gpus=8)
        b.wait_state(mine, JobState.RUNNING)  # b reclaims its quota ...
        a.wait_state(wide, JobState.QUEUED)  # ... and a's borrowing job goes back to the queue
        assert any(e["type"] == "preempted" for e in a.events(wide))
    finally:
        a.cleanup()
        b.cleanup()
        client.CoreV1Api(k8s_namespace.api).delete_namespace(other, propagation_policy="Background")


def test_usage_of_ended_jobs_reads_kueues_workload_times(team: Team) -> None:
    """Usage figures of jobs with known GPU counts and durations: one holds the whole quota
    for a few seconds while the other waits for it; admission times are Kueue's."""
    first = team.submit("whole-quota")  # 8 GPUs, all of the team's
    team.wait_state(first, JobState.RUNNING)
    second = team.submit("after-it", gpus=4)
    held = 4.0
    time.sleep(held)
    team.end_pods(first, result="Succeeded")
    team.wait_state(first, JobState.SUCCEEDED)
    team.wait_state(second, JobState.RUNNING)
    time.sleep(2.0)
    team.end_pods(second, result="Succeeded")
    team.wait_state(second, JobState.SUCCEEDED)

    workloads = {
        w["metadata"]["ownerReferences"][0]["name"]: workload_times(w)
        for w in client.CustomObjectsApi(team.api).list_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", team.ns, "workloads"
        )["items"]
    }
    rows = {}
    for job_id in (first, second):
        record = team.service.describe(job_id, user="ada")
        row = team.service.job_usage(job_id, user="ada")
        rows[job_id] = row
        runtime = record.finished_at - record.started_at
        assert row.wall_s == pytest.approx(runtime)
        assert row.gpu_allocated_s == pytest.approx(row.gpus * runtime)
        # Kueue's times are whole seconds.
        admitted = workloads[job_id].admitted_at
        assert admitted is not None
        assert row.queue_wait_s == pytest.approx(max(0.0, admitted - record.created_at), abs=1.0)
    assert (rows[first].gpus, rows[second].gpus) == (8, 4)
    assert rows[first].wall_s >= held - 1.0
    # The second job waited for the first's GPUs: at least as long as the first held them.
    assert rows[second].queue_wait_s >= held - 1.0

    # The report over the team's ended jobs sums the same rows.
    (group,) = team.service.usage(UsageQuery(by=UsageBy.TEAM), user="ada", team=team.ns).groups
    assert (group.key, group.jobs, group.succeeded) == (team.ns, 2, 2)
    assert group.gpu_allocated_s == pytest.approx(sum(r.gpu_allocated_s for r in rows.values()))
    assert group.queue_wait_s == pytest.approx(sum(r.queue_wait_s for r in rows.values()))
