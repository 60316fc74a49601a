"""How an attempt of a job on Kubernetes ends, by the lifecycle's rules
(:mod:`trainhub.lifecycle`): its end recorded in the job directory and announced, or a failure
its retry policy allows marked on the Job and replaced, once its backoff has passed, by the next
attempt's Job resuming from the latest checkpoint. Every write names the very Job it means (its
uid), so a stale leader's retry stops where another process already acted.
"""

from __future__ import annotations

import getpass
import os
import time
from pathlib import Path
from typing import Any

from trainhub import settings
from trainhub.alerts.announce import announce_job
from trainhub.backends.kubernetes import recovery
from trainhub.backends.kubernetes.cluster import Obj
from trainhub.backends.kubernetes.observe import Observing
from trainhub.backends.kubernetes.owners import run_as_of
from trainhub.backends.kubernetes.records import refusals_logged
from trainhub.backends.kubernetes.submit import Submitting
from trainhub.jobs import ownership
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.notebooks import close_notebooks, finish_notebooks
from trainhub.lifecycle.notify import end_alert_kind
from trainhub.lifecycle.retry import RetryPlan, plan_retry, retry_event
from trainhub.usage import kept
from trainhub.usage.compute import job_usage

DELETE_WAIT_SECONDS = 30.0  # for a failed Job to be gone before its retry's takes its name
# Times the final state event keeps for a record read back from the job directory.
_KEPT_TIMES = ("admitted_at", "started_at", "finished_at")


class Ending(Submitting, Observing):
    """Ending an attempt: a retry's Job is made as a submit's is, and what happened is read as
    the reads see it."""

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
        still allows, the plan of its next attempt (started by reconcile, see recovery). The
        executed notebooks its ranks left unfinished say how it ended, as locally."""
        if verdict is not None:
            close_notebooks(JobDir(record.job_dir), record.spec, record.attempt, verdict)
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
        self._keep_usage(record.id)
        kind = end_alert_kind(record.spec.notify, state)
        if kind is not None:
            ended = record.model_copy(update={"state": state, "verdict": verdict})
            self._announce(ended, kind, f"{record.id}-a{record.attempt}-{kind}")
        finish_notebooks(JobDir(record.job_dir), record.spec)  # the end recorded: nothing waits

    def _keep_usage(self, job_id: str) -> None:
        """Where members own their files, the ended job's usage row, for the team (read as
        the owner, kept as the controller: trainhub.usage.kept)."""
        if not self.acts_as_owners:
            return
        ended = self._from_jobdir(self.jobs_root / job_id)
        if ended is None:
            return
        row = job_usage(ended, threshold_pct=settings.waste_utilization_pct())
        with ownership.acting_as_itself():
            kept.keep(Path(self.team.shared_volume.mount_path), row)

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
                with refusals_logged(job["metadata"]["name"]), self.as_owner_of_job(job):
                    self._next_attempt(self._record_base(job), plan, job)

    def _next_attempt(self, record: JobRecord, plan: RetryPlan, failed: Obj) -> None:
        """Delete the ``failed`` Job (its pods with it; its Service stays), then create the
        next attempt's, run as the failed one was, resuming from the job's latest checkpoint."""
        from kubernetes.client import ApiException

        try:  # the Service outlives the failed Job: the next attempt's pods rendezvous on it
            self.core.patch_namespaced_service(
                record.id, self.namespace, {"metadata": {"ownerReferences": None}}
            )
        except ApiException as e:
            if e.status != 404:
                raise  # gone: the next attempt's _create makes it again
        # That very Job: a stale leader's retry finds it replaced, and stops here.
        if not self._delete_job(record.id, failed["metadata"]["uid"]):
            return  # replaced by the next attempt already
        jobdir = JobDir(record.job_dir)
        attempt = record.model_copy(update={"attempt": plan.attempt, "retries": plan.retries})
        placement = self.attempt_placement(attempt)
        resume = placement.resume_from
        deadline = time.monotonic() + DELETE_WAIT_SECONDS
        while True:
            try:
                self._create(
                    attempt,
                    self._pool(placement),
                    placement.image,
                    resume,
                    run_as_of(failed),
                )
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
