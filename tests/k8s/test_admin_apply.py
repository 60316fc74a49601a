"""The rendered team objects on a real control plane: apply is idempotent, the notebook account
can run jobs in its namespace and nothing else, and no Job can go around Kueue."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from trainhub.backends.kubernetes.apply import apply_objects
from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT
from trainhub.backends.kubernetes.render import render
from trainhub.teams import Teams, parse_teams

KUEUE = ("kueue.x-k8s.io", "v1beta2")
CLUSTER_PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues"}


def teams_for(
    namespaces: list[str],
    tmp: Path,
    *,
    a100_gpus: int = 8,
    more_pools: dict[str, tuple[dict[str, Any], dict[str, Any]]] | None = None,
    **team_extra: Any,
) -> Teams:
    return parse_teams(
        teams_data(namespaces, tmp, a100_gpus=a100_gpus, more_pools=more_pools, **team_extra)
    )


def teams_data(
    namespaces: list[str],
    tmp: Path,
    *,
    a100_gpus: int = 8,
    more_pools: dict[str, tuple[dict[str, Any], dict[str, Any]]] | None = None,
    **team_extra: Any,
) -> dict[str, Any]:
    """A teams file: one team per namespace, all in one cohort, with pools named after the first
    namespace; ``more_pools``: name -> (the pool's fields, each team's quota in it)."""
    prefix = namespaces[0]
    more = more_pools or {}
    return {
        "pools": [
            {
                "name": f"{prefix}-a100",
                "node_labels": {"trainhub.io/pool": "a100"},
                "gpus_per_node": 8,
            },
            {"name": f"{prefix}-t4", "node_labels": {"trainhub.io/pool": "t4"}, "gpus_per_node": 4},
            *({"name": name, **pool} for name, (pool, _) in more.items()),
        ],
        "images": [{"name": "pytorch", "image": "registry.invalid/trainhub/pytorch:1"}],
        "teams": [
            {
                "name": ns,
                "groups": [ns],
                "namespace": ns,
                "cohort": f"{prefix}-cohort",
                "quota": {
                    f"{prefix}-a100": {"gpus": a100_gpus, "cpu": "96", "memory": "1Ti"},
                    f"{prefix}-t4": {"gpus": 4, "cpu": "32", "memory": "128Gi"},
                    **{name: quota for name, (_, quota) in more.items()},
                },
                "images": ["pytorch"],
                "shared_volume": {"claim": "shared", "mount_path": str(tmp / ns)},
                **team_extra,
            }
            for ns in namespaces
        ],
    }


def apply_teams(k8s_namespace: Any, teams: Teams) -> list[Any]:
    objs = render(teams)
    for obj in objs:
        plural = CLUSTER_PLURALS.get(obj["kind"])
        if plural:
            k8s_namespace.delete_cluster_object(*KUEUE, plural, obj["metadata"]["name"])
    return apply_objects(k8s_namespace.api, objs)


@pytest.fixture
def second_namespace(k8s_namespace: Any) -> Any:
    core = client.CoreV1Api(k8s_namespace.api)
    name = f"{k8s_namespace.name}-b"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def test_apply_twice_changes_nothing(k8s_namespace: Any, tmp_path: Path) -> None:
    teams = teams_for([k8s_namespace.name], tmp_path)
    first = apply_teams(k8s_namespace, teams)
    assert {r.kind for r in first} >= {
        "Namespace",
        "ResourceQuota",
        "ClusterQueue",
        "LocalQueue",
        "NetworkPolicy",
    }
    second = apply_objects(k8s_namespace.api, render(teams))
    assert [r for r in second if r.changed] == []
    cq = client.CustomObjectsApi(k8s_namespace.api).get_cluster_custom_object(
        *KUEUE, "clusterqueues", k8s_namespace.name
    )
    assert cq["spec"]["cohortName"] == f"{k8s_namespace.name}-cohort"

    # A real change is reported, and only where it lands: a bigger A100 quota moves the
    # ClusterQueue and the namespace's ResourceQuota, nothing else.
    third = apply_objects(
        k8s_namespace.api, render(teams_for([k8s_namespace.name], tmp_path, a100_gpus=12))
    )
    assert {(r.kind, r.name) for r in third if r.changed} == {
        ("ClusterQueue", k8s_namespace.name),
        ("ResourceQuota", next(r.name for r in first if r.kind == "ResourceQuota")),
    }


def _allowed(
    api: Any,
    ns: str,
    namespace: str,
    verb: str,
    resource: str,
    group: str = "",
    subresource: str = "",
) -> bool:
    attrs = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
    if subresource:
        attrs["subresource"] = subresource
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        {
            "spec": {
                "user": f"system:serviceaccount:{ns}:{NOTEBOOK_ACCOUNT}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{ns}",
                    "system:authenticated",
                ],
                "resourceAttributes": attrs,
            }
        }
    )
    return bool(review.status.allowed)


def test_notebook_account_runs_jobs_in_its_namespace_only(
    k8s_namespace: Any, second_namespace: str, tmp_path: Path
) -> None:
    ns, other = k8s_namespace.name, second_namespace
    apply_teams(k8s_namespace, teams_for([ns, other], tmp_path))
    api = k8s_namespace.api
    allowed = [
        (ns, "create", "jobs", "batch", ""),
        (ns, "delete", "jobs", "batch", ""),
        (ns, "create", "services", "", ""),
        (ns, "get", "pods", "", "log"),
        (ns, "list", "workloads", "kueue.x-k8s.io", ""),
        ("", "get", "clusterqueues", "kueue.x-k8s.io", ""),
    ]
    denied = [
        (other, "create", "jobs", "batch", ""),
        (other, "list", "pods", "", ""),
        (ns, "create", "pods", "", ""),
        (ns, "get", "secrets", "", ""),
        (ns, "create", "rolebindings", "rbac.authorization.k8s.io", ""),
        (ns, "update", "resourcequotas", "", ""),
        (ns, "create", "localqueues", "kueue.x-k8s.io", ""),
        ("", "create", "clusterqueues", "kueue.x-k8s.io", ""),
        ("", "delete", "namespaces", "", ""),
        (ns, "create", "pods", "", "exec"),
    ]
    got_allowed = {a: _allowed(api, ns, a[0], a[1], a[2], a[3], a[4]) for a in allowed}
    got_denied = {d: _allowed(api, ns, d[0], d[1], d[2], d[3], d[4]) for d in denied}
    assert got_allowed == dict.fromkeys(allowed, True)
    assert got_denied == dict.fromkeys(denied, False)


def _job(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/x:1",
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                }
            },
        },
    }


def _create_with_retry(batch: Any, ns: str, body: dict[str, Any]) -> Any:
    """The admission policy takes effect a moment after it is applied; retry until it has."""
    deadline = time.monotonic() + 20
    while True:
        try:
            job = batch.create_namespaced_job(ns, body)
        except client.ApiException as e:
            return e
        if time.monotonic() > deadline:
            return job
        batch.delete_namespaced_job(body["metadata"]["name"], ns, propagation_policy="Background")
        while True:
            try:
                batch.read_namespaced_job(body["metadata"]["name"], ns)
                time.sleep(0.1)
            except client.ApiException:
                break
        time.sleep(0.3)


def test_job_without_the_team_queue_is_refused(
    k8s_namespace: Any, second_namespace: str, tmp_path: Path
) -> None:
    ns = k8s_namespace.name
    apply_teams(k8s_namespace, teams_for([ns, second_namespace], tmp_path))
    batch = client.BatchV1Api(k8s_namespace.api)
    refused = _create_with_retry(batch, ns, _job("bypass", {}))
    assert isinstance(refused, client.ApiException) and refused.status in (403, 422)
    assert "kueue.x-k8s.io/queue-name=jobs" in refused.body
    other_queue = _create_with_retry(
        batch, ns, _job("other", {"kueue.x-k8s.io/queue-name": "elsewhere"})
    )
    assert isinstance(other_queue, client.ApiException), other_queue
    ok = batch.create_namespaced_job(ns, _job("queued", {"kueue.x-k8s.io/queue-name": "jobs"}))
    assert ok.metadata.name == "queued"


def test_restricted_pod_security_and_no_gpu_default(k8s_namespace: Any, tmp_path: Path) -> None:
    ns = k8s_namespace.name
    apply_teams(k8s_namespace, teams_for([ns], tmp_path))
    core = client.CoreV1Api(k8s_namespace.api)
    root_pod = {
        "metadata": {"name": "root"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]},
    }
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod(ns, root_pod)
    assert "violates PodSecurity" in info.value.body
    ok = _job("x", {})["spec"]["template"]
    pod = core.create_namespaced_pod(ns, {"metadata": {"name": "plain"}, "spec": ok["spec"]})
    resources = pod.spec.containers[0].resources
    assert resources.requests == {"cpu": "100m", "memory": "256Mi"}  # defaults from the LimitRange
    assert not resources.limits
