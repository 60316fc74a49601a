"""What the Kubernetes backend does to a job after its submit: a person's cancel, suspend and
resume, and reconcile(), which records in each job directory what the cluster did (state
changes, preemptions, the verdict, Kubernetes events) and carries out the lifecycle's rules
(:mod:`trainhub.lifecycle`): a failed attempt's retry, the alert of an ending.
"""

from __future__ import annotations

import getpass
import json
import os
import time
from typing import Any

from trainhub import settings
from trainhub.alerts.announce import announce_job
from trainhub.backends.kubernetes import manifests, recovery, status, waits
from trainhub.backends.kubernetes.cluster import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    Obj,
    by_owner,
    events_by_object,
)
from trainhub.backends.kubernetes.observe import Observing
from trainhub.backends.kubernetes.records import job_times, last_state, refusals_logged
from trainhub.backends.kubernetes.submit import Submitting
from trainhub.errors import Conflict, NotFound
from trainhub.jobs import confined
from trainhub.jobs.directory import LINEAGE, JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.jobs.suspension import check_resumable, check_suspendable
from trainhub.lifecycle.notify import end_alert_kind, preemption_alert_kind
from trainhub.lifecycle.retry import RetryPlan, plan_retry, retry_event
from trainhub.lifecycle.verdict import cancel_verdict

DELETE_WAIT_SECONDS = 30.0  # for a failed Job to be gone before its retry's takes its name
_ENDED = frozenset(s.value for s in JobState if s.terminal)
# Times the final state event keeps for a record read back from the job directory.
_KEPT_TIMES = ("admitted_at", "started_at", "finished_at")


