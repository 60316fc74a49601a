"""A pool's nodes as :mod:`trainhub.jobs.placement` sees them, and whether the pool can ever
host a job: pure functions of the teams file's pool and the API's Node objects (as dicts)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainhub.backends.kubernetes.manifests import worker_request
from trainhub.backends.kubernetes.names import GPU
from trainhub.jobs import placement
from trainhub.jobs.models import JobRecord
from trainhub.jobs.quantities import parse_api_quantity
from trainhub.jobs.spec import FieldError
from trainhub.teams import Pool

Obj = dict[str, Any]


def selector(pool: Pool) -> str:
    """The label selector of the pool's nodes."""
    return _selector(pool.node_labels)


def pod_selector(pod: Obj) -> str:
    """The label selector of the nodes a pod may go to (its nodeSelector: the pool's labels,
    and those Kueue's flavor adds)."""
    return _selector(pod.get("spec", {}).get("nodeSelector") or {})


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _quantity(text: str | None) -> Decimal:
    """A Kubernetes quantity ("3500m", "16318480Ki", "8") as a number; 0 when absent."""
    return parse_api_quantity(text) if text else Decimal(0)


def node_of(obj: Obj) -> placement.Node:
    """A Node object's allocatable figures and taints (an unschedulable, cordoned node takes
    no pod: it counts as tainted, as the scheduler's own taint on it says)."""
    allocatable = obj.get("status", {}).get("allocatable") or {}
    spec = obj.get("spec") or {}
    taints = tuple(
        placement.Taint(t["key"], t.get("value") or "", t.get("effect") or "NoSchedule")
        for t in spec.get("taints") or []
    )
    if spec.get("unschedulable") and not any(
        t.key == "node.kubernetes.io/unschedulable" for t in taints
    ):
        taints += (placement.Taint("node.kubernetes.io/unschedulable"),)
    return placement.Node(
        name=obj["metadata"]["name"],
        cpu=float(_quantity(allocatable.get("cpu"))),
        memory=int(_quantity(allocatable.get("memory"))),
        gpus=int(_quantity(allocatable.get(GPU))),
        taints=taints,
    )


def pod_request(pod: Obj) -> placement.Request:
    """What one pod's containers ask for, together, as placement counts it."""
    total = {"cpu": Decimal(0), "memory": Decimal(0), GPU: Decimal(0)}
    for container in pod.get("spec", {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for key in total:
            total[key] += _quantity(requests.get(key))
    return placement.Request(
        workers=1, cpu=float(total["cpu"]), memory=int(total["memory"]), gpus=int(total[GPU])
    )


def tolerations(pool: Pool) -> list[dict[str, str]]:
    return [t.manifest() for t in pool.tolerations]


def pool_refusal(
    record: JobRecord, pool: Pool, nodes: list[placement.Node] | None
) -> FieldError | None:
    """Why ``pool`` can never host the job (``nodes``: the pool's, None when they cannot be
    read), naming the field to change; None when it can."""
    if pool.gpu_only and not record.spec.resources.gpus_per_worker:
        return FieldError(
            field="resources.gpus_per_worker",
            message=f"pool {pool.name} runs only jobs that ask for GPUs; ask for GPUs, or "
            "choose another queue for a CPU-only job",
        )
    return placement.refusal(
        worker_request(record),
        nodes or [],
        where=f"pool {pool.name}",
        tolerations=tolerations(pool),
    )
