"""Pure functions from Kubernetes objects (as dicts: Job, Kueue Workload and ClusterQueue, pods,
events) to trainhub's vocabulary: a job state, a sentence saying why it waits, a verdict (with
the job directory's evidence, :class:`~trainhub.lifecycle.results.Evidence`)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from typing import Any

from trainhub.backends.kubernetes.manifests import CONTAINER, STOPPED_EXIT
from trainhub.backends.kubernetes.recovery import pending_retry
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.results import Evidence
from trainhub.lifecycle.verdict import (
    RankExit,
    attempt_verdict,
    cancel_verdict,
    first_running,
    time_limit_reason,
    torchrun_root_causes,
)

Obj = dict[str, Any]

_SHORT = re.compile(
    r"insufficient unused quota for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+), "
    r"(?P<more>\S+) more needed"
)
_NEVER = re.compile(
    r"insufficient quota for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+), "
    r"previously considered podsets "
    r"requests \((?P<prev>[^)]*)\) \+ current podset request \((?P<req>[^)]*)\) "
    r"> maximum capacity \((?P<max>[^)]*)\)"
)

# The Job controller's message when a pod's exit matches the FailJob rule.
_FAILED_POD = re.compile(r"for pod [^/\s]+/(?P<pod>\S+) failed with exit code")


def condition(obj: Obj | None, type_: str) -> Obj | None:
    for c in (obj or {}).get("status", {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def is_true(obj: Obj | None, type_: str) -> bool:
    c = condition(obj, type_)
    return c is not None and c.get("status") == "True"


def quota_figures(cq: Obj | None, flavor: str, resource: str) -> tuple[str | None, str | None]:
    """(in use, nominal) of one resource of one flavor of a ClusterQueue, as the API writes them."""
    if not cq:
        return None, None
    used = nominal = None
    for fu in (
        cq.get("status", {}).get("flavorsReservation")
        or cq.get("status", {}).get("flavorsUsage")
        or []
    ):
        if fu.get("name") == flavor:
            used = next(
                (r.get("total", "0") for r in fu.get("resources", []) if r.get("name") == resource),
                None,
            )
    for group in cq.get("spec", {}).get("resourceGroups", []):
        for fq in group.get("flavors", []):
            if fq.get("name") == flavor:
                nominal = next(
                    (
                        r.get("nominalQuota")
                        for r in fq.get("resources", [])
                        if r.get("name") == resource
                    ),
                    None,
                )
    return used, nominal


def wait_reason(workload: Obj | None, cluster_queue: Obj | None = None) -> str | None:
    """Why Kueue has not admitted the workload yet, as a sentence naming the short quota."""
    if workload is None:
        return "waiting for Kueue to pick the job up"
    if is_true(workload, "QuotaReserved") or is_true(workload, "Admitted"):
        return None
    cq_name = (cluster_queue or {}).get("metadata", {}).get("name") or workload.get(
        "status", {}
    ).get("admission", {}).get("clusterQueue")
    where = f" in ClusterQueue {cq_name}" if cq_name else ""
    message = (condition(workload, "QuotaReserved") or {}).get("message") or ""
    if m := _NEVER.search(message):
        queue = f"ClusterQueue {cq_name}" if cq_name else "its queue"
        return (
            f"asks for {m['req']} {m['res']} in pool {m['flavor']}, more than {queue} "
            f"can ever get ({m['max']}); ask for less"
        )
    if m := _SHORT.search(message):
        used, nominal = quota_figures(cluster_queue, m["flavor"], m["res"])
        figures = (
            f" ({used} of {nominal} in use)" if used is not None and nominal is not None else ""
        )
        return f"waiting for {m['more']} {m['res']} in pool {m['flavor']}{where}{figures}"
    if message:
        return f"waiting for Kueue: {message}"
    return "waiting for Kueue to admit it"


# On a Job a person suspended: the reason. Its Workload is deactivated (spec.active false), so
# Kueue evicts it, suspends the Job and keeps it out of the queue until trainhub resumes it.
SUSPEND_ANNOTATION = "trainhub.io/suspend"
# The reasons Kueue gives an eviction by deactivation (its versions name it differently).
_DEACTIVATED = frozenset({"InactiveWorkload", "Deactivated"})


def preemptions(workload: Obj | None) -> int:
    """How many times Kueue evicted this workload to make room (it then requeues it)."""
    stats = (workload or {}).get("status", {}).get("schedulingStats") or {}
    counted = sum(
        int(e.get("count", 0))
        for e in stats.get("evictions") or []
        if e.get("reason") == "Preempted"
    )
    if counted:
        return counted
    if (condition(workload, "Evicted") or {}).get("reason") in _DEACTIVATED:
        return int(is_true(workload, "Preempted"))  # a suspension is no preemption
    return int(any(is_true(workload, t) for t in ("Preempted", "Evicted")))


def suspend_requested(job: Obj) -> bool:
    return SUSPEND_ANNOTATION in (job.get("metadata", {}).get("annotations") or {})


def deactivation_due(job: Obj, workload: Obj | None) -> bool:
    """A Job marked for suspension whose Workload is still active and not finished."""
    if not suspend_requested(job) or workload is None:
        return False
    active = (workload.get("spec") or {}).get("active", True) is not False
    return active and not is_true(workload, "Finished")


def job_state(job: Obj, pods: list[Obj]) -> JobState:
    """The state the objects say. An ended Job's verdict may say more (a rank that left a cell
    without a word ends a complete Job failed): :func:`ending_verdict`, ``end_state``."""
    if pending_retry(job) is not None:
        return JobState.RETRYING  # failed; trainhub replaces it by the next attempt's Job
    if completed(job):
        return JobState.SUCCEEDED
    if deadline_passed(job) is not None:
        return JobState.CANCELLED  # stopped at its own time limit, as the local backend stops it
    if is_true(job, "Failed") or is_true(job, "FailureTarget") or failing_pod(job, pods):
        return JobState.FAILED
    if suspend_requested(job):
        # Suspended once Kueue suspended the Job and every pod has ended (their stop
        # callbacks saved on the way out); until then it still runs.
        running = [p for p in pods if p.get("status", {}).get("phase") in ("Pending", "Running")]
        if job.get("spec", {}).get("suspend") and not running:
            return JobState.SUSPENDED
        return JobState.RUNNING if running else JobState.STARTING
    if job.get("spec", {}).get("suspend"):
        return JobState.QUEUED
    live = [p for p in pods if not p.get("metadata", {}).get("deletionTimestamp")]
    # A pod that already succeeded counts as running: the Job controller has yet to mark the
    # Job Complete, and "starting" would go back in the job's timeline.
    if live and any(p.get("status", {}).get("phase") in ("Running", "Succeeded") for p in live):
        return JobState.RUNNING
    return JobState.STARTING


def failing_pod(job: Obj, pods: list[Obj]) -> Obj | None:
    """The pod whose end fails the running Job by its podFailurePolicy (``manifests.job``),
    the first to end if several did: failed, neither disrupted nor stopped from outside (exit
    143), nor deleted. Read from the pods, so a verdict need not wait for the Job controller,
    which marks the Job failed only once its own queue reaches it (seconds, when many Jobs end
    at once); a pod going away with its Job, or with a suspension, is left to it."""
    meta = job.get("metadata") or {}
    if job.get("spec", {}).get("suspend") or meta.get("deletionTimestamp"):
        return None
    failed = [p for p in pods if _fails_job(p)]
    return min(failed, key=lambda p: finished_at(p) or "", default=None)


def _fails_job(pod: Obj) -> bool:
    if pod.get("status", {}).get("phase") != "Failed":
        return False
    if (pod.get("metadata") or {}).get("deletionTimestamp") or is_true(pod, "DisruptionTarget"):
        return False
    term = _container_end(pod) or {}
    return term.get("exitCode") != STOPPED_EXIT


def _container_end(pod: Obj) -> Obj | None:
    for cs in pod.get("status", {}).get("containerStatuses") or []:
        if cs.get("name") == CONTAINER:
            return (cs.get("state") or {}).get("terminated")
    return None


def finished_at(pod: Obj | None) -> str | None:
    """When the pod's training container ended, as the API writes it."""
    return (_container_end(pod) or {}).get("finishedAt") if pod else None


