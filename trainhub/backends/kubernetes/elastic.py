"""Elastic jobs on Kubernetes (``resources.min_workers`` .. ``workers``): what size each one
should run at next, from one read of the namespace, and the events of its membership.

Kueue admits an elastic Job (manifests.ELASTIC_JOB, feature gate ElasticJobsViaWorkloadSlices)
at its parallelism, MIN when submitted. A larger parallelism is admitted as a new Workload
slice that replaces the old one once the team's quota has room (the new workers' pods stay
scheduling-gated until then), so quota is never exceeded; a smaller one is recorded in the
admitted Workload at once and frees its quota. The controller only chooses the size:

- grow by what the queue's free quota holds (one worker's request each), up to MAX, while no
  job of the same or higher priority waits for that room;
- shrink, down to MIN, by what a waiting higher-priority job lacks, and by each worker whose
  pod cannot be placed for a minute (its node lost);
- a queued elastic job is left as it is (see next_size).

Kueue itself evicts a whole Workload when it preempts, so a team whose ClusterQueue preempts
within itself (``preemption.within_cluster_queue``) loses an elastic job whole to a higher-
priority one; it is then queued again at the size it had and resumes from its checkpoint.
The functions here are pure; the backend patches and records (Elastic in reconcile).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from trainhub.backends.kubernetes.manifests import WORKERS_ANNOTATION
from trainhub.backends.kubernetes.names import GPU
from trainhub.backends.kubernetes.status import is_true, quota_figures
from trainhub.jobs.quantities import parse_api_quantity
from trainhub.usage.kueue import timestamp

Obj = dict[str, Any]
INDEX = "batch.kubernetes.io/job-completion-index"
UNPLACED_SECONDS = 60  # before a worker the scheduler cannot place is given up


@dataclass(frozen=True)
class Resize:
    workers: int
    reason: str


def worker_range(job: Obj) -> tuple[int, int] | None:
    """(MIN, MAX) of an elastic Job, None for a fixed-size one."""
    text = (job["metadata"].get("annotations") or {}).get(WORKERS_ANNOTATION)
    if not text or ":" not in text:
        return None
    low, high = text.split(":", 1)
    return int(low), int(high)


def size(job: Obj) -> int:
    return int(job.get("spec", {}).get("parallelism") or 0)


def admitted_workers(workload: Obj | None) -> int | None:
    """Workers the Workload holds quota for now; None when it holds none. Its pod sets' counts:
    Kueue records a scale-down there in place (the admission keeps the size it admitted)."""
    if workload is None or not is_true(workload, "QuotaReserved") or is_true(workload, "Finished"):
        return None
    return sum(int(ps.get("count") or 0) for ps in workload.get("spec", {}).get("podSets") or [])


def _resource(job: Obj) -> str:
    """What a worker of this job is counted by: GPUs, or CPU for a CPU-only job."""
    requests = _requests(job["spec"]["template"])
    return GPU if GPU in requests else "cpu"


def _requests(template: Obj) -> dict[str, Any]:
    containers = template.get("spec", {}).get("containers") or []
    return containers[0].get("resources", {}).get("requests") or {} if containers else {}


def per_worker(job: Obj, resource: str) -> float:
    return float(parse_api_quantity(_requests(job["spec"]["template"]).get(resource, 0)))


def _asks(workload: Obj, resource: str) -> float:
    """What a Workload asks of one resource, all its pod sets together."""
    return sum(
        float(ps.get("count") or 0)
        * float(parse_api_quantity(_requests(ps.get("template") or {}).get(resource, 0)))
        for ps in workload.get("spec", {}).get("podSets") or []
    )


def waiting(workload: Obj) -> bool:
    """Waiting for quota: active, neither admitted nor finished."""
    return (
        workload.get("spec", {}).get("active", True) is not False
        and not is_true(workload, "QuotaReserved")
        and not is_true(workload, "Finished")
    )


def _priority(workload: Obj | None) -> int:
    return int((workload or {}).get("spec", {}).get("priority") or 0)


def free_quota(cq: Obj | None, flavor: str | None, resource: str, workloads: list[Obj]) -> float:
    """The queue's nominal quota of ``resource`` in ``flavor`` that none of the namespace's
    ``workloads`` (the queue's: one team, one namespace) holds. Counted from the Workloads, not
    the queue's status, which lags a resize Kueue already recorded; 0 when unknown."""
    if flavor is None:
        return 0.0
    _, nominal = quota_figures(cq, flavor, resource)
    if nominal is None:
        return 0.0
    held = sum(
        _asks(w, resource)
        for w in workloads
        if admitted_workers(w) is not None and flavor_of(w, resource) == flavor
    )
    return float(parse_api_quantity(nominal)) - held


def flavor_of(workload: Obj | None, resource: str) -> str | None:
    assignments = (workload or {}).get("status", {}).get("admission", {}).get("podSetAssignments")
    for a in assignments or []:
        if flavor := (a.get("flavors") or {}).get(resource):
            return str(flavor)
    return None


def unplaceable(job: Obj, pods: list[Obj], now: float) -> list[str]:
    """Workers (indexes below the size) whose pod the scheduler has not placed for
    UNPLACED_SECONDS: a replacement for a pod whose node was lost, with no node left to take
    it (not one that waits a moment for a stopping pod's room)."""
    out = []
    for pod in pods:
        index = (pod["metadata"].get("annotations") or {}).get(INDEX)
        cond = next(
            (
                c
                for c in pod.get("status", {}).get("conditions") or []
                if c.get("type") == "PodScheduled"
            ),
            None,
        )
        if (
            index is not None
            and int(index) < size(job)
            and pod.get("status", {}).get("phase") == "Pending"
            and cond is not None
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
            and (timestamp(cond.get("lastTransitionTime")) or now) <= now - UNPLACED_SECONDS
        ):
            out.append(index)
    return sorted(out)


def next_size(
    job: Obj,
    pods: list[Obj],
    workload: Obj | None,
    others: list[Obj],
    cq: Obj | None,
    now: float | None = None,
) -> Resize | None:
    """The size an elastic Job should have now, and why; None to leave it. ``others``: the
    Workloads of the namespace's other Jobs (the team's queue); ``now``: epoch seconds."""
    bounds = worker_range(job)
    if bounds is None or job["metadata"].get("deletionTimestamp"):
        return None
    if any(is_true(job, c) for c in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet")):
        return None
    held = admitted_workers(workload)
    if held is None:
        # Queued (never admitted, or evicted whole): Kueue readmits it at the size it asks.
        # Not resized while queued: Kueue 0.17.1 then leaves the Job suspended for good (a
        # second Workload for it fails on its slice-name annotation).
        return None
    low, high = bounds
    resource = _resource(job)
    each = per_worker(job, resource)
    if each <= 0:
        return None
    clock = time.time() if now is None else now
    now, mine = size(job), _priority(workload)
    ahead = [w for w in others if waiting(w)]
    free = free_quota(cq, flavor_of(workload, resource), resource, [*others, workload])
    if now < held:
        return None  # a shrink Kueue has yet to record: one resize at a time
    higher = [w for w in ahead if _priority(w) > mine]
    lacking = sum(_asks(w, resource) for w in higher) - free
    if lacking > 0 and held > low:
        target = max(low, held - math.ceil(lacking / each))
        names = ", ".join(_owner(w) for w in higher)
        return Resize(target, f"a higher-priority job waits for the team's quota ({names})")
    if lost := unplaceable(job, pods, clock):
        target = max(low, now - len(lost))
        if target < now:
            workers = ", ".join(lost)
            return Resize(
                target, f"worker(s) {workers} unplaced for {UNPLACED_SECONDS} s (node lost)"
            )
    if now > held:
        return None  # a larger slice waits for Kueue: one resize at a time
    if held < high and not any(_priority(w) >= mine for w in ahead):
        room = int(free // each)
        if room > 0:
            target = min(high, held + room)
            return Resize(target, f"the team's quota has room for {target - held} more")
    return None


def _owner(workload: Obj) -> str:
    refs = workload["metadata"].get("ownerReferences") or []
    return str(refs[0]["name"]) if refs else str(workload["metadata"]["name"])


def membership_event(
    previous: int | None, held: int | None, reason: str | None
) -> dict[str, Any] | None:
    """The event of a change in the workers an elastic job holds quota for (None: none)."""
    if held is None or held == previous:
        return None
    return {
        "workers": held,
        "previous": previous,
        "reason": reason or ("admitted" if previous is None else "resized by Kueue"),
    }


def resize_patch(target: int, reason: str, annotation: str) -> Obj:
    """An Indexed Job resizes with completions and parallelism together; the reason rides
    along for the membership event once Kueue has admitted the new size."""
    return {
        "metadata": {"annotations": {annotation: reason}},
        "spec": {"parallelism": target, "completions": target},
    }
