"""On a real control plane (its scheduler, Kueue, kwok nodes): a pool that can never host a job
is refused before anything is created; a job whose pods the scheduler cannot place says why,
naming the worker and the cause; and one that cannot heal ends, once the team's grace period
is over and its class's retries are spent, with a verdict that names it, its Job gone and its
quota released."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from kubernetes import client

from benchmarks.log_latency import JupyterServer
from tests.fixtures.k8s import _cluster_module
from tests.k8s.test_admin_apply import KUEUE, apply_teams, teams_data
from tests.k8s.test_backend import Team, wait_for
from trainhub.backends.kubernetes import apply, reconcile
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import FailureClass, JobState
from trainhub.teams import parse_teams

TAINT = {"key": "trainhub.io/test-taint", "value": "yes", "effect": "NoSchedule"}


def kwok_node(name: str, pool: str, cpu: str, memory: str, taints: list[dict[str, str]]) -> Any:
    body = _cluster_module().node_manifest(name, pool, 0, cpu, memory, "none")
    body["spec"]["taints"] = taints
    return body


class WaitsTeam(Team):
    teams_file: Path  # the teams file, for a session's CLI and server
    env: dict[str, str]  # what the spawner gives a session of the team


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[WaitsTeam]:
    """A team with pools of its own beside a100 and t4: ``tainted`` (one kwok node with a taint
    the pool does not tolerate), ``small`` (one kwok node of 2 CPUs and 4Gi), ``nowhere`` (no
    node) and ``gpu`` (the a100 nodes, for jobs that ask for GPUs only). Its teams file is
    ``team.teams_file``, and ``team.env`` what a session's CLI and server are given."""
    ns = k8s_namespace.name
    core = client.CoreV1Api(k8s_namespace.api)
    suffix = secrets.token_hex(3)
    pools = {
        f"{ns}-tainted": ("tainted-" + suffix, "8", "32Gi", [TAINT]),
        f"{ns}-small": ("small-" + suffix, "2", "4Gi", []),
        f"{ns}-nowhere": ("nowhere-" + suffix, None, None, []),  # its labels select no node
    }
    more = {
        name: (
            {"node_labels": {"trainhub.io/pool": label}, "gpus_per_node": 0},
            {"gpus": 0, "cpu": "8", "memory": "32Gi"},
        )
        for name, (label, *_) in pools.items()
    }
    more[f"{ns}-gpu"] = (
        {"node_labels": {"trainhub.io/pool": "a100"}, "gpus_per_node": 8, "gpu_only": True},
        {"gpus": 8, "cpu": "8", "memory": "32Gi"},
    )
    nodes = [
        core.create_node(kwok_node(f"kwok-{label}", label, cpu, memory, taints)).metadata.name
        for label, cpu, memory, taints in pools.values()
        if cpu is not None
    ]
    # A dataset whose claim nobody made: the scheduler cannot place a pod that mounts it.
    ghost = {"ghost": {"claim": "ghost-claim"}}
    # 24 GPUs of a100 for the team: three workers of 8 are within its quota, not its nodes.
    data = teams_data(
        [ns], tmp_path, a100_gpus=24, more_pools=more, wait_grace_minutes=0, datasets=ghost
    )
    teams = parse_teams(data)
    apply_teams(k8s_namespace, teams)
    t = WaitsTeam(k8s_namespace, ns, teams, tmp_path)
    t.teams_file = tmp_path / "teams.yaml"
    t.teams_file.write_text(yaml.safe_dump(data))
    t.env = {
        "TRAINHUB_BACKEND": "kubernetes",
        "TRAINHUB_TEAMS_FILE": str(t.teams_file),
        "TRAINHUB_TEAM": ns,
        "KUBECONFIG": str(k8s_namespace.kubeconfig),
        "TRAINHUB_WORKSPACE": str(tmp_path / "workspace"),
    }
    for node in nodes:  # kwok marks them Ready (an unready node carries a taint of its own)
        wait_for(f"{node} Ready", lambda n=node: _ready(core.read_node(n)))
    # An unbound claim is a wait of its own (the grace here is 0): the shared one binds first.
    wait_for(
        "the shared claim bound",
        lambda: core.read_namespaced_persistent_volume_claim("shared", ns).status.phase == "Bound",
    )
    yield t
    t.cleanup()
    for node in nodes:
        core.delete_node(node)


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def submit(
    team: Team,
    pool: str,
    datasets: tuple[str, ...] = (),
    retry: dict[str, float] | None = None,
    **resources: Any,
) -> str:
    spec = {
        "datasets": list(datasets),
        "name": "stuck",
        "source": {"path": "train.py"},
        "team": team.ns,
        "queue": pool,
        "resources": {"processes_per_worker": 1, "cpu": 1, "memory": "1Gi", **resources},
        "retry": retry or {"infrastructure": 0, "environment": 0},
    }
    return team.service.submit(spec, user="ada").id


