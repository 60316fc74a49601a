"""trainhub's controller on a real control plane, as its own processes with its own
ServiceAccount's token (so the rights `trainhub admin render` gives it are the ones tested),
and nobody else reconciling: no session, no CLI call. kwok plays the pods."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.fixtures.k8s import fresh_namespace, started_cluster
from tests.k8s.test_admin_apply import apply_teams, teams_for
from tests.k8s.test_backend import Team, wait_for
from tests.local.test_alerts import Receiver
from trainhub.alerts.channels import member_alerts_path
from trainhub.backends.kubernetes.controlplane import CONTROLLER, teams_config
from trainhub.jobs.states import JobState
from trainhub.teams import Controller, Teams
from trainhub.usage.models import UsageBy, UsageQuery

FAST = ["--lease-seconds=3", "--renew-seconds=2", "--retry-seconds=0.5", "--resync-seconds=5"]


def controller_kubeconfig(
    api: Any, admin: Path, ns: str, out: Path, account: str = CONTROLLER
) -> Path:
    """A kubeconfig with a ServiceAccount's token (the controller's unless ``account`` says
    another), on the admin's server."""
    token = (
        client.CoreV1Api(api)
        .create_namespaced_service_account_token(account, ns, {"spec": {"expirationSeconds": 3600}})
        .status.token
    )
    config = yaml.safe_load(admin.read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    out.write_text(yaml.safe_dump(config))
    return out


# The controller's capabilities where members own their files, as its Deployment grants them
# (root's setuid and setgid, nothing else): a replica started so has no way past a member's
# file modes but acting as that member.
AS_DEPLOYED = ("setpriv", "--inh-caps=-all", "--bounding-set=-all,+setuid,+setgid", "--")


class Replica:
    """One controller process; ``prefix`` runs it through another command (AS_DEPLOYED)."""

    def __init__(
        self,
        teams_file: Path,
        kubeconfig: Path,
        name: str,
        log: Path,
        prefix: tuple[str, ...] = (),
    ):
        self.name, self.log = name, log
        self.proc = subprocess.Popen(
            [
                *prefix,
                sys.executable,
                "-m",
                "trainhub.cli",
                "controller",
                f"--teams={teams_file}",
                f"--kubeconfig={kubeconfig}",
                f"--identity={name}",
                "--listen=127.0.0.1",
                "--port=0",
                *FAST,
            ],
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "TRAINHUB_ALERT_BACKOFF_SECONDS": "0.2"},
        )
        self.port = wait_for(f"{name}'s probe port", self._port, 60)

    def _port(self) -> int | None:
        assert self.proc.poll() is None, self.log.read_text()
        for line in self.log.read_text().splitlines():
            if f"controller {self.name}:" in line and "probes on port" in line:
                return int(line.rsplit(" ", 1)[1])
        return None

    def metric(self, name: str) -> float | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


class Deployment:
    """The controller's objects applied from the teams file, and its replicas."""

    def __init__(self, k8s_namespace: Any, teams: Teams, tmp: Path):
        self.k8s, self.tmp, self.teams = k8s_namespace, tmp, teams
        self.ns = teams.controller.namespace  # type: ignore[union-attr]
        apply_teams(k8s_namespace, teams)
        self.teams_file = tmp / "teams.yaml"
        self.teams_file.write_text(teams_config(teams, self.ns)["data"]["teams.yaml"])
        self.kubeconfig = controller_kubeconfig(
            k8s_namespace.api, k8s_namespace.kubeconfig, self.ns, tmp / "controller.kubeconfig"
        )
        self.replicas: list[Replica] = []

    def start(self, name: str) -> Replica:
        replica = Replica(self.teams_file, self.kubeconfig, name, self.tmp / f"{name}.log")
        self.replicas.append(replica)
        return replica

    def lease(self) -> Any:
        return client.CoordinationV1Api(self.k8s.api).read_namespaced_lease(CONTROLLER, self.ns)

    def leader(self) -> Replica:
        def holder() -> Replica | None:
            name = self.lease().spec.holder_identity
            return next((r for r in self.replicas if r.name == name), None)

        return wait_for("a leader", holder, 30)

    def close(self) -> None:
        for replica in self.replicas:
            replica.kill(signal.SIGTERM)
        client.CoreV1Api(self.k8s.api).delete_namespace(self.ns)


@pytest.fixture
def world(k8s_namespace: Any, tmp_path: Path) -> Iterator[tuple[Team, Deployment]]:
    teams = teams_for([k8s_namespace.name], tmp_path)
    teams = teams.model_copy(update={"controller": Controller(namespace=f"{k8s_namespace.name}-c")})
    deployment = Deployment(k8s_namespace, teams, tmp_path)
    team = Team(k8s_namespace, k8s_namespace.name, teams, tmp_path)
    assert team.backend.controlled  # the service's reconcile does nothing: the controller's job
    yield team, deployment
    deployment.close()
    team.cleanup()


