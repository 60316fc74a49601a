"""The names trainhub's cluster objects share: API versions, the GPU resource, Kueue's and
trainhub's labels, the sessions' account, the priority classes' names; and the metadata every
rendered object carries. Pure, for the renderers, the backend and the spawner alike.
"""

from __future__ import annotations

from typing import Any

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# On an elastic Job's Workload slice that replaces an earlier one (a resize Kueue admitted).
SLICE_REPLACES = "kueue.x-k8s.io/workload-slice-replacement-for"
TEAM_LABEL = "trainhub.io/team"
MANAGED_LABEL = "trainhub.io/managed"
NAMESPACE_QUEUE_LABEL = "trainhub.io/local-queue"
ROLE_LABEL = "trainhub.io/role"
WORKER_ROLE = "worker"
NOTEBOOK_ACCOUNT = "trainhub-notebook"

Manifest = dict[str, Any]


def priority_class_name(priority: str) -> str:
    return f"trainhub-{priority}"


def meta(
    name: str, namespace: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """An object's metadata: its name, its namespace if any, trainhub's labels."""
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = {"app.kubernetes.io/managed-by": "trainhub", **(labels or {})}
    return out