def jobs_in(team: Team) -> list[str]:
    return [j.metadata.name for j in client.BatchV1Api(team.api).list_namespaced_job(team.ns).items]


def workloads_in(team: Team) -> list[str]:
    listed = client.CustomObjectsApi(team.api).list_namespaced_custom_object(
        *KUEUE, team.ns, "workloads"
    )
    return [w["metadata"]["name"] for w in listed["items"]]


def nothing_made(team: Team) -> None:
    """No Job, no Workload, no job directory: the refusal came before anything was created."""
    assert jobs_in(team) == []
    assert workloads_in(team) == []
    root = team.backend.jobs_root
    assert not root.exists() or list(root.iterdir()) == []


def refused(team: Team, pool: str, **resources: Any) -> tuple[str, str]:
    with pytest.raises(SpecError) as e:
        submit(team, pool, **resources)
    nothing_made(team)
    (error,) = e.value.errors
    return error.field, error.message


def test_placements_that_can_never_run_are_refused_before_anything_is_created(
    team: Team,
) -> None:
    field, message = refused(team, f"{team.ns}-tainted")
    assert field == "queue" and "trainhub.io/test-taint=yes:NoSchedule" in message
    field, message = refused(team, f"{team.ns}-small", cpu=4)
    assert field == "resources.cpu" and "(at most 2, on its largest node)" in message
    field, message = refused(team, f"{team.ns}-a100", memory="2Ti")
    assert field == "resources.memory" and "at most 1Ti" in message
    # Two 96-CPU nodes hold two 64-CPU workers at once, not three.
    field, message = refused(team, f"{team.ns}-a100", workers=3, cpu=64)
    assert field == "resources.workers" and "hold at most 2 of them" in message
    # Two nodes of 8 GPUs hold two workers of 8 GPUs, not three (the quota would allow 24).
    field, message = refused(team, f"{team.ns}-a100", workers=3, gpus_per_worker=8)
    assert field == "resources.workers" and "3 workers (3 x 8 GPUs)" in message
    field, message = refused(team, f"{team.ns}-gpu")  # a CPU-only job on a GPU-only pool
    assert field == "resources.gpus_per_worker" and "runs only jobs that ask for GPUs" in message
    # The admin is told too, when the teams file is applied.
    warnings = apply.pool_warnings(team.api, team.backend.teams)
    assert any(
        w.startswith(f"pool {team.ns}-tainted: node kwok-tainted-") and "test-taint=yes" in w
        for w in warnings
    )
    assert f"pool {team.ns}-nowhere: no node carries its node_labels; " in "\n".join(warnings)


def never_hosted(ns: str) -> list[tuple[str, dict[str, Any], list[str], str, str]]:
    """Jobs no pool placement could ever run: (pool, resources, the CLI's flags for them, the
    field the refusal names, words of its sentence)."""
    return [
        (f"{ns}-tainted", {}, [], "queue", "tainted (trainhub.io/test-taint=yes:NoSchedule)"),
        (f"{ns}-small", {"cpu": 4}, ["--cpu", "4"], "resources.cpu", "(at most 2, on its"),
        (f"{ns}-a100", {"memory": "2Ti"}, ["--memory", "2Ti"], "resources.memory", "at most 1Ti"),
        (
            f"{ns}-a100",
            {"workers": 3, "gpus_per_worker": 8},
            ["--workers", "3", "--gpus", "8"],
            "resources.workers",
            "3 workers (3 x 8 GPUs) cannot all run at once",
        ),
        (f"{ns}-gpu", {}, [], "resources.gpus_per_worker", "runs only jobs that ask for GPUs"),
    ]