def submit(team: Team, name: str, **fields: Any) -> str:
    spec = {
        "name": name,
        "source": {"path": "train.py"},
        "team": team.ns,
        "resources": {"workers": 2, "gpus_per_worker": 1},
        **fields,
    }
    return team.service.submit(spec, user="ada").id


def events(team: Team, job_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    path = team.backend.jobs_root / job_id / "events.jsonl"
    found = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [e for e in found if kind is None or e["type"] == kind]


def recorded(team: Team, job_id: str, state: JobState, timeout: float = 60) -> dict[str, Any]:
    """The job's directory says ``state`` (written by the controller: nothing else reconciles)."""

    def said() -> dict[str, Any] | None:
        states = events(team, job_id, "state")
        return states[-1] if states and states[-1]["state"] == state.value else None

    return wait_for(f"{job_id} recorded {state.value}", said, timeout)


def current_job(team: Team, job_id: str) -> Any:
    """The job's Job now; None between a failed attempt's and the next one's."""
    try:
        return team.backend.batch.read_namespaced_job(job_id, team.ns)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def member_webhook(team: Team, user: str, url: str) -> None:
    path = Path(team.backend.team.shared_volume.mount_path) / member_alerts_path(user)
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"webhooks": [url]}))


def test_with_nobody_logged_in_a_killed_worker_is_retried_and_its_failure_announced_once(
    world: tuple[Team, Deployment],
) -> None:
    team, deployment = world
    replica = deployment.start("solo")
    hook = Receiver()
    try:
        member_webhook(team, "ada", hook.url)
        flaky = submit(team, "flaky", retry={"infrastructure": 1, "backoff_seconds": 1})
        doomed = submit(team, "doomed", retry={"infrastructure": 0}, notify=["failure"])
        recorded(team, flaky, JobState.RUNNING)
        recorded(team, doomed, JobState.RUNNING)
        first_uid = team.backend.batch.read_namespaced_job(flaky, team.ns).metadata.uid
        team.end_pods(flaky, result="Failed", exit_code="137")
        team.end_pods(doomed, result="Failed", exit_code="137")

        def next_attempt() -> Any:
            job = current_job(team, flaky)
            return job if job is not None and job.metadata.uid != first_uid else None

        job = wait_for("the next attempt's Job", next_attempt, 60)
        assert job.metadata.annotations["trainhub.io/attempt"] == "1"
        (retry,) = events(team, flaky, "retry")
        assert retry["attempt"] == 1 and retry["failure_class"] == "infrastructure"
        wait_for(
            "the next attempt queued, in the directory",
            lambda: any(
                e["state"] == "queued" and e.get("attempt") == 1
                for e in events(team, flaky, "state")
            ),
            30,
        )

        ended = recorded(team, doomed, JobState.FAILED)
        assert ended["verdict"]["failure_class"] == "infrastructure"
        wait_for("the failure alert", lambda: hook.posts, 30)
        time.sleep(3)  # a second reconcile (resync) and sender pass: still one alert
        ((status, body),) = hook.posts
        assert status == 200 and doomed in body["text"] and "failed" in body["text"]
        assert replica.metric("trainhub_controller_leader") == 1.0
        assert (replica.metric("trainhub_controller_reconcile_seconds_count") or 0) >= 1
    finally:
        hook.close()


def test_the_standby_takes_over_a_retry_from_a_killed_leader_and_retries_once(
    world: tuple[Team, Deployment],
) -> None:
    team, deployment = world
    deployment.start("one")
    deployment.start("two")
    leader = deployment.leader()
    standby = next(r for r in deployment.replicas if r is not leader)
    wait_for("the standby's cache synced", standby.ready, 30)
    assert standby.metric("trainhub_controller_leader") == 0.0
    job_id = submit(team, "flaky", retry={"infrastructure": 2, "backoff_seconds": 4})
    recorded(team, job_id, JobState.RUNNING)
    first_uid = team.backend.batch.read_namespaced_job(job_id, team.ns).metadata.uid
    team.end_pods(job_id, result="Failed", exit_code="137")
    recorded(team, job_id, JobState.RETRYING)  # the leader planned it; its backoff runs
    transitions = deployment.lease().spec.lease_transitions or 0
    leader.kill()  # in the middle of the retry: no release, the lease must run out
    killed_at = time.monotonic()

    def taken_over() -> bool:
        return deployment.lease().spec.holder_identity == standby.name

    wait_for("the standby holding the lease", taken_over, 20)
    took = time.monotonic() - killed_at
    assert took <= 3 + 2 * 0.5 + 1.5, f"the standby took {took:.1f}s over a 3 s lease"
    assert deployment.lease().spec.lease_transitions == transitions + 1

    def next_attempt() -> Any:
        job = current_job(team, job_id)
        return job if job is not None and job.metadata.uid != first_uid else None

    second = wait_for("the next attempt's Job, made by the standby", next_attempt, 60)
    time.sleep(3)  # resyncs of the new leader: still one attempt, one retry
    now = team.backend.batch.read_namespaced_job(job_id, team.ns)
    assert now.metadata.uid == second.metadata.uid
    assert now.metadata.annotations["trainhub.io/attempt"] == "1"
    assert len(events(team, job_id, "retry")) == 1
    assert standby.metric("trainhub_controller_leader") == 1.0


