"""Smoke tests of the loopback control plane: kwok GPU nodes, scheduling, RBAC, Kueue."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kubernetes import client

if TYPE_CHECKING:
    from conftest import K8sNamespace

KUEUE = ("kueue.x-k8s.io", "v1beta2")
T = TypeVar("T")


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def pod_spec(
    gpus: int = 0, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "metadata": {"annotations": annotations or {}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/trainhub/test:1",
                    "resources": resources,
                }
            ],
            **spec,
        },
    }


def test_kwok_gpu_nodes(k8s_namespace: K8sNamespace) -> None:
    nodes = client.CoreV1Api(k8s_namespace.api).list_node(label_selector="type=kwok").items
    by_pool: dict[str, list[int]] = {}
    for node in nodes:
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions), (
            node.metadata.name
        )
        by_pool.setdefault(node.metadata.labels["trainhub.io/pool"], []).append(
            int(node.status.allocatable["nvidia.com/gpu"])
        )
    assert by_pool == {"a100": [8, 8], "t4": [4, 4]}


def test_pod_runs_and_ends_as_told(k8s_namespace: K8sNamespace) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    spec = pod_spec(gpus=1, nodeSelector={"trainhub.io/pool": "t4"}, restartPolicy="Never")
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"}, "spec": spec["spec"]}
    core.create_namespaced_pod(ns, body)
    pod = wait_for(
        "pod Running",
        lambda: (p := core.read_namespaced_pod("plain", ns)).status.phase == "Running" and p,
    )
    assert pod.spec.node_name.startswith("kwok-t4-")
    # kwok ends a Running pod when told to, via the kwok.trainhub.io/* annotations.
    core.patch_namespaced_pod(
        "plain",
        ns,
        {
            "metadata": {
                "annotations": {
                    "kwok.trainhub.io/result": "Failed",
                    "kwok.trainhub.io/exit-code": "137",
                    "kwok.trainhub.io/reason": "OOMKilled",
                }
            }
        },
    )
    pod = wait_for(
        "pod Failed",
        lambda: (p := core.read_namespaced_pod("plain", ns)).status.phase == "Failed" and p,
    )
    term = pod.status.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (137, "OOMKilled")


def test_service_account_and_rbac_are_real(k8s_namespace: K8sNamespace) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    core.create_namespaced_service_account(ns, {"metadata": {"name": "runner"}})
    token = core.create_namespaced_service_account_token(
        "runner", ns, {"spec": {"audiences": [], "expirationSeconds": 600}}
    ).status.token
    assert token.count(".") == 2  # a signed JWT

    def can_create_jobs() -> bool:
        review = client.AuthorizationV1Api(k8s_namespace.api).create_subject_access_review(
            {
                "spec": {
                    "user": f"system:serviceaccount:{ns}:runner",
                    "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}"],
                    "resourceAttributes": {
                        "namespace": ns,
                        "verb": "create",
                        "group": "batch",
                        "resource": "jobs",
                    },
                }
            }
        )
        return bool(review.status.allowed)

    assert not can_create_jobs()
    client.RbacAuthorizationV1Api(k8s_namespace.api).create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "runner-edit"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "edit",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": ns}],
        },
    )
    wait_for("RoleBinding to take effect", can_create_jobs, timeout=10)


def kueue_queues(
    k8s_namespace: K8sNamespace,
    flavor: str,
    flavor_spec: dict[str, Any],
    *,
    cpu: str,
    memory: str,
    gpus: int,
) -> str:
    """ResourceFlavor ``<namespace>-<flavor>`` (``flavor_spec``) + ClusterQueue (for this
    namespace only, with these quotas of that flavor) + LocalQueue; returns the LocalQueue.
    The cluster-scoped objects are deleted after the test."""
    co = client.CustomObjectsApi(k8s_namespace.api)
    ns = k8s_namespace.name
    flavor_name, cq = f"{ns}-{flavor}", f"{ns}-cq"
    co.create_cluster_custom_object(
        *KUEUE,
        "resourceflavors",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor_name},
            "spec": flavor_spec,
        },
    )
    k8s_namespace.delete_cluster_object(*KUEUE, "resourceflavors", flavor_name)
    co.create_cluster_custom_object(
        *KUEUE,
        "clusterqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": flavor_name,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": memory},
                                    {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
    )
    k8s_namespace.delete_cluster_object(*KUEUE, "clusterqueues", cq)
    co.create_namespaced_custom_object(
        *KUEUE,
        ns,
        "localqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "team"},
            "spec": {"clusterQueue": cq},
        },
    )
    return "team"


def _a100_queues(k8s_namespace: K8sNamespace, gpus: int) -> str:
    """Kueue's queues of the kwok A100 nodes, with ``gpus`` GPUs of quota."""
    a100 = {"nodeLabels": {"trainhub.io/pool": "a100"}}
    return kueue_queues(k8s_namespace, "a100", a100, cpu="64", memory="256Gi", gpus=gpus)


