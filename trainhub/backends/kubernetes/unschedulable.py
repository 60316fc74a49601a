"""Why the scheduler cannot place a pod (its ``Unschedulable`` message), in trainhub's words:
a taint no node of the pool lets it past, no node with the pool's labels, not enough room
(the pod's request beside the most its pool's nodes have), a missing or unbound claim. Pure;
the pool's nodes, when known, tell what the scheduler's count of every node cannot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from trainhub.backends.kubernetes.nodes import pod_request
from trainhub.backends.kubernetes.wait import Wait, subject
from trainhub.jobs import placement
from trainhub.jobs.quantities import format_cpu, format_size
from trainhub.jobs.states import FailureClass

Obj = dict[str, Any]

# The scheduler's "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated
# taint {k: v}. preemption: ..." -> its reasons, each with the number of nodes it excluded.
_AVAILABLE = re.compile(r"^\s*0/(?P<nodes>\d+) nodes are available:\s*(?P<reasons>.*)$", re.S)
_PREEMPTION = re.compile(r"[.,]?\s*preemption:")  # what the scheduler tried next: not why
# Older schedulers name the taint ("had untolerated taint {k: v}"); 1.35 says "taint(s)".
_TAINT = re.compile(r"taint \{(?P<key>[^:}]+):\s*(?P<value>[^}]*)\}")
_INSUFFICIENT = re.compile(r"Insufficient (?P<resource>\S+)")
_CLAIM_MISSING = re.compile(r'persistentvolumeclaim "(?P<claim>[^"]+)" not found')
# Causes the nodes a pod may go to tell apart (see unschedulable's ``nodes``).
NODE_CAUSES = frozenset({"insufficient", "taint", "selector", "unplaceable"})
_RESOURCE_WORDS = {"cpu": "CPU", "memory": "memory", "nvidia.com/gpu": "GPUs"}
# Each resource's allocatable figure on a node, written as the pod's request is.
_ALLOCATABLE = {
    "cpu": (lambda n: n.cpu, lambda v: f"{format_cpu(v)} CPU"),
    "memory": (lambda n: n.memory, lambda v: f"{format_size(v)} memory"),
    "nvidia.com/gpu": (lambda n: n.gpus, lambda v: f"{v} GPUs"),
}


def _request_words(pod: Obj) -> str:
    """What the pod's containers ask for, e.g. "4 CPU, 16Gi memory, 1 GPU"."""
    words = []
    for container in pod.get("spec", {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for key in ("cpu", "memory", "nvidia.com/gpu"):
            if key in requests:
                words.append(f"{requests[key]} {_RESOURCE_WORDS[key]}")
    return ", ".join(words)


def _scheduler_reasons(message: str) -> tuple[int, list[str]] | None:
    """(nodes, reasons) of the scheduler's message; None when it is not that message."""
    m = _AVAILABLE.match(_PREEMPTION.split(message)[0].rstrip("."))
    if m is None:
        return None
    return int(m["nodes"]), [r.strip() for r in m["reasons"].split(", ") if r.strip()]


def unschedulable(
    worker: int | None, message: str, pod: Obj, nodes: Sequence[placement.Node] | None = None
) -> Wait:
    """The scheduler's ``Unschedulable`` message as a wait. ``nodes``: the pool's, when known,
    to tell a request no node could ever hold from one that waits for room."""
    who = subject(worker)
    asked = _request_words(pod)
    if m := _CLAIM_MISSING.search(message):
        return Wait(
            worker,
            "claim",
            f"{who} cannot be scheduled: the volume claim {m['claim']} does not exist",
            message,
            heals=False,
            failure_class=FailureClass.ENVIRONMENT,
        )
    if "unbound" in message and "PersistentVolumeClaim" in message:
        return Wait(
            worker,
            "claim",
            f"{who} cannot be scheduled: a volume claim it mounts is not bound to any volume",
            message,
            heals=False,
            failure_class=FailureClass.ENVIRONMENT,
        )
    parsed = _scheduler_reasons(message)
    if parsed is None or parsed[0] == 0:
        # No node at all: an autoscaler may be bringing one up.
        return Wait(
            worker,
            "no-nodes",
            f"{who} waits for a node: the cluster has none it could run on yet",
            message,
            heals=True,
        )
    count, reasons = parsed
    short = sorted({r["resource"] for r in map(_INSUFFICIENT.search, reasons) if r})
    if short:
        words = " and ".join(_RESOURCE_WORDS.get(r, r) for r in short)
        hosts = _hosts(pod, nodes or [])
        if largest := _largest(short, hosts):
            asked += f"; its pool's nodes have at most {largest} allocatable"
        if hosts and not any(placement.workers_on(n, pod_request(pod)) for n in hosts):
            return Wait(
                worker,
                "too-large",
                f"{who} asks for more {words} ({asked}) than any node of its pool has; "
                "it can never be scheduled: ask for less",
                message,
                heals=False,
                certain=True,
            )
        return Wait(
            worker,
            "insufficient",
            f"{who} waits for room: no node of its pool has enough {words} free for it "
            f"({asked}) while other pods run there",
            message,
            heals=True,
        )
    tainted = any("taint" in r or "unschedulable" in r for r in reasons)
    unlabelled = any("node affinity/selector" in r for r in reasons)
    # A pool an autoscaler grows from zero has no node until a job asks for one: it heals
    # as a node comes up (the admin is warned of a pool whose labels select no node).
    selector = Wait(
        worker,
        "selector",
        f"{who} waits for a node: none of the cluster's {count} node(s) carries the labels "
        "its pool selects yet (one must come up, e.g. by an autoscaler; if none will, the "
        "pool's node_labels match no node)",
        message,
        heals=True,
    )
    if nodes is not None and (tainted or unlabelled):
        # The nodes its pool selects say which: the scheduler counts every node of the
        # cluster, and a taint elsewhere (a control plane's) is no reason of this pod's.
        if not nodes:
            return selector
        tolerations = pod.get("spec", {}).get("tolerations") or []
        named = sorted({str(t) for n in nodes for t in placement.untolerated(n, tolerations)})
        if named:
            return _taint_wait(worker, message, named)
    elif tainted and not unlabelled:
        return _taint_wait(worker, message, _named_taints(reasons))
    elif unlabelled and not tainted:
        return selector
    elif unlabelled:  # both, the nodes not known: no node is both its pool's and open to it
        return Wait(
            worker,
            "unplaceable",
            f"{who} cannot be scheduled: no node of the cluster both carries the labels its "
            "pool selects and lets it past its taints",
            message,
            heals=False,
        )
    return Wait(worker, "unschedulable", f"{who} cannot be scheduled yet", message, heals=True)


def _hosts(pod: Obj, nodes: Sequence[placement.Node]) -> list[placement.Node]:
    """The nodes of its pool the pod may go to: those past whose taints it may go (all of
    them, where it may go to none: the taint is then the cause to name, not room)."""
    tolerations = pod.get("spec", {}).get("tolerations") or []
    return [n for n in nodes if not placement.untolerated(n, tolerations)] or list(nodes)


def _largest(short: Sequence[str], hosts: Sequence[placement.Node]) -> str:
    """The most of each resource in ``short`` one of ``hosts`` has allocatable, e.g. "2 CPU,
    4Gi memory"; "" without hosts."""
    if not hosts:
        return ""
    figures = (_ALLOCATABLE[r] for r in short if r in _ALLOCATABLE)
    return ", ".join(said(max(map(of, hosts))) for of, said in figures)


def _named_taints(reasons: Sequence[str]) -> list[str]:
    """The taints older schedulers name in their reasons ("taint {k: v}")."""
    found = (_TAINT.search(r) for r in reasons)
    return sorted({t["key"] + (f"={t['value']}" if t["value"] else "") for t in found if t})


def _taint_wait(worker: int | None, message: str, taints: list[str]) -> Wait:
    named = f" {', '.join(taints)}" if taints else ""
    return Wait(
        worker,
        "taint",
        f"{subject(worker)} cannot be scheduled: the nodes its pool selects are tainted{named} "
        "(or cordoned), and the pool has no toleration for that; no node of the cluster can "
        "take it (the admin must add the toleration to the pool, or untaint the nodes)",
        message,
        heals=False,
    )
