"""Can a pool (or this machine) ever host a job: pure checks of what each worker asks for
against the nodes that would take it, made before anything is created. A pod that no node can
take waits forever, and nothing in Kubernetes ends it.

Backend-neutral: a node is its allocatable figures and its taints; a toleration is the dict
Kubernetes takes (``key``, ``operator``, ``value``, ``effect``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainhub.jobs.quantities import format_size
from trainhub.jobs.spec import FieldError

# Taints that keep a pod off a node; PreferNoSchedule only makes the scheduler look elsewhere.
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


@dataclass(frozen=True)
class Node:
    name: str
    cpu: float  # allocatable cores
    memory: int  # allocatable bytes
    gpus: int
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class Request:
    """What each of ``workers`` pods asks for (0: nothing of that resource)."""

    workers: int
    cpu: float
    memory: int
    gpus: int


def tolerates(toleration: Mapping[str, str], taint: Taint) -> bool:
    """Kubernetes' rule: the effect matches (or is left out), and the key and value match
    (``Exists``: any value; no key with ``Exists``: every taint)."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.key
    return toleration.get("key") == taint.key and (toleration.get("value") or "") == taint.value


# Taints Kubernetes sets and lifts with a node's conditions (not-ready, unreachable, pressure,
# a cloud node not yet initialised): they heal, so they never make a placement impossible; a
# job meanwhile waits, saying why. A cordon is the admin's: it still counts.
CONDITION_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
CORDON = "node.kubernetes.io/unschedulable"


def untolerated(node: Node, tolerations: Sequence[Mapping[str, str]]) -> list[Taint]:
    """The taints of ``node`` that keep a pod with ``tolerations`` off it for good (a
    condition's taint passes; a cordon does not)."""
    return [
        t
        for t in node.taints
        if t.effect in BLOCKING_EFFECTS
        and (t.key == CORDON or not t.key.startswith(CONDITION_TAINTS))
        and not any(tolerates(tol, t) for tol in tolerations)
    ]


def workers_on(node: Node, request: Request) -> int:
    """How many of the job's workers ``node`` could hold at once, were it empty."""
    fits = [
        math.floor(have / need)
        for have, need in (
            (node.gpus, request.gpus),
            (node.cpu, request.cpu),
            (node.memory, request.memory),
        )
        if need
    ]
    return min(fits, default=request.workers)


def refusal(
    request: Request,
    nodes: Sequence[Node],
    *,
    where: str,
    tolerations: Sequence[Mapping[str, str]] = (),
) -> FieldError | None:
    """Why no placement of the job on ``nodes`` (those of ``where``, e.g. "pool a100") can
    ever run, naming the field to change; None when one can, or when no node is known (a pool
    an autoscaler grows from zero)."""
    if not nodes:
        return None
    hosts = [n for n in nodes if not untolerated(n, tolerations)]
    if not hosts:
        taints = sorted({str(t) for n in nodes for t in untolerated(n, tolerations)})
        return FieldError(
            field="queue",
            message=f"every node of {where} is tainted ({', '.join(taints)}) and the pool "
            "tolerates none of it, so no pod of the job could ever be scheduled; ask the admin "
            "to add the toleration to the pool, or choose another queue",
        )
    for field, need, have, shown in (
        ("resources.gpus_per_worker", request.gpus, max(n.gpus for n in hosts), str),
        ("resources.cpu", request.cpu, max(n.cpu for n in hosts), lambda c: f"{c:g}"),
        ("resources.memory", request.memory, max(n.memory for n in hosts), format_size),
    ):
        if need > have:
            return FieldError(
                field=field,
                message=f"{shown(need)} per worker is more than {where} offers one worker "
                f"(at most {shown(have)}, on its largest node); ask for at most {shown(have)}",
            )
    room = sum(workers_on(n, request) for n in hosts)
    if room < request.workers:
        total = f" ({request.workers} x {request.gpus} GPUs)" if request.gpus else ""
        return FieldError(
            field="resources.workers",
            message=f"{request.workers} workers{total} cannot all run at once: the "
            f"{len(hosts)} node(s) of {where} hold at most {room} of them; ask for at most "
            f"{room} workers",
        )
    return None


def pool_warnings(
    pool: str,
    nodes: Sequence[Node],
    tolerations: Sequence[Mapping[str, str]],
    *,
    autoscaled: bool = False,
) -> list[str]:
    """For the admin: the pool's nodes whose taints its tolerations do not match (its jobs'
    pods will never be scheduled there), or that it has no node (they wait for one), unless an
    autoscaler adds its nodes on demand."""
    if not nodes:
        return (
            []
            if autoscaled
            else [
                f"pool {pool}: no node carries its node_labels; its jobs' pods wait until one "
                "comes up (an autoscaler may add it), and for ever if none will"
            ]
        )
    out = []
    for node in nodes:
        if taints := untolerated(node, tolerations):
            out.append(
                f"pool {pool}: node {node.name} is tainted "
                f"{', '.join(map(str, taints))}, which the pool's tolerations do not match; "
                "its jobs' pods will never be scheduled there (add a toleration to the pool)"
            )
    return out