def _terminations(pods: list[Obj]) -> list[tuple[int | None, Obj]]:
    out = []
    for pod in pods:
        index = (
            pod.get("metadata", {})
            .get("annotations", {})
            .get("batch.kubernetes.io/job-completion-index")
        )
        for cs in pod.get("status", {}).get("containerStatuses") or []:
            term = (cs.get("state") or {}).get("terminated")
            if term:
                out.append((int(index) if index is not None else None, term))
    return out


def completed(job: Obj) -> bool:
    """Every pod exited 0 (which says nothing yet of the cells: :func:`ending_verdict`)."""
    return is_true(job, "Complete") or is_true(job, "SuccessCriteriaMet")


def deadline_passed(job: Obj) -> Obj | None:
    """The condition saying the Job ran past its ``activeDeadlineSeconds`` (the spec's max
    runtime): the Job controller then stops its pods (SIGTERM, as a cancel does)."""
    for type_ in ("FailureTarget", "Failed"):
        c = condition(job, type_)
        if c is not None and c.get("status") == "True" and c.get("reason") == "DeadlineExceeded":
            return c
    return None


def last_world(job: Obj, evidence: Evidence, ranks_per_worker: int) -> int:
    """The ranks of an elastic job's last world: the world that claimed its directory last
    (:mod:`trainhub.jobs.world`), else the Job's size now. A grow asked for just before the end
    sets the size while the world that ends the job is still the smaller one."""
    size_now = int(job.get("spec", {}).get("parallelism") or 0) * ranks_per_worker
    return evidence.world_size or size_now


