"""Why an admitted job's pods do not run yet, in trainhub's words: pure functions from the
pods (as dicts), their events and, when known, the pool's nodes, to one sentence naming the
worker and the cause, Kubernetes' own message kept beside it.

Kueue's side (quota) is :func:`trainhub.backends.kubernetes.status.wait_reason`; this is the
scheduler's (:mod:`~trainhub.backends.kubernetes.unschedulable`) and the kubelet's, and a pod
that nothing holds up is said to be on its way, so a starting job is never silent. A cause
either heals by waiting (an image being pulled, a node busy with other jobs) or does not (an
image that does not exist, a taint no node lets the pod past): those end the job after the
team's grace period, or at once where nothing could change the outcome (:func:`overdue`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from trainhub.backends.kubernetes.unschedulable import unschedulable
from trainhub.backends.kubernetes.wait import Wait, subject
from trainhub.jobs import placement
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass

Obj = dict[str, Any]
INDEX = "batch.kubernetes.io/job-completion-index"
_IMAGE = re.compile(r'image "(?P<image>[^"]+)"')


def _time(value: str | None) -> float | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


def _worker(pod: Obj) -> int | None:
    value = (pod.get("metadata", {}).get("annotations") or {}).get(INDEX)
    return int(value) if value is not None else None


# The kubelet's reasons for a container that waits, and what each means for the job.
_IMAGE_FAILED = frozenset({"ErrImagePull", "ImagePullBackOff"})


def container_waiting(worker: int | None, reason: str, message: str, image: str) -> Wait | None:
    who = subject(worker)
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
    who, reason = subject(worker), latest.get("reason")
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
    """What ``pod`` waits for before it runs (at least that it is on its way); None when it
    runs, ended or goes away."""
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
    wait = from_events(worker, events, now) or on_its_way(worker, pod)
    return wait if wait.since is not None else replace(wait, since=created)


def on_its_way(worker: int | None, pod: Obj) -> Wait:
    """A pending pod that nothing holds up: so a starting job is never silent."""
    node = pod.get("spec", {}).get("nodeName")
    if node:
        said, cause = f"{subject(worker)}'s container is starting on node {node}", "starting"
    else:
        said, cause = f"{subject(worker)} is being scheduled", "scheduling"
    return Wait(worker, cause, said, "", heals=True, routine=True)


# A starting job with no pod that lives: the Job controller makes them (again) next.
CREATING = Wait(None, "creating", "its pods are being created", "", heals=True, routine=True)


def job_wait(
    pods: Sequence[Obj],
    events_of: Mapping[str, Sequence[Obj]],
    now: float,
    nodes: Sequence[placement.Node] | None = None,
) -> Wait | None:
    """The one wait that explains the job: a cause that cannot heal before one that can, a
    cause before a pod merely on its way, the lowest worker first; None once its pods run.
    ``events_of``: each pod's events by its uid."""
    waits = [
        w
        for p in pods
        if (w := pod_wait(p, events_of.get(p["metadata"].get("uid", ""), ()), now, nodes))
    ]
    if not waits and not any(_runs(p) for p in pods):
        return CREATING
    return min(
        waits,
        key=lambda w: (not w.certain, w.heals, w.routine, -1 if w.worker is None else w.worker),
        default=None,
    )


def _runs(pod: Obj) -> bool:
    going = pod.get("metadata", {}).get("deletionTimestamp")
    return not going and (pod.get("status") or {}).get("phase") == "Running"


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