class Acting(Submitting, Observing):
    """Acting on a job: a retry's Job is made as a submit's is, and what happened is read as
    the reads see it."""

    _reconciled: dict[str, tuple[Any, ...]]  # uid -> the versions reconcile last recorded

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        from kubernetes.client import ApiException

        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        if record.state.terminal:
            return record
        JobDir(record.job_dir).emit("cancel_requested", reason=reason)
        try:
            self.batch.delete_namespaced_job(
                job_id, self.namespace, propagation_policy="Foreground"
            )
        except ApiException as e:
            if e.status != 404:
                raise
        verdict = cancel_verdict(reason, record.attempt)
        # The times it had: once the Job is gone, its directory is the only record of them.
        now = time.time()
        times = {"admitted_at": record.admitted_at, "started_at": record.started_at}
        self._finish(record, JobState.CANCELLED, verdict, {**times, "finished_at": now})
        return record.model_copy(
            update={
                "state": JobState.CANCELLED,
                "verdict": verdict,
                "cancel_requested": True,
                "cancel_reason": reason,
                "finished_at": now,
            }
        )

    def suspend(self, job_id: str, reason: str) -> JobRecord:
        """Kueue's suspension: the Job is marked, its Workload deactivated; Kueue evicts it
        and suspends the Job, whose pods get SIGTERM and the grace period to save."""
        from kubernetes.client import ApiException

        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        check_suspendable(record)
        workload = self._workload(job_id)
        if workload is None:
            raise Conflict(f"Job {job_id} is not yet known to Kueue; suspend it in a moment.")
        try:
            self.batch.patch_namespaced_job(
                job_id,
                self.namespace,
                {"metadata": {"annotations": {status.SUSPEND_ANNOTATION: reason[:500]}}},
            )
            if not self.controlled:  # else the controller does (_deactivate_suspended)
                self._deactivate(workload)
        except ApiException as e:
            if e.status == 404:
                raise NotFound(f"No job {job_id}.") from None
            raise
        JobDir(record.job_dir).emit("suspend_requested", reason=reason)
        return self.get(job_id) or record

    def resume(self, job_id: str) -> JobRecord:
        """The suspended Job is replaced by the next attempt's (as a retry is), resuming from
        the job's latest checkpoint; Kueue queues its new, active Workload."""
        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        check_resumable(record)
        plan = RetryPlan(
            attempt=record.attempt + 1,
            failure_class="suspended",
            reason="resumed",
            backoff_seconds=0.0,
            not_before=0.0,
            retries=dict(record.retries),
        )
        suspended = self._json(self.batch.read_namespaced_job, job_id, self.namespace)
        self._next_attempt(record, plan, suspended["metadata"]["uid"])
        return self.get(job_id) or record

    def reconcile(self) -> None:
        """Record in each job directory what the cluster did since the last reconcile: state
        changes, preemptions, the verdict of a job that ended, and the Kubernetes events of the
        Job, its pods and its Workload; from one read of the namespace and one list of events."""
        seen = self._read_namespace(None)
        workloads = by_owner(self._workloads())
        events = events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        reconciled = {}
        for job in seen.jobs:
            pods, workload = seen.pods_of(job), workloads.get(job["metadata"]["uid"])
            mine = [e for uid in _uids(job, pods, workload) for e in events.get(uid, ())]
            uid, version = job["metadata"]["uid"], _versions(job, pods, workload, mine)
            reconciled[uid] = version
            if self._reconciled.get(uid) == version:
                continue  # nothing about it changed since it was last recorded: no file read
            with refusals_logged(job["metadata"]["name"]):
                record = self._record_base(job)
                self._record_changes(record, job, pods, workload)
                self._sync_events(JobDir(record.job_dir), mine)
                if not self._note_image(JobDir(record.job_dir), pods):
                    reconciled.pop(uid)  # the submitter has not written the lineage yet
                if self._waits_in_vain(record, job, pods, events):
                    reconciled.pop(uid, None)  # its grace runs out with no change: look again
        self._reconciled = reconciled  # only once all are recorded: a failure retries them
        self._start_retries(seen.jobs)
        self._deactivate_suspended(seen.jobs, workloads)

    def _deactivate_suspended(self, jobs: list[Obj], workloads: dict[str, Obj]) -> None:
        """Deactivate the Workload of each Job its owner marked for suspension: where a
        controller runs, a session may annotate its own Job but not patch Workloads."""
        from kubernetes.client import ApiException

        for job in jobs:
            workload = workloads.get(job["metadata"]["uid"])
            if workload is not None and status.deactivation_due(job, workload):
                try:
                    self._deactivate(workload)
                except ApiException as e:
                    if e.status != 404:
                        raise  # gone: nothing left to deactivate

    def _deactivate(self, workload: Obj) -> None:
        self.custom.patch_namespaced_custom_object(
            KUEUE_GROUP,
            KUEUE_VERSION,
            self.namespace,
            "workloads",
            workload["metadata"]["name"],
            {"spec": {"active": False}},
        )

    def _waits_in_vain(
        self, record: JobRecord, job: Obj, pods: list[Obj], events: dict[str, list[Obj]]
    ) -> bool:
        """A starting job whose pods wait on a cause that cannot heal
        (:mod:`~trainhub.backends.kubernetes.waits`) ends once the team's grace period is over
        (at once where the cause is certain): its verdict names the cause, and its Job goes,
        releasing the quota, unless the class's retry policy retries it. True while it still
        waits so: it must be looked at again, though nothing about it changes."""
        if status.job_state(job, pods) != JobState.STARTING or job["metadata"].get(
            "deletionTimestamp"
        ):
            return False
        wait = self._job_wait(pods, events)
        if wait is None or wait.heals:
            return False
        if not waits.overdue(wait, self.team.wait_grace_minutes * 60, time.time()):
            return True
        verdict = waits.verdict(wait, self.team.wait_grace_minutes, record.attempt)
        if self._plan_retry(record, verdict):
            return False
        if self._delete_job(record.id, job["metadata"]["uid"]):
            self._finish(record, JobState.FAILED, verdict, job_times(job), retry=False)
        return False

    def _delete_job(self, job_id: str, uid: str, propagation: str = "Background") -> bool:
        """Delete that very Job (its pods and Workload with it); False when another process
        replaced it meanwhile (a stale leader's delete finds a new uid, and stops)."""
        from kubernetes.client import ApiException

        try:
            # One DeleteOptions: with a body the API server reads no query parameter, and a
            # Job's own default is to orphan its pods (and its Workload, holding the quota).
            self.batch.delete_namespaced_job(
                job_id,
                self.namespace,
                body={"preconditions": {"uid": uid}, "propagationPolicy": propagation},
            )
        except ApiException as e:
            if e.status == 409:
                return False
            if e.status != 404:
                raise
        return True

    def _record_changes(
        self, record: JobRecord, job: Obj, pods: list[Obj], workload: Obj | None
    ) -> None:
        """Write to the job directory what changed since it last recorded the Job: a
        preemption, a new state, the verdict and times of a job that ended (the final state
        event keeps Kueue's admission time, which outlives the Job: usage reads it there)."""
        jobdir = JobDir(record.job_dir)
        self._note_preemptions(record, jobdir, workload)
        observed = self._observe(job, pods, workload)
        last = last_state(jobdir)
        if last is not None and last.get("state") in _ENDED:
            # Its end is recorded, and final: a cancelled Job's pods, killed as it goes away,
            # must not make it "failed" after the fact.
            return
        if _retry_planned(last, record.attempt) and observed.state == JobState.FAILED:
            return  # failed, and its retry planned: the Job's mark may not be read back yet
        if last is None or last.get("state") != observed.state.value:
            if observed.state.terminal:
                times = job_times(job, workload)
                self._finish(record, observed.state, observed.verdict, times)
            else:
                if observed.state == JobState.SUSPENDED:
                    jobdir.emit("suspended", step=observed.suspended_step, attempt=record.attempt)
                jobdir.emit("state", state=observed.state.value, attempt=record.attempt)

    def _note_image(self, jobdir: JobDir, pods: list[Obj]) -> bool:
        """Keep in the lineage the image the pods really ran (their ``imageID`` digest);
        False when there is no lineage to write it in yet."""
        ran = status.ran_image(pods, manifests.CONTAINER)
        if ran is None:
            return True
        lineage = jobdir.read_lineage()
        if lineage is None:
            return False
        if lineage.get("ran_image") != ran:
            lineage["ran_image"] = ran
            data = json.dumps(lineage, indent=2, default=str).encode()
            confined.replace(jobdir.root, LINEAGE, data)
        return True

    def _finish(
        self,
        record: JobRecord,
        state: JobState,
        verdict: Verdict | None,
        times: dict[str, float | None] | None = None,
        *,
        retry: bool = True,
    ) -> None:
        """Record how the attempt ended: the job's end, or, for a failure its retry policy
        still allows, the plan of its next attempt (started by reconcile, see recovery)."""
        failed = state == JobState.FAILED and verdict is not None
        if failed and retry and self._plan_retry(record, verdict):  # type: ignore[arg-type]
            return
        fields: dict[str, Any] = {"state": state.value, "attempt": record.attempt}
        fields.update(
            {k: v for k, v in (times or {}).items() if k in _KEPT_TIMES and v is not None}
        )
        if verdict is not None:
            fields.update(reason=verdict.reason, verdict=verdict.model_dump(mode="json"))
        JobDir(record.job_dir).emit("state", **fields)
        kind = end_alert_kind(record.spec.notify, state)
        if kind is not None:
            ended = record.model_copy(update={"state": state, "verdict": verdict})
            self._announce(ended, kind, f"{record.id}-a{record.attempt}-{kind}")

    def _announce(self, record: JobRecord, kind: str, key: str) -> None:
        """Queue the job's alert (trainhub.alerts), once per ``key``: through the controller's
        announcer, which reads the owner's channels; else when this process is the owner's
        (only the owner's home holds the owner's channels). The reconcile goes on whatever
        happens to the alert."""
        if self.announcer is not None:
            problem = self.announcer(record, kind, key)
        elif record.user != (os.environ.get("JUPYTERHUB_USER") or getpass.getuser()):
            return
        else:
            problem = announce_job(settings.home(), record, kind, key=key)
        if problem:
            JobDir(record.job_dir).emit("alert", error=problem)

    def _plan_retry(self, record: JobRecord, verdict: Verdict) -> bool:
        """Mark the failed Job for a retry and say so in the job directory, when the policy
        allows one; False when the job ends here."""
        from kubernetes.client import ApiException

        plan = plan_retry(
            verdict, record.spec.retry, record.retries, attempt=record.attempt, now=time.time()
        )
        if plan is None:
            return False
        try:
            marked = self.batch.patch_namespaced_job(
                record.id, self.namespace, recovery.retry_annotation(plan)
            )
            self._cache_saw("jobs", record.id, version=marked.metadata.resource_version)
        except ApiException as e:
            if e.status != 404:
                raise
            return False  # the Job went meanwhile: nothing left to replace, the job ends
        jobdir = JobDir(record.job_dir)
        resume = self._resume_source(record)
        jobdir.emit("verdict", **verdict.model_copy(update={"retriable": True}).model_dump())
        jobdir.emit("retry", **retry_event(plan, resume.step if resume is not None else None))
        jobdir.emit("state", state=JobState.RETRYING.value, attempt=plan.attempt)
        return True

    def _start_retries(self, jobs: list[Obj]) -> None:
        """Replace each failed Job whose retry backoff has passed by its next attempt's."""
        now = time.time()
        for job in jobs:
            plan = recovery.pending_retry(job)
            if plan is not None and plan.due(now):
                with refusals_logged(job["metadata"]["name"]):
                    self._next_attempt(self._record_base(job), plan, job["metadata"]["uid"])

    def _next_attempt(self, record: JobRecord, plan: RetryPlan, failed_uid: str) -> None:
        """Delete the failed Job (its pods with it; its Service stays), then create the next
        attempt's, resuming from the job's latest checkpoint."""
        from kubernetes.client import ApiException

        try:  # the Service outlives the failed Job: the next attempt's pods rendezvous on it
            self.core.patch_namespaced_service(
                record.id, self.namespace, {"metadata": {"ownerReferences": None}}
            )
        except ApiException as e:
            if e.status != 404:
                raise  # gone: the next attempt's _create makes it again
        # That very Job: a stale leader's retry finds it replaced, and stops here.
        if not self._delete_job(record.id, failed_uid):
            return  # replaced by the next attempt already
        jobdir = JobDir(record.job_dir)
        source = self._resume_source(record)
        resume = str(source.path) if source is not None else None
        attempt = record.model_copy(update={"attempt": plan.attempt, "retries": plan.retries})
        deadline = time.monotonic() + DELETE_WAIT_SECONDS
        while True:
            try:
                self._create(attempt, self.pool_for(attempt), self.image_for(attempt), resume)
                break
            except ApiException as e:
                if e.status == 409 and time.monotonic() < deadline:
                    time.sleep(0.2)  # the failed Job is still being deleted
                    continue
                verdict = Verdict(
                    failure_class=FailureClass.INFRASTRUCTURE,
                    reason=f"attempt {plan.attempt} could not be created: {e.status} {e.reason}",
                    attempt=plan.attempt,
                )
                self._finish(attempt, JobState.FAILED, verdict, retry=False)
                return
        jobdir.emit(
            "state",
            state=JobState.QUEUED.value,
            attempt=plan.attempt,
            **({"resume_from": resume} if resume else {}),
        )

    def _note_preemptions(self, record: JobRecord, jobdir: JobDir, workload: Obj | None) -> None:
        seen = sum(1 for e in jobdir.iter_events() if e.get("type") == "preempted")
        count = status.preemptions(workload)
        for n in range(seen + 1, count + 1):
            jobdir.emit(
                "preempted",
                count=n,
                reason="Kueue evicted the job to make room for more important "
                "work; it waits in the queue to run again",
            )
            jobdir.emit("state", state=JobState.QUEUED.value, attempt=record.attempt)
            if (kind := preemption_alert_kind(record.spec.notify)) is not None:
                queued = record.model_copy(update={"state": JobState.QUEUED})
                self._announce(queued, kind, f"{record.id}-p{n}")

    def _sync_events(self, jobdir: JobDir, mine: list[Obj]) -> None:
        """Append the Kubernetes events of the Job, its pods and its Workload (``mine``) that
        the job directory does not hold yet."""
        if not mine:
            return  # nothing to add: the job directory is not read at all
        seen = {
            (e.get("uid"), e.get("count"))
            for e in jobdir.iter_events()
            if e.get("type") == "k8s_event"
        }
        mine.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        for event in mine:
            fields = status.event_record(event)
            if (fields["uid"], fields["count"]) not in seen:
                jobdir.emit("k8s_event", **fields)


def _uids(job: Obj, pods: list[Obj], workload: Obj | None) -> list[str]:
    """The uids of a Job, its pods and its Workload: what its Kubernetes events are about."""
    return [
        job["metadata"]["uid"],
        *(p["metadata"]["uid"] for p in pods),
        *([workload["metadata"]["uid"]] if workload else []),
    ]


def _versions(
    job: Obj, pods: list[Obj], workload: Obj | None, events: list[Obj]
) -> tuple[Any, ...]:
    """Changes whenever any of a Job's objects or events does."""
    return tuple(
        (o or {}).get("metadata", {}).get("resourceVersion")
        for o in (job, *pods, workload, *events)
    )


def _retry_planned(last: dict[str, Any] | None, attempt: int) -> bool:
    """The job directory says the failure of ``attempt`` is to be retried."""
    return (
        last is not None
        and last.get("state") == JobState.RETRYING.value
        and last.get("attempt") == attempt + 1
    )