def _job(
    name: str, *, queue: str | None, gpus: int, parallelism: int, suspend: bool
) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "suspend": suspend,
            "parallelism": parallelism,
            "completions": parallelism,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": pod_spec(gpus=gpus, restartPolicy="Never"),
        },
    }


def _workloads(k8s_namespace: K8sNamespace) -> list[dict[str, Any]]:
    co = client.CustomObjectsApi(k8s_namespace.api)
    return co.list_namespaced_custom_object(*KUEUE, k8s_namespace.name, "workloads")["items"]


def _condition(obj: dict[str, Any], type_: str) -> bool:
    return any(
        c["type"] == type_ and c["status"] == "True"
        for c in obj.get("status", {}).get("conditions", [])
    )


def test_kueue_admits_suspended_job_and_pods_run_on_kwok(k8s_namespace: K8sNamespace) -> None:
    batch = client.BatchV1Api(k8s_namespace.api)
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    queue = _a100_queues(k8s_namespace, gpus=16)
    batch.create_namespaced_job(ns, _job("train", queue=queue, gpus=8, parallelism=2, suspend=True))

    wl = wait_for(
        "Workload admitted",
        lambda: next((w for w in _workloads(k8s_namespace) if _condition(w, "Admitted")), None),
    )
    assert wl["metadata"]["ownerReferences"][0]["name"] == "train"
    assert wait_for(
        "Job unsuspended", lambda: batch.read_namespaced_job("train", ns).spec.suspend is False
    )

    def running() -> list[Any]:
        pods = core.list_namespaced_pod(ns, label_selector="job-name=train").items
        return pods if len(pods) == 2 and all(p.status.phase == "Running" for p in pods) else []

    pods = wait_for("2 pods Running", running)
    # Kueue injected the flavor's node labels: both 8-GPU pods landed on the two A100 nodes.
    assert sorted(p.spec.node_name for p in pods) == ["kwok-a100-0", "kwok-a100-1"]

    for p in pods:
        core.patch_namespaced_pod(
            p.metadata.name,
            ns,
            {"metadata": {"annotations": {"kwok.trainhub.io/result": "Succeeded"}}},
        )
    wait_for(
        "Job Complete",
        lambda: any(
            c.type == "Complete" and c.status == "True"
            for c in (batch.read_namespaced_job("train", ns).status.conditions or [])
        ),
    )
    wait_for(
        "Workload Finished",
        lambda: all(_condition(w, "Finished") for w in _workloads(k8s_namespace)),
    )


def test_kueue_queues_job_beyond_quota(k8s_namespace: K8sNamespace) -> None:
    batch = client.BatchV1Api(k8s_namespace.api)
    queue = _a100_queues(k8s_namespace, gpus=8)
    batch.create_namespaced_job(
        k8s_namespace.name, _job("big", queue=queue, gpus=8, parallelism=2, suspend=True)
    )
    wl = wait_for("Workload created", lambda: next(iter(_workloads(k8s_namespace)), None))
    wl = wait_for(
        "Workload evaluated",
        lambda: next(
            (
                w
                for w in _workloads(k8s_namespace)
                if any(
                    c["type"] == "QuotaReserved" for c in w.get("status", {}).get("conditions", [])
                )
            ),
            None,
        ),
    )
    reserved = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["status"] == "False" and reserved["reason"] == "Pending"
    assert "nvidia.com/gpu" in reserved["message"]  # the explanation names the missing resource
    assert batch.read_namespaced_job("big", k8s_namespace.name).spec.suspend is True


def test_job_without_queue_name_is_left_alone(k8s_namespace: K8sNamespace) -> None:
    # manageJobsWithoutQueueName is false: Kueue neither suspends nor tracks such a Job,
    # so it runs straight away, outside any quota.
    batch = client.BatchV1Api(k8s_namespace.api)
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    job = batch.create_namespaced_job(
        ns, _job("unqueued", queue=None, gpus=4, parallelism=1, suspend=False)
    )
    assert job.spec.suspend is False
    wait_for(
        "pod Running",
        lambda: [
            p
            for p in core.list_namespaced_pod(ns, label_selector="job-name=unqueued").items
            if p.status.phase == "Running"
        ],
    )
    assert _workloads(k8s_namespace) == []
