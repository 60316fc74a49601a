"""The Kubernetes backend's reconcile: records in each job directory what the cluster did
(state changes, preemptions, the verdict of a job that ended, Kubernetes events, the image the
pods really ran), ends a job whose pods wait on a cause that cannot heal, starts the retries
whose backoff has passed and deactivates the Workloads of Jobs marked for suspension. The
controller runs it on every change its watches see; a session only where a cluster has none.
"""

from __future__ import annotations

import json
import time
from typing import Any

from trainhub.backends.kubernetes import manifests, status, waits
from trainhub.backends.kubernetes.cluster import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    Obj,
    by_owner,
    events_by_object,
)
from trainhub.backends.kubernetes.endings import Ending
from trainhub.backends.kubernetes.records import job_times, last_state, refusals_logged
from trainhub.backends.kubernetes.resizing import Resizing
from trainhub.jobs import confined
from trainhub.jobs.directory import LINEAGE, JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.lifecycle.notify import preemption_alert_kind

_ENDED = frozenset(s.value for s in JobState if s.terminal)


class Reconciling(Resizing, Ending):
    """Recording what the cluster did to each job, and carrying out what follows from it."""

    _reconciled: dict[str, tuple[Any, ...]]  # uid -> the versions reconcile last recorded

    def reconcile(self) -> None:
        """Record in each job directory what the cluster did since the last reconcile: state
        changes, preemptions, the verdict of a job that ended, and the Kubernetes events of the
        Job, its pods and its Workload; from one read of the namespace and one list of events."""
        seen = self._read_namespace(None)
        listed = self._workloads()
        workloads = by_owner(listed)
        events = events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        reconciled = {}
        for job in seen.jobs:
            pods, workload = seen.pods_of(job), workloads.get(job["metadata"]["uid"])
            mine = [e for uid in _uids(job, pods, workload) for e in events.get(uid, ())]
            uid, version = job["metadata"]["uid"], _versions(job, pods, workload, mine)
            reconciled[uid] = version
            if self._reconciled.get(uid) == version:
                continue  # nothing about it changed since it was last recorded: no file read
            with refusals_logged(job["metadata"]["name"]), self.as_owner_of_job(job):
                record = self._record_base(job)
                self._record_changes(record, job, pods, workload)
                self._sync_events(JobDir(record.job_dir), mine)
                self._note_workers(JobDir(record.job_dir), job, workload)
                if not self._note_image(JobDir(record.job_dir), pods):
                    reconciled.pop(uid)  # the submitter has not written the lineage yet
                if self._waits_in_vain(record, job, pods, events):
                    reconciled.pop(uid, None)  # its grace runs out with no change: look again
        self._reconciled = reconciled  # only once all are recorded: a failure retries them
        self._start_retries(seen.jobs)
        self._deactivate_suspended(seen.jobs, workloads)
        self._resize_elastic(seen.jobs, seen.pods_of, listed, workloads)

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
                times = job_times(job, workload, pods)
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
