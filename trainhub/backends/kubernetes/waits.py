"""Why an admitted job's pods do not run yet, in trainhub's words: pure functions from the
pods (as dicts), their events and, when known, the pool's nodes, to one sentence naming the
worker and the cause, Kubernetes' own message kept beside it.

Kueue's side (quota) is :func:`trainhub.backends.kubernetes.status.wait_reason`; this is the
scheduler's and the kubelet's. A cause either heals by waiting (an image being pulled, a node
busy with other jobs) or does not (an image that does not exist, a taint no node lets the pod
past): those end the job after the team's grace period, or at once where nothing could change
the outcome (:func:`overdue`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from trainhub.jobs import placement
from trainhub.jobs.models import Verdict
from trainhub.jobs.quantities import parse_api_quantity
from trainhub.jobs.states import FailureClass

Obj = dict[str, Any]
INDEX = "batch.kubernetes.io/job-completion-index"

# The scheduler's "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated
# taint {k: v}. preemption: ..." -> its reasons, each with the number of nodes it excluded.
_AVAILABLE = re.compile(r"^\s*0/(?P<nodes>\d+) nodes are available:\s*(?P<reasons>.*)$", re.S)
_COUNTED = re.compile(r"^(?P<count>\d+)\s+(?P<reason>.*)$")
_PREEMPTION = re.compile(r"[.,]?\s*preemption:")  # what the scheduler tried next: not why
# Older schedulers name the taint ("had untolerated taint {k: v}"); 1.35 says "taint(s)".
_TAINT = re.compile(r"taint \{(?P<key>[^:}]+):\s*(?P<value>[^}]*)\}")
_INSUFFICIENT = re.compile(r"Insufficient (?P<resource>\S+)")
_CLAIM_MISSING = re.compile(r'persistentvolumeclaim "(?P<claim>[^"]+)" not found')
_IMAGE = re.compile(r'image "(?P<image>[^"]+)"')
# Causes the nodes a pod may go to tell apart (see unschedulable's ``nodes``).
NODE_CAUSES = frozenset({"insufficient", "taint", "selector", "unplaceable"})
_RESOURCE_WORDS = {"cpu": "CPU", "memory": "memory", "nvidia.com/gpu": "GPUs"}


@dataclass(frozen=True)
class Wait:
    """What one worker's pod waits for."""

    worker: int | None
    cause: str  # a short tag: taint, selector, insufficient, no-nodes, claim, image, ...
    sentence: str  # trainhub's words, naming the worker
    message: str  # Kubernetes' own
    heals: bool  # waiting may end it
    certain: bool = False  # it cannot heal, and no grace could change that
    failure_class: FailureClass = FailureClass.INFRASTRUCTURE
    since: float | None = None  # when the cause was first reported (epoch seconds)

    def text(self) -> str:
        """The one line a researcher reads: the sentence, then Kubernetes' message."""
        return f"{self.sentence} (Kubernetes: {self.message})" if self.message else self.sentence


def _time(value: str | None) -> float | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


def _worker(pod: Obj) -> int | None:
    value = (pod.get("metadata", {}).get("annotations") or {}).get(INDEX)
    return int(value) if value is not None else None


def _who(worker: int | None) -> str:
    return "its pod" if worker is None else f"worker {worker}"