def test_endings_while_the_controller_was_down_are_recorded_and_announced_once_on_return(
    world: tuple[Team, Deployment],
) -> None:
    team, deployment = world
    hook = Receiver()
    try:
        member_webhook(team, "ada", hook.url)
        replica = deployment.start("first")
        jobs = [
            submit(team, f"ends-{n}", retry={"infrastructure": 0}, notify=["failure", "end"])
            for n in range(3)
        ]
        for job_id in jobs:
            recorded(team, job_id, JobState.RUNNING)
        replica.kill(signal.SIGTERM)  # a leader that stops releases the lease
        assert not deployment.lease().spec.holder_identity
        team.end_pods(jobs[0], result="Failed", exit_code="1")
        team.end_pods(jobs[1], result="Succeeded")
        team.end_pods(jobs[2], result="Failed", exit_code="137")
        time.sleep(3)  # they end with no controller running: nothing records them
        assert all(events(team, j, "state")[-1]["state"] == "running" for j in jobs)
        deployment.start("second")
        assert recorded(team, jobs[1], JobState.SUCCEEDED)
        for failed in (jobs[0], jobs[2]):  # no retry allowed: each ends with its verdict
            assert recorded(team, failed, JobState.FAILED)["verdict"]["failure_class"]
        wait_for("three alerts", lambda: len(hook.posts) >= 3, 30)
        time.sleep(3)
        texts = sorted(body["text"] for _, body in hook.posts)
        assert len(texts) == 3, texts
        assert [sum(j in t for t in texts) for j in jobs] == [1, 1, 1]
    finally:
        hook.close()


def test_watches_resume_after_an_api_server_restart_without_missing_an_ending(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A control plane of its own: its API server's restart must not reach other tests' clients
    # (the garbage collector and Kueue take their time to catch up after one).
    with (
        started_cluster(tmp_path_factory.mktemp("restarted")) as cluster,
        fresh_namespace(cluster, "restart") as k8s_namespace,
    ):
        teams = teams_for([k8s_namespace.name], tmp_path)
        teams = teams.model_copy(
            update={"controller": Controller(namespace=f"{k8s_namespace.name}-c")}
        )
        deployment = Deployment(k8s_namespace, teams, tmp_path)
        team = Team(k8s_namespace, k8s_namespace.name, teams, tmp_path)
        try:
            replica = deployment.start("watcher")
            job_id = submit(team, "survivor", retry={"infrastructure": 0})
            recorded(team, job_id, JobState.RUNNING)
            cluster.cluster.restart_apiserver()
            # At once: the controller's watches are still backing off, so the ending happens
            # while none watches; resumed from their last resourceVersion, they see it.
            team.end_pods(job_id, result="Failed", exit_code="137")
            ended = recorded(team, job_id, JobState.FAILED, timeout=90)
            assert ended["verdict"]["failure_class"] == "infrastructure"
            restarts = replica.metric("trainhub_controller_watch_restarts_total")
            assert restarts is not None and restarts >= 1
        finally:
            deployment.close()
            team.cleanup()


def test_with_nobody_logged_in_a_preempted_job_runs_again_and_usage_counts_both_jobs(
    world: tuple[Team, Deployment],
) -> None:
    team, deployment = world
    deployment.start("solo")
    whole = {"workers": 1, "gpus_per_worker": 8}  # the team's whole GPU quota
    low = submit(team, "low", priority="low", resources=whole)
    recorded(team, low, JobState.RUNNING)
    high = submit(team, "high", priority="high", resources=whole)
    recorded(team, high, JobState.RUNNING)
    # Kueue evicted the low job for the high one: the controller says so, and it waits again.
    wait_for("the preemption recorded", lambda: events(team, low, "preempted"), 60)
    assert recorded(team, low, JobState.QUEUED)
    time.sleep(2)  # usage counts from Kueue's admission times, whole seconds
    team.end_pods(high, result="Succeeded")
    recorded(team, high, JobState.SUCCEEDED)
    recorded(team, low, JobState.RUNNING)  # readmitted once the GPUs are free
    time.sleep(2)
    team.end_pods(low, result="Succeeded")
    recorded(team, low, JobState.SUCCEEDED)

    rows = {job: team.service.job_usage(job, user="ada") for job in (low, high)}
    assert {job: (row.gpus, row.gpu_allocated_s > 0) for job, row in rows.items()} == {
        low: (8, True),
        high: (8, True),
    }
    (group,) = team.service.usage(UsageQuery(by=UsageBy.TEAM), user="ada", team=team.ns).groups
    assert (group.jobs, group.succeeded) == (2, 2)
