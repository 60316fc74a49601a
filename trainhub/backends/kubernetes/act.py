"""What a person does to a job on Kubernetes after its submit: cancel, suspend and resume.
What the cluster does to it is recorded by :mod:`~trainhub.backends.kubernetes.reconcile`.
"""

from __future__ import annotations

import time

from trainhub.backends.kubernetes import status
from trainhub.backends.kubernetes.reconcile import Reconciling
from trainhub.errors import Conflict, NotFound
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.jobs.suspension import check_resumable, check_suspendable
from trainhub.lifecycle.retry import RetryPlan
from trainhub.lifecycle.verdict import cancel_verdict, first_running, running_cells


class Acting(Reconciling):
    """A person's verbs on a job, carried out as the lifecycle's own are."""

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        from kubernetes.client import ApiException

        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        if record.state.terminal:
            return record
        jobdir = JobDir(record.job_dir)
        jobdir.emit("cancel_requested", reason=reason)
        try:  # its pods get SIGTERM: their stop callbacks save, their notebooks say "stopped"
            self.batch.delete_namespaced_job(
                job_id, self.namespace, propagation_policy="Foreground"
            )
        except ApiException as e:
            if e.status != 404:
                raise
        # The cell it stops, as a local cancel names it: only a running attempt is in one (a
        # failed attempt waiting for its retry left its cells where they failed).
        running = (
            running_cells(jobdir.iter_events(), record.attempt)
            if record.state == JobState.RUNNING
            else {}
        )
        verdict = cancel_verdict(reason, record.attempt, first_running(running))
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
        self._next_attempt(record, plan, suspended)
        return self.get(job_id) or record