def _request_words(pod: Obj) -> str:
    """What the pod's containers ask for, e.g. "4 CPU, 16Gi memory, 1 GPU"."""
    words = []
    for container in pod.get("spec", {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for key in ("cpu", "memory", "nvidia.com/gpu"):
            if key in requests:
                words.append(f"{requests[key]} {_RESOURCE_WORDS[key]}")
    return ", ".join(words)


def _request(pod: Obj) -> placement.Request:
    total = {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0}
    for container in pod.get("spec", {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for key in total:
            if key in requests:
                total[key] += float(parse_api_quantity(requests[key]))
    return placement.Request(
        workers=1,
        cpu=total["cpu"],
        memory=int(total["memory"]),
        gpus=int(total["nvidia.com/gpu"]),
    )


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
    who = _who(worker)
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
        request = _request(pod)
        if nodes and not any(placement.workers_on(n, request) for n in nodes):
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
    selector = Wait(
        worker,
        "selector",
        f"{who} cannot be scheduled: none of the cluster's {count} node(s) carries the "
        "labels its pool selects (the pool's node_labels match no node)",
        message,
        heals=False,
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


def _named_taints(reasons: Sequence[str]) -> list[str]:
    """The taints older schedulers name in their reasons ("taint {k: v}")."""
    found = (_TAINT.search(r) for r in reasons)
    return sorted({t["key"] + (f"={t['value']}" if t["value"] else "") for t in found if t})


def _taint_wait(worker: int | None, message: str, taints: list[str]) -> Wait:
    named = f" {', '.join(taints)}" if taints else ""
    return Wait(
        worker,
        "taint",
        f"{_who(worker)} cannot be scheduled: the nodes its pool selects are tainted{named} "
        "(or cordoned), and the pool has no toleration for that; no node of the cluster can "
        "take it (the admin must add the toleration to the pool, or untaint the nodes)",
        message,
        heals=False,
    )


# The kubelet's reasons for a container that waits, and what each means for the job.
_IMAGE_NEVER = frozenset({"ErrImageNeverPull", "InvalidImageName"})
_IMAGE_FAILED = frozenset({"ErrImagePull", "ImagePullBackOff"})


def container_waiting(worker: int | None, reason: str, message: str, image: str) -> Wait | None:
    who = _who(worker)
    if reason == "ErrImageNeverPull":
        return Wait(
            worker,
            "image",
            f"{who} cannot start: its image {image} is not on the node, and its pull policy "
            "forbids pulling it",
            message,
            heals=False,
            certain=True,
            failure_class=FailureClass.ENVIRONMENT,
        )
    if reason == "InvalidImageName":
        return Wait(
            worker,
            "image",
            f"{who} cannot start: {image} is not a valid image reference",
            message,
            heals=False,
            certain=True,
            failure_class=FailureClass.ENVIRONMENT,
        )
    if reason in _IMAGE_FAILED:
        return Wait(
            worker,
            "image",
            f"{who} cannot pull its image {image}: the registry does not give it (not found, "
            "not allowed, or not reachable)",
            message,
            heals=False,
            failure_class=FailureClass.ENVIRONMENT,
        )
    if reason == "CreateContainerConfigError":
        return Wait(
            worker,
            "config",
            f"{who} cannot start: its container's configuration refers to something missing",
            message,
            heals=False,
            failure_class=FailureClass.ENVIRONMENT,
        )
    return None


def _latest(events: Sequence[Obj]) -> Obj | None:
    def when(e: Obj) -> str:
        return e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or ""

    return max(events, key=when, default=None)


def _first_seen(event: Obj) -> float | None:
    return _time(event.get("firstTimestamp") or event.get("eventTime"))


def from_events(worker: int | None, events: Sequence[Obj], now: float) -> Wait | None:
    """What the kubelet's latest event on a scheduled pod says it waits for."""
    latest = _latest(events)
    if latest is None:
        return None
    who, reason = _who(worker), latest.get("reason")
    message = latest.get("message") or latest.get("note") or ""
    since = _first_seen(latest)
    if reason == "FailedMount":
        return Wait(
            worker,
            "volume",
            f"{who} cannot mount a volume (its shared volume or a dataset)",
            message,
            heals=False,
            since=since,
        )
    if reason == "FailedCreatePodSandBox":
        return Wait(
            worker,
            "sandbox",
            f"{who} cannot start: the node could not create its pod sandbox (network or "
            "container runtime)",
            message,
            heals=False,
            since=since,
        )
    if reason == "Pulling":
        image = m["image"] if (m := _IMAGE.search(message)) else "its image"
        waited = f" for {now - since:.0f} s" if since is not None else ""
        return Wait(
            worker,
            "pulling",
            f"{who} is pulling its image {image}{waited}",
            message,
            True,
            since=since,
        )
    return None


def pod_wait(
    pod: Obj, events: Sequence[Obj], now: float, nodes: Sequence[placement.Node] | None = None
) -> Wait | None:
    """What ``pod`` waits for before it runs; None when it runs, ended, or says nothing."""
    status = pod.get("status") or {}
    if status.get("phase") != "Pending" or pod.get("metadata", {}).get("deletionTimestamp"):
        return None
    worker = _worker(pod)
    created = _time(pod.get("metadata", {}).get("creationTimestamp"))
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
            wait = unschedulable(worker, c.get("message") or "", pod, nodes)
            return replace(wait, since=_time(c.get("lastTransitionTime")) or created)
    images = {
        c.get("name"): c.get("image", "") for c in pod.get("spec", {}).get("containers") or []
    }
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        wait = container_waiting(
            worker,
            waiting.get("reason") or "",
            waiting.get("message") or "",
            cs.get("image") or images.get(cs.get("name"), ""),
        )
        if wait is not None:
            failed = [e for e in events if e.get("reason") in ("Failed", "BackOff")]
            first = min((t for e in failed if (t := _first_seen(e))), default=None)
            return replace(wait, since=first or created)
    wait = from_events(worker, events, now)
    if wait is not None and wait.since is None:
        wait = replace(wait, since=created)
    return wait


def job_wait(
    pods: Sequence[Obj],
    events_of: Mapping[str, Sequence[Obj]],
    now: float,
    nodes: Sequence[placement.Node] | None = None,
) -> Wait | None:
    """The one wait that explains the job: a cause that cannot heal before one that can, the
    lowest worker first. ``events_of``: each pod's events by its uid."""
    waits = [
        w
        for p in pods
        if (w := pod_wait(p, events_of.get(p["metadata"].get("uid", ""), ()), now, nodes))
    ]
    return min(
        waits,
        key=lambda w: (not w.certain, w.heals, w.worker if w.worker is not None else -1),
        default=None,
    )


def overdue(wait: Wait, grace_seconds: float, now: float) -> bool:
    """Whether the job should end on ``wait``: a cause that cannot heal, once certain or once
    it has lasted the grace period."""
    if wait.heals:
        return False
    if wait.certain:
        return True
    return wait.since is not None and now - wait.since >= grace_seconds


def verdict(wait: Wait, grace_minutes: float, attempt: int) -> Verdict:
    """The verdict of a job ended on ``wait`` (see :func:`overdue`)."""
    waited = "" if wait.certain else f" after {grace_minutes:g} min"
    return Verdict(
        failure_class=wait.failure_class,
        reason=f"{wait.sentence}; ended{waited}, as waiting cannot mend it",
        message=wait.message or None,
        attempt=attempt,
    )
