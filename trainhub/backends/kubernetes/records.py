"""A job's record as the Kubernetes backend builds it: from its live Job, pods and Workload and
its directory, or, once its objects are gone, from its directory alone. Writes nothing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from trainhub.backends.kubernetes import status
from trainhub.backends.kubernetes.cluster import Cluster, Obj
from trainhub.backends.kubernetes.identity import USER_LABEL, owner_label
from trainhub.backends.kubernetes.manifests import ANNOTATION
from trainhub.backends.kubernetes.names import SLICE_REPLACES
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.jobs.suspension import saved_step
from trainhub.lifecycle.results import attempt_evidence
from trainhub.lifecycle.retry import count_retry
from trainhub.lifecycle.verdict import end_state
from trainhub.usage.kueue import workload_times

log = logging.getLogger(__name__)
RECORDS_KEPT = 10_000  # records a backend keeps built (a few KiB each)
# A retry replaces the failed Job by the next attempt's within seconds of its backoff; past
# this, a retrying job with no Job was left so (its Job removed behind trainhub's back).
REPLACING_S = 120.0
# A Job is made just after its directory's "submitted" word, and a watch-fed cache (another
# process's too, which wrote "queued" or "starting" on seeing it) holds it a moment later
# still: within this of such a word, a job with no Job to be seen is being made, not lost.
SETTLING_S = 30.0
_BEFORE_IT_RUNS = (JobState.QUEUED, JobState.STARTING)


class Records(Cluster):
    # uid -> (what the record was built from, the record): a page of jobs builds only the
    # records whose Job, pods or directory changed since (reading a directory is most of a
    # record's cost).
    _records: dict[str, tuple[tuple[Any, ...], JobRecord]]
    # uid -> (that record, the versions of its Job and Workload, what the Workload made of
    # it): a page of unchanged jobs copies no record.
    _admitted: dict[str, tuple[JobRecord, tuple[Any, ...], JobRecord]]

    def _observe(self, job: Obj, pods: list[Obj], workload: Obj | None) -> JobRecord:
        """The record of a live Job, from its objects and its directory; writes nothing."""
        return self._with_workload(self._observed(job, pods), job, workload)

    def _observed(self, job: Obj, pods: list[Obj]) -> JobRecord:
        """The record of a live Job without what its Workload adds (:meth:`_with_workload`)."""
        uid, key = job["metadata"].get("uid", ""), self._built_from(job, pods)
        held = self._records.get(uid)
        if key is not None and held is not None and held[0] == key:
            return held[1]
        observed = self._observe_afresh(job, pods)
        # A failed or suspended job's record also reads its ranks' files and its checkpoints,
        # below the directory: those are built each time. A succeeded or cancelled one's
        # evidence was written before its pods ended, which changed their versions (the key).
        if key is not None and observed.state not in (JobState.FAILED, JobState.SUSPENDED):
            if len(self._records) >= RECORDS_KEPT:
                self._records.clear()
            self._records[uid] = (key, observed)
        return observed

    def _with_workload(self, record: JobRecord, job: Obj, workload: Obj | None) -> JobRecord:
        """:func:`with_workload`, made again only once the record, its Job or its Workload
        changed."""
        uid = job["metadata"].get("uid", "")
        versions = (
            job["metadata"].get("resourceVersion"),
            (workload or {}).get("metadata", {}).get("resourceVersion"),
        )
        held = self._admitted.get(uid)
        if held is not None and held[0] is record and held[1] == versions:
            return held[2]
        admitted = with_workload(record, job, workload)
        if versions[0] is not None:
            if len(self._admitted) >= RECORDS_KEPT:
                self._admitted.clear()
            self._admitted[uid] = (record, versions, admitted)
        return admitted

    def _built_from(self, job: Obj, pods: list[Obj]) -> tuple[Any, ...] | None:
        """The versions of a Job and its pods, and the time its directory last changed (an
        edit, a file swapped: every write there is a rename into it); None when it cannot be
        read (then the record is built, and says why)."""
        try:
            path = f"{self.jobs_root}/{job['metadata']['name']}"  # a name has no "/" (a label's)
            changed = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        return (
            job["metadata"].get("resourceVersion"),
            tuple(sorted(p["metadata"].get("resourceVersion") or "" for p in pods)),
            changed.st_mtime_ns,
            changed.st_ino,
        )

    def _observe_afresh(self, job: Obj, pods: list[Obj]) -> JobRecord:
        record = self._record_base(job)
        state = status.job_state(job, pods)
        verdict = None
        if state.terminal:  # what the job directory says of the end decides how it ended
            evidence = attempt_evidence(JobDir(record.job_dir), record.attempt)
            res = record.spec.resources
            world = status.last_world(job, evidence, res.ranks_per_worker) if res.elastic else None
            verdict = status.ending_verdict(
                job, pods, evidence, attempt=record.attempt, world=world
            )
            state = end_state(verdict)
        step = saved_step(record.job_dir) if state == JobState.SUSPENDED else None
        return record.model_copy(
            update={"state": state, "verdict": verdict, "suspended_step": step}
        )

    def _record_base(self, job: Obj) -> JobRecord:
        meta, notes = job["metadata"], record_notes(job)
        jobdir = JobDir(self.jobs_root / meta["name"])
        if notes.get("job-dir") != str(jobdir.root):
            # Whoever may create a Job could point the annotation anywhere: the directory this
            # process reads and writes is always its own root's, named by the Job.
            raise NotAJobFile(f"its job directory is not {jobdir.root}")
        label = (meta.get("labels") or {}).get(USER_LABEL)
        if self.teams.controller is not None and label != owner_label(notes["user"]):
            # The admission policy ties a session's Jobs' label, not their annotations, to it:
            # a Job whose annotation names another user is no job of that user's.
            raise NotAJobFile(f"its {USER_LABEL} label is not its user's")
        spec = read_spec(jobdir)
        return JobRecord(
            seq=created_seq(notes),
            id=meta["name"],
            name=spec.name,
            user=notes["user"],
            team=self.team.name,
            queue=self.queue,
            priority=spec.priority.rank,
            state=JobState.QUEUED,
            spec=spec,
            job_dir=str(jobdir.root),
            gpus=spec.resources.total_gpus,
            created_at=float(notes["created-at"]),
            attempt=int(notes.get("attempt", "0")),
            retries=json.loads(notes.get("retries", "{}")),
            resubmitted_from=notes.get("resubmitted-from"),
            **jobdir.read_edits(spec.tags),
        )

    def _from_jobdir(self, root: Path) -> JobRecord | None:
        """The record a job directory keeps; None when it holds no readable spec, an error
        naming the file when the job replaced it by a link, a FIFO or a directory."""
        jobdir = JobDir(root)
        try:
            data = jobdir.read_spec()
        except NotAJobFile:
            raise
        except (OSError, ValueError):
            return None
        job_id, user = data.pop("id", root.name), data.pop("user", "")
        spec = JobSpec.model_validate(data)
        if spec.team not in (None, self.team.name):
            return None
        last: dict[str, Any] = {}
        submitted: dict[str, Any] = {}
        retries: dict[str, int] = {}
        planned: dict[str, int] = {}
        preempted = attempt = 0
        backoff = 0.0
        for event in jobdir.iter_events():
            kind = event.get("type")
            if kind == "state":
                last = event
                # The attempt whose Job there was and the retries it had used, as its
                # annotations said: a retry's "retrying" names the next attempt, whose Job is
                # not made yet.
                if event.get("state") != JobState.RETRYING.value:
                    attempt, retries = _count(event.get("attempt")), planned
            elif kind == "retry":  # the retries used, this one included
                planned = _counts(event.get("retries"))
                backoff = float(event.get("backoff_seconds") or 0.0)
            elif kind == "preempted":  # Kueue's evictions (with_workload, while the Job lives)
                preempted += 1
            elif kind == "submitted" and not submitted:
                submitted = event
        if preempted:
            retries = count_retry(retries, FailureClass.PREEMPTED, used=preempted)
        # No state word yet: its submitter is making its Job (trainhub.jobs.submission).
        state = JobState(last.get("state", JobState.QUEUED.value))
        # A retry deletes the failed Job, then makes the next attempt's (endings.py).
        # A retrying job with no Job is being replaced within its backoff and the time to make
        # the next Job (REPLACING_S); one not yet running, within SETTLING_S of its last word.
        replacing = state == JobState.RETRYING and _within(last, backoff + REPLACING_S)
        settling = state in _BEFORE_IT_RUNS and _within(last or submitted, SETTLING_S)
        if not state.terminal and not replacing and not settling:
            if not last:  # its submitter stopped before handing it over
                state = JobState.CANCELLED
            else:  # no Job object and no final word: the Job was removed behind our back
                state = JobState.FAILED
                last = {
                    "verdict": {
                        "failure_class": "infrastructure",
                        "reason": "its Job object disappeared",
                    }
                }
        # The record's own time (what the Job's annotation held); the event's time, later and
        # in milliseconds, for a directory written before the event carried it.
        created = float(
            submitted.get("created_at")
            or submitted.get("time")
            or os.stat(root, follow_symlinks=False).st_mtime
        )
        return JobRecord(
            seq=seq_of(created),
            id=job_id,
            name=spec.name,
            user=user,
            team=self.team.name,
            queue=self.queue,
            priority=spec.priority.rank,
            state=state,
            spec=spec,
            job_dir=str(root),
            gpus=spec.resources.total_gpus,
            created_at=created,
            attempt=attempt,
            retries=retries,
            admitted_at=_time_of(last, "admitted_at"),
            started_at=_time_of(last, "started_at"),
            finished_at=_time_of(last, "finished_at") or last.get("time"),
            verdict=Verdict.model_validate(last["verdict"]) if last.get("verdict") else None,
            **jobdir.read_edits(spec.tags),
        )


def with_workload(record: JobRecord, job: Obj, workload: Obj | None) -> JobRecord:
    """What Kueue's Workload adds to a live Job's record: its admission and finish times, and
    its evictions (Kueue requeues a preempted job itself: each is a preemption retry used)."""
    retries = record.retries
    if evictions := status.preemptions(workload):
        retries = count_retry(retries, FailureClass.PREEMPTED, used=evictions)
    return record.model_copy(update={**job_times(job, workload), "retries": retries})


def record_notes(job: Obj) -> dict[str, str]:
    """The record fields kept as the Job's annotations."""
    return {
        k[len(ANNOTATION) :]: v
        for k, v in (job["metadata"].get("annotations") or {}).items()
        if k.startswith(ANNOTATION)
    }