def post(server: JupyterServer, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        server.base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_the_rest_api_refuses_a_placement_that_can_never_run_naming_the_field(
    team: WaitsTeam, tmp_path: Path
) -> None:
    home = tmp_path / "server-home"
    home.mkdir()
    server = JupyterServer(home, tmp_path / "workspace", reconcile_interval=0)
    server.env_overrides = team.env
    with server:
        for pool, resources, _, field, words in never_hosted(team.ns):
            body = {
                "name": "never",
                "source": {"path": "train.py"},
                "team": team.ns,
                "queue": pool,
                "resources": {"processes_per_worker": 1, **resources},
            }
            # The dialog's "Check" (a dry run), then its submit: the same 400, naming the field.
            for path in ("trainhub/api/jobs?dry_run=1", "trainhub/api/jobs"):
                status, answer = post(server, path, body)
                assert status == 400, (path, body, status, answer)
                ((named, sentence),) = [(e["field"], e["message"]) for e in answer["errors"]]
                assert named == field and words in sentence, (path, body, answer)
                nothing_made(team)


def test_the_cli_refuses_a_placement_that_can_never_run_naming_the_field(
    team: WaitsTeam, tmp_path: Path
) -> None:
    home = tmp_path / "cli-home"
    home.mkdir()
    for pool, _, flags, field, words in never_hosted(team.ns):
        proc = subprocess.run(
            [sys.executable, "-m", "trainhub.cli", "submit", "train.py", "--queue", pool, *flags],
            env={**os.environ, **team.env, "TRAINHUB_HOME": str(home)},
            cwd=tmp_path / "workspace",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and proc.stdout == "", (flags, proc)
        assert proc.stderr.startswith(f"trainhub: {field}: "), (flags, proc.stderr)
        assert words in proc.stderr, (flags, proc.stderr)
        nothing_made(team)


def describe(team: Team, job_id: str) -> Any:
    return team.service.describe(job_id, user="ada")


def sentence(team: Team, job_id: str, words: str, timeout: float = 60) -> str:
    """The job's wait sentence, once it says ``words`` (the scheduler tries the pod first)."""
    return wait_for(
        f"{words!r} in the wait sentence",
        lambda: (r := describe(team, job_id).wait_reason) and words in r and r,
        timeout,
    )


def unschedulable_since(team: Team, job_id: str) -> float:
    """When the scheduler reported the job's pod unschedulable (epoch seconds)."""
    (pod,) = team.pods(job_id)
    (cond,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert cond.reason == "Unschedulable"
    return cond.last_transition_time.timestamp()


def reserved(team: Team, pool: str) -> str:
    cq = client.CustomObjectsApi(team.api).get_cluster_custom_object(
        *KUEUE, "clusterqueues", team.ns
    )
    for flavor in cq.get("status", {}).get("flavorsReservation") or []:
        if flavor["name"] == pool:
            return next(r["total"] for r in flavor["resources"] if r["name"] == "cpu")
    return "0"


def test_an_untolerated_taint_is_explained_then_ends_the_job_and_frees_its_quota(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the node was tainted after the submit was checked.
    monkeypatch.setattr(team.backend, "check_fits", lambda record, placement: None)
    pool = f"{team.ns}-tainted"
    job_id = submit(team, pool)
    reason = sentence(team, job_id, "taint")
    # A new cause shows within 5 s of the scheduler's report (its time is in whole seconds).
    assert time.time() - unschedulable_since(team, job_id) < 5 + 1
    assert describe(team, job_id).state == JobState.STARTING
    # Kubernetes 1.35's scheduler leaves the taint unnamed ("untolerated taint(s)"), and
    # counts the other pools' nodes too: the pool's own nodes name it.
    assert reason.startswith(
        "worker 0 cannot be scheduled: the nodes its pool selects are tainted "
        "trainhub.io/test-taint=yes:NoSchedule (or cordoned)"
    )
    assert "(Kubernetes: 0/" in reason and "untolerated taint" in reason
    wait_for("the quota reserved", lambda: reserved(team, pool) == "1")
    team.backend.reconcile()  # the grace period (0 here) has passed: the job ends
    ended = describe(team, job_id)
    assert ended.state == JobState.FAILED and ended.wait_reason is None
    assert ended.verdict.failure_class == FailureClass.INFRASTRUCTURE
    assert ended.verdict.reason.startswith("worker 0 cannot be scheduled: the nodes its pool")
    assert ended.verdict.reason.endswith("; ended after 0 min, as waiting cannot mend it")
    wait_for("the Job gone", lambda: jobs_in(team) == [])
    wait_for("the quota released", lambda: reserved(team, pool) == "0")


def test_a_pool_whose_labels_select_no_node_waits_for_one(team: Team) -> None:
    job_id = submit(team, f"{team.ns}-nowhere")  # no node listed: it could be autoscaled
    reason = sentence(team, job_id, "labels")
    assert reason.startswith("worker 0 waits for a node: none of the cluster's ")
    assert "node(s) carries the labels its pool selects yet" in reason
    team.backend.reconcile()  # a node coming up heals it: the grace (0 here) ends nothing
    assert describe(team, job_id).state == JobState.STARTING and jobs_in(team) == [job_id]


def test_a_request_larger_than_any_node_ends_at_once(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the pool's nodes shrank after the submit was checked.
    monkeypatch.setattr(team.backend, "check_fits", lambda record, placement: None)
    pool = f"{team.ns}-small"
    job_id = submit(team, pool, cpu=4)
    reason = sentence(team, job_id, "asks for more")
    assert reason.startswith(
        "worker 0 asks for more CPU (4 CPU, 1Gi memory; its pool's nodes have at most 2 CPU "
        "allocatable) than any node of its pool has; it can never be scheduled: ask for less"
    )
    assert "Insufficient cpu" in reason
    wait_for("the quota reserved", lambda: reserved(team, pool) == "4")
    team.backend.reconcile()
    ended = describe(team, job_id)
    assert ended.state == JobState.FAILED
    assert ended.verdict.failure_class == FailureClass.INFRASTRUCTURE
    assert ended.verdict.reason.endswith("; ended, as waiting cannot mend it")
    wait_for("the Job gone", lambda: jobs_in(team) == [])
    wait_for("the quota released", lambda: reserved(team, pool) == "0")


def test_a_dataset_claim_that_does_not_exist_ends_the_job_as_an_environment_failure(
    team: Team,
) -> None:
    job_id = submit(team, f"{team.ns}-a100", datasets=("ghost",))
    reason = sentence(team, job_id, "ghost-claim")
    assert reason.startswith(
        "worker 0 cannot be scheduled: the volume claim ghost-claim does not exist"
    )
    assert 'persistentvolumeclaim "ghost-claim" not found' in reason
    team.backend.reconcile()
    ended = describe(team, job_id)
    assert ended.state == JobState.FAILED
    assert ended.verdict.failure_class == FailureClass.ENVIRONMENT
    assert "the volume claim ghost-claim does not exist" in ended.verdict.reason
    wait_for("the Job gone", lambda: jobs_in(team) == [])


def test_a_cause_that_cannot_heal_waits_out_the_teams_grace_then_its_retry_policy(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This team's admin gives a stuck job 10 minutes (the fixture's teams file says 0).
    monkeypatch.setattr(
        team.backend, "team", team.backend.team.model_copy(update={"wait_grace_minutes": 10})
    )
    pool = f"{team.ns}-a100"
    retry = {"environment": 1, "infrastructure": 0, "backoff_seconds": 0}
    job_id = submit(team, pool, datasets=("ghost",), retry=retry)
    sentence(team, job_id, "ghost-claim")
    first_uid = client.BatchV1Api(team.api).read_namespaced_job(job_id, team.ns).metadata.uid
    team.backend.reconcile()  # within the grace: it waits, saying why; reads end nothing
    assert describe(team, job_id).state == JobState.STARTING and jobs_in(team) == [job_id]
    # Ten minutes later, as the reconcile's clock reads it.
    later = SimpleNamespace(time=lambda: time.time() + 601)
    monkeypatch.setattr(reconcile, "time", later)
    team.backend.reconcile()
    # The environment class allows one retry: the failed attempt's Job makes way for the next.
    (retried,) = [e for e in team.events(job_id) if e["type"] == "retry"]
    assert retried["failure_class"] == FailureClass.ENVIRONMENT.value

    def next_attempt() -> str | None:
        team.backend.reconcile()  # the retry's Job replaces the failed one
        jobs = client.BatchV1Api(team.api).list_namespaced_job(team.ns).items
        return next((j.metadata.uid for j in jobs if j.metadata.uid != first_uid), None)

    wait_for("the next attempt's Job", next_attempt)
    sentence(team, job_id, "ghost-claim")
    team.backend.reconcile()  # its retries spent: the job ends, its quota freed
    ended = describe(team, job_id)
    assert ended.state == JobState.FAILED and ended.attempt == ended.verdict.attempt == 1
    assert ended.verdict.failure_class == FailureClass.ENVIRONMENT
    assert ended.verdict.reason.endswith("; ended after 10 min, as waiting cannot mend it")
    wait_for("the Job gone", lambda: jobs_in(team) == [])
    wait_for("the quota released", lambda: reserved(team, pool) == "0")
    # Read from its directory now, the job still says which attempt it ended on.
    gone = describe(team, job_id)
    assert (gone.attempt, gone.retries, gone.verdict.attempt) == (1, {"environment": 1}, 1)
