"""On a real control plane (its scheduler, Kueue, kwok nodes): a pool that can never host a job
is refused before anything is created; a job whose pods the scheduler cannot place says why,
naming the worker and the cause; and one that cannot heal ends, once the team's grace period
is over and its class's retries are spent, with a verdict that names it, its Job gone and its
quota released."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.fixtures.k8s import _cluster_module
from tests.k8s.test_admin_apply import KUEUE, apply_teams, teams_for
from tests.k8s.test_backend import Team, wait_for
from trainhub.backends.kubernetes import apply, reconcile
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import FailureClass, JobState

TAINT = {"key": "trainhub.io/test-taint", "value": "yes", "effect": "NoSchedule"}


def kwok_node(name: str, pool: str, cpu: str, memory: str, taints: list[dict[str, str]]) -> Any:
    body = _cluster_module().node_manifest(name, pool, 0, cpu, memory, "none")
    body["spec"]["taints"] = taints
    return body


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    """A team with two pools of its own beside a100 and t4: ``tainted`` (one kwok node with a
    taint the pool does not tolerate) and ``small`` (one kwok node of 2 CPUs and 4Gi)."""
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
    nodes = [
        core.create_node(kwok_node(f"kwok-{label}", label, cpu, memory, taints)).metadata.name
        for label, cpu, memory, taints in pools.values()
        if cpu is not None
    ]
    # A dataset whose claim nobody made: the scheduler cannot place a pod that mounts it.
    ghost = {"ghost": {"claim": "ghost-claim"}}
    teams = teams_for([ns], tmp_path, more_pools=more, wait_grace_minutes=0, datasets=ghost)
    apply_teams(k8s_namespace, teams)
    t = Team(k8s_namespace, ns, teams, tmp_path)
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


def refused(team: Team, pool: str, **resources: Any) -> tuple[str, str]:
    with pytest.raises(SpecError) as e:
        submit(team, pool, **resources)
    assert jobs_in(team) == []  # nothing was created
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
    # The admin is told too, when the teams file is applied.
    warnings = apply.pool_warnings(team.api, team.backend.teams)
    assert any(
        w.startswith(f"pool {team.ns}-tainted: node kwok-tainted-") and "test-taint=yes" in w
        for w in warnings
    )
    assert f"pool {team.ns}-nowhere: no node carries its node_labels; " in "\n".join(warnings)


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
    assert ended.state == JobState.FAILED and ended.verdict.attempt == 1
    assert ended.verdict.failure_class == FailureClass.ENVIRONMENT
    assert ended.verdict.reason.endswith("; ended after 10 min, as waiting cannot mend it")
    wait_for("the Job gone", lambda: jobs_in(team) == [])
    wait_for("the quota released", lambda: reserved(team, pool) == "0")