def created_seq(notes: dict[str, str]) -> int:
    return seq_of(float(notes["created-at"]))


def seq_of(created_at: float) -> int:
    """A job's place in its namespace's list, newest highest: its submit time in microseconds.
    Pages are cut by it (``before``), so two jobs must not share one: in milliseconds, jobs
    submitted together did, and a page ending on one of them dropped the others. A JSON number
    holds it exactly (below 2**53 until the year 2255)."""
    return int(created_at * 1_000_000)


class refusals_logged:
    """A job whose files are refused (they were swapped for links, FIFOs...) is logged and left
    out of what is read inside. A class, not a generator: a page enters one for every job."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> bool:
        if isinstance(error, NotAJobFile):
            log.warning("trainhub: job %s left out of the list: %s", self.job_id, error)
            return True
        return False


def read_spec(jobdir: JobDir) -> JobSpec:
    data = jobdir.read_spec()
    data.pop("id", None)
    data.pop("user", None)
    return JobSpec.model_validate(data)


def last_state(jobdir: JobDir) -> dict[str, Any] | None:
    last = None
    for e in jobdir.iter_events():
        if e.get("type") == "state":
            last = e
    return last


def _count(value: Any) -> int:
    """A count an event keeps (0 when it keeps none, or no count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _counts(value: Any) -> dict[str, int]:
    """The retries used by class that a ``retry`` event keeps ({} when it keeps none)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): _count(v) for k, v in value.items()}


def _time_of(event: dict[str, Any], name: str) -> float | None:
    value = event.get(name)
    return float(value) if isinstance(value, int | float) else None


def job_times(
    job: Obj, workload: Obj | None = None, pods: list[Obj] | None = None
) -> dict[str, float | None]:
    """Admitted (Kueue's Workload when read, else the Job's unsuspension), started, finished
    (or, before the Job controller marks it failed, the end of the pod that fails it)."""
    from datetime import datetime

    def ts(value: str | None) -> float | None:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None

    st = job.get("status", {})
    admitted = next(
        (
            c.get("lastTransitionTime")
            for c in st.get("conditions") or []
            if c.get("type") == "Suspended" and c.get("status") == "False"
        ),
        None,
    )
    # A later slice of an elastic Job was admitted when it grew: the Job's own unsuspension
    # says when it first got its quota.
    resized = SLICE_REPLACES in ((workload or {}).get("metadata", {}).get("annotations") or {})
    return {
        "admitted_at": (None if resized else workload_times(workload).admitted_at) or ts(admitted),
        "started_at": ts(st.get("startTime")),
        "finished_at": ts(st.get("completionTime"))
        or workload_times(workload).finished_at
        or next(
            (
                ts(c.get("lastTransitionTime"))
                for c in st.get("conditions") or []
                # Kubernetes sets completionTime only once every pod has stopped; the
                # success or failure criteria are met (and the job recorded) before that.
                if c.get("type") in _ENDED_CONDITIONS and c.get("status") == "True"
            ),
            None,
        )
        or ts(status.finished_at(status.failing_pod(job, pods or []))),
    }


_ENDED_CONDITIONS = ("Failed", "FailureTarget", "SuccessCriteriaMet", "Complete")


def _within(word: dict[str, Any], seconds: float) -> bool:
    """Whether a directory's word (an event) was written at most ``seconds`` ago."""
    return time.time() - float(word.get("time", 0.0)) <= seconds