def ending_verdict(
    job: Obj, pods: list[Obj], evidence: Evidence, *, attempt: int, world: int | None = None
) -> Verdict | None:
    """How an ended Job's attempt ended, by the lifecycle's rules as the local supervisor
    applies them: None for a success, else the verdict (``end_state`` says the job's state).
    ``world``: an elastic job's ranks at its last size."""
    if completed(job):
        # Every pod exited 0, yet a rank may have left a cell without a word (C's _exit(0)):
        # that rank quit before the notebook's end. An elastic job's ranks past its last size
        # were stopped by a membership change: where they were is not how it ended.
        kept = (lambda rank: True) if world is None else (lambda rank: rank < world)
        return attempt_verdict(
            attempt=attempt,
            rank_results={r: v for r, v in evidence.rank_results.items() if kept(r)},
            exits=[RankExit(None, 0)],
            running={r: c for r, c in evidence.running.items() if kept(r)},
        )
    if (stop := deadline_passed(job)) is not None:
        return _time_limit_verdict(job, stop, evidence, attempt)
    return failure_verdict(job, pods, evidence, attempt=attempt)


def _time_limit_verdict(job: Obj, stop: Obj, evidence: Evidence, attempt: int) -> Verdict:
    """The time limit's stop, naming the cell it interrupted and how long that cell had run
    when the Job controller stopped the pods."""
    limit = timedelta(seconds=int(job.get("spec", {}).get("activeDeadlineSeconds") or 0))
    started = _time(job.get("status", {}).get("startTime"))
    at = _time(stop.get("lastTransitionTime")) or (started and started + limit.total_seconds())
    reason = time_limit_reason(limit, evidence.running, at or time.time())
    return cancel_verdict(reason, attempt, first_running(evidence.running))


def failure_verdict(job: Obj, pods: list[Obj], evidence: Evidence, *, attempt: int) -> Verdict:
    """Why a failed Job failed: the ranks' own reports first, then how the pod whose exit
    failed it ended; where its torchrun kept its output, the rank it names as the first to
    fail and the cell that rank was in, as the local supervisor reads them."""
    failed = condition(job, "Failed") or condition(job, "FailureTarget") or {}
    # The pod whose exit failed the Job (the podFailurePolicy names it) goes first, with the
    # others that failed by themselves (a lost peer's error, a kill): the rules weigh them as
    # torchrun's ranks. Those stopped or deleted after it are collateral, not evidence.
    named = m["pod"] if (m := _FAILED_POD.search(failed.get("message") or "")) else None
    first = next((p for p in pods if p.get("metadata", {}).get("name") == named), None)
    first = first or failing_pod(job, pods)
    if first is not None:
        ends = _terminations([first, *(p for p in pods if p is not first and _fails_job(p))])
    else:
        ends = _terminations(pods)
        ends = [e for e in ends if e[1].get("exitCode") != STOPPED_EXIT] or ends
    exits: list[RankExit] = []
    unnamed: list[tuple[int | None, Obj]] = []  # (worker, end) of pods no torchrun output names
    for worker, term in ends:
        code = int(term.get("exitCode", 1))
        causes = []
        if worker is not None and code != 0:  # its torchrun's summary names the rank
            causes = torchrun_root_causes(evidence.agent_output(worker))
        exits.extend(causes or [RankExit(None, code)])
        if not causes:
            unnamed.append((worker, term))
    verdict = attempt_verdict(
        attempt=attempt,
        rank_results=evidence.rank_results,
        exits=exits,
        oom_killed=any(t.get("reason") == "OOMKilled" for _, t in ends),
        running=evidence.running,
    )
    if verdict is None:
        message = failed.get("message") or "the Job failed"
        return Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason=message, attempt=attempt)
    if verdict.rank is None:  # told by a pod's end: name its worker, keep the kubelet's words
        worker, term = next(
            ((w, t) for w, t in unnamed if t.get("exitCode") == verdict.exit_code), (None, {})
        )
        if worker is not None:
            verdict.reason = verdict.reason.replace("a worker", f"worker {worker}", 1)
        if term.get("message"):
            verdict.message = term["message"]
    return verdict


def _time(value: str | None) -> float | None:
    """An API time (RFC 3339) as epoch seconds."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


def event_record(event: Obj) -> dict[str, Any]:
    """A Kubernetes event (core/v1 or events.k8s.io/v1) as a job event's fields."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return {
        "uid": event.get("metadata", {}).get("uid"),
        "count": event.get("count") or (event.get("series") or {}).get("count") or 1,
        "kind": involved.get("kind"),
        "object": involved.get("name"),
        "reason": event.get("reason"),
        "message": event.get("message") or event.get("note"),
        "event_type": event.get("type"),
    }


def ran_image(pods: list[Obj], container: str) -> dict[str, Any] | None:
    """The image the job's pods really ran: each started pod's ``imageID`` (the digest the
    node pulled) for ``container``, with the reference they named; None while no pod says."""
    ids: dict[str, str] = {}
    named = None
    for pod in pods:
        for cs in pod.get("status", {}).get("containerStatuses") or []:
            if cs.get("name") == container and cs.get("imageID"):
                ids[pod.get("metadata", {}).get("name", "")] = cs["imageID"]
                named = named or cs.get("image")
    if not ids:
        return None
    distinct = sorted(set(ids.values()))
    return {
        "backend": "kubernetes",
        "image": named,
        "image_id": distinct[0] if len(distinct) == 1 else None,
        "pods": dict(sorted(ids.items())),
    }
