"""The supervisor of one local job: what the launcher becomes once the ranks are on their way
(or ``python -m trainhub.backends.local.supervisor HOME JOB_ID`` directly).

It runs the job's attempts (torchrun agents), samples metrics, classifies how each attempt
ended, retries per policy from the latest checkpoint, records everything in the job
directory and the store, and hands freed resources to the next queued jobs. It survives
whatever submitted the job; a cancel reaches it as SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from trainhub import settings
from trainhub.backends.local import processes
from trainhub.backends.local.admitter import Admitter
from trainhub.backends.local.elastic_group import ElasticGroup
from trainhub.backends.local.ending import announce, record_ending, record_suspension
from trainhub.backends.local.pip_install import install_job_requirements
from trainhub.backends.local.plan import attempt_plan, resume_source_of, starts_from
from trainhub.backends.local.startup import become_subreaper, start_plan
from trainhub.backends.local.store import Store
from trainhub.backends.local.tracking import enroll_job
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.notebooks import close_notebooks, finish_notebooks
from trainhub.lifecycle.notify import preemption_alert_kind
from trainhub.lifecycle.results import rank_results
from trainhub.lifecycle.retry import RetryPlan, plan_retry, retry_event
from trainhub.lifecycle.verdict import (
    RankExit,
    attempt_verdict,
    cancel_verdict,
    running_cells,
    time_limit_reason,
    torchrun_root_causes,
)
from trainhub.metrics.ranks import JobRanks

CANCEL_GRACE_SECONDS = float(os.environ.get("TRAINHUB_CANCEL_GRACE", "10"))
# A suspend's ranks save a checkpoint on the way out: they get longer before SIGKILL.
SUSPEND_GRACE_SECONDS = float(os.environ.get("TRAINHUB_SUSPEND_GRACE", "30"))
POLL_SECONDS = 0.2


def oom_kill_count() -> int | None:
    """The kernel's OOM-kill counter for our cgroup (v2), to tell OOM kills from other SIGKILLs."""
    try:
        cgroup = Path("/proc/self/cgroup").read_text().strip().split("::", 1)[1]
        for line in Path(f"/sys/fs/cgroup{cgroup}/memory.events").read_text().splitlines():
            key, value = line.split()
            if key == "oom_kill":
                return int(value)
    except (OSError, IndexError, ValueError):
        pass
    return None


class Supervisor:
    def __init__(self, home: Path, job_id: str):
        self.home = home
        self.store = Store(settings.database(home))
        self.admitter = Admitter(home, self.store)
        record = self.store.get(job_id)
        if record is None:
            raise SystemExit(f"no job {job_id}")
        self.record: JobRecord = record
        self.jobdir = JobDir(record.job_dir)
        self._stop_reason: str | None = None
        self.stop_signal: int | None = None
        self.stop_event = threading.Event()
        # This attempt's torchrun agents (or the rank of a one-process job).
        self.agents: list[subprocess.Popen[bytes]] = []
        self.sampler = None  # started once the first ranks are on their way
        self.group: ElasticGroup | None = None  # an elastic job's agents, this attempt

    # --- signals ------------------------------------------------------------------------
    def _on_term(self, signum, frame) -> None:
        self.stop(signum)

    def stop(self, signum: int) -> None:
        """Stop the job (a cancel arrives as SIGTERM). Only noted here: it may run in a signal
        handler, and the store is read outside it."""
        self.stop_signal = signum
        self.stop_event.set()

    @property
    def stop_reason(self) -> str | None:
        if not self.stop_event.is_set():
            return None
        if self._stop_reason is None:
            current = self.store.get(self.record.id)
            if current is not None and current.cancel_requested:
                self._stop_reason = current.cancel_reason or "cancelled"
            elif current is not None and current.suspend_requested:
                self._stop_reason = "suspended"
            else:
                self._stop_reason = (
                    f"stopped by {signal.Signals(self.stop_signal or signal.SIGTERM).name}"
                )
        return self._stop_reason

    def _check_deadline(self, started: float) -> None:
        limit = self.record.spec.max_runtime
        if limit is not None and time.time() - started > limit.total_seconds():
            running = running_cells(self.jobdir.iter_events(), self.record.attempt)
            self._stop_reason = time_limit_reason(limit, running, time.time())
            self.stop_event.set()

    # --- run ----------------------------------------------------------------------------
    def run(self, prelaunched: tuple[int, list[subprocess.Popen[bytes]]] | None = None) -> int:
        """Run the job to its end. ``prelaunched``: the attempt number and the processes the
        launcher already started for it from the admitting process's plan."""
        become_subreaper()
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        if self.record.cancel_requested or self.record.suspend_requested:
            self.stop_event.set()  # asked before this supervisor could hear it
        started = self.record.started_at or time.time()
        enroll_job(self.home, self.record, self.jobdir)  # mirrored from the start, if asked
        verdict: Verdict | None = None
        retry: RetryPlan | None = None
        try:
            verdict = (
                None if prelaunched else install_job_requirements(self.jobdir, self.record.attempt)
            )
            while verdict is None or retry is not None:
                # A retriable failure: back off, then go again.
                if verdict is not None and retry is not None and not self._back_off(verdict, retry):
                    verdict = cancel_verdict(self.stop_reason or "cancelled", self.record.attempt)
                    break
                ready = (
                    prelaunched[1]
                    if prelaunched and prelaunched[0] == self.record.attempt
                    else None
                )
                prelaunched = None
                verdict = self._attempt(started, ready)
                if verdict is None:
                    break
                if self._suspending():
                    break  # not an ending: _finish records the suspension
                rec = self.record
                retry = plan_retry(
                    verdict, rec.spec.retry, rec.retries, attempt=rec.attempt, now=time.time()
                )
                verdict.retriable = retry is not None
                self.jobdir.emit("verdict", **verdict.model_dump(mode="json"))
        finally:
            processes.terminate_tree([a.pid for a in self.agents], grace=2)
            if self.group is not None:
                self.group.close()
            if self.sampler is not None:
                self.sampler.stop()
        self._finish(verdict)
        self.admitter.admit_and_launch(freed_by=f"job {self.record.id}")
        # Recorded and freed: nothing waits for the notebooks' last write, which takes seconds
        # on a busy machine (importing nbformat), so the jobs running now go first.
        with contextlib.suppress(OSError):
            os.nice(10)
        # jsonschema (under nbformat) builds an IRI grammar as it is imported when
        # rfc3987_syntax is installed: 1.5 s of CPU per job, for a string format that the
        # notebook schema never uses. This process ends right after.
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
        finish_notebooks(self.jobdir, self.record.spec)
        return 0

    def _start_sampler(self):
        try:
            from trainhub.metrics.sampler import MetricsSampler
            from trainhub.metrics.tensorboard import job_roots
        except ImportError:
            return None
        ranks = JobRanks(self.record.id, self.record.spec.resources.world_size)
        sampler = MetricsSampler(
            self.jobdir,
            list(self.record.assigned_gpus),
            ranks,
            tensorboard_roots=job_roots(self.jobdir),
            attempt=lambda: self.record.attempt,
        )
        sampler.start()
        return sampler

    def _attempt(
        self, started: float, ready: list[subprocess.Popen[bytes]] | None
    ) -> Verdict | None:
        rec = self.record
        res = rec.spec.resources
        attempt = rec.attempt
        # The launcher's processes already wrote to the log; a torchrun summary comes later.
        log_offset = (
            0
            if ready
            else (
                self.jobdir.supervisor_log.stat().st_size
                if self.jobdir.supervisor_log.exists()
                else 0
            )
        )
        oom_before = oom_kill_count()
        if res.elastic:  # its rendezvous store and agents, as many as granted
            if self.group is not None:
                self.group.close()
            _, resume = attempt_plan(self.store, rec, python=sys.executable, env=os.environ)
            group = ElasticGroup(self.store, self.admitter, rec, self.jobdir, resume, os.environ)
            self.group = group
            ready = self.group.start()
        elif ready is None:
            plan, resume = attempt_plan(self.store, rec, python=sys.executable, env=os.environ)
            ready = start_plan(str(self.jobdir.root), plan)
        else:  # started by the launcher from the admitting process's plan
            resume = starts_from(self.store, rec)
        self.agents = ready
        if self.sampler is None:
            self.sampler = self._start_sampler()
        now = time.time()
        with self.store.transaction() as conn:
            self.store.update(
                conn,
                rec.id,
                state=JobState.RUNNING,
                **({} if rec.started_at else {"started_at": now}),
            )
            self.store.update_local(conn, rec.id, process_groups=[a.pid for a in self.agents])
        self.record = self.store.get(rec.id)  # type: ignore[assignment]
        if res.elastic:  # running: it may grow into what is free now
            self.admitter.admit_and_launch(freed_by=None)
        self.jobdir.emit(
            "state",
            state=JobState.RUNNING.value,
            attempt=attempt,
            # An elastic job's size now; resize events say each change.
            world_size=len(self.group.workers) * res.ranks_per_worker
            if self.group
            else res.world_size,
            gpus=rec.assigned_gpus,
            **({"resume_from": resume} if resume else {}),
        )

        exit_codes = self._wait_for_agents(started)
        if self.stop_event.is_set():
            grace = SUSPEND_GRACE_SECONDS if self._suspending() else CANCEL_GRACE_SECONDS
            processes.terminate_tree([a.pid for a in self.agents], grace=grace)

        if res.elastic and not any(exit_codes) and self.stop_reason is None:
            # The group's last ranks ended their run; reports of ranks stopped by a
            # membership change earlier in the attempt are not its ending.
            return None
        agent_log = self._read_from(self.jobdir.supervisor_log, log_offset)
        single = res.world_size == 1
        exits = torchrun_root_causes(agent_log) or [
            RankExit(0 if single else None, c) for c in exit_codes
        ]
        oom_after = oom_kill_count()
        verdict = attempt_verdict(
            attempt=attempt,
            rank_results=rank_results(self.jobdir, attempt),
            exits=exits if any(exit_codes) else [RankExit(None, 0)],
            stop_reason=self.stop_reason,
            oom_killed=oom_before is not None and oom_after is not None and oom_after > oom_before,
            running=running_cells(self.jobdir.iter_events(), attempt),
        )
        if verdict is not None:
            close_notebooks(self.jobdir, rec.spec, attempt, verdict, suspended=self._suspending())
        return verdict

    def _wait_for_agents(self, started: float) -> list[int]:
        while self.group is not None and not self.stop_event.is_set():
            codes = self.group.step()
            self.agents = self.group.agents
            if codes is not None:
                return codes
            self._check_deadline(started)
            self.stop_event.wait(POLL_SECONDS)
        while not self.stop_event.is_set():
            codes = [a.poll() for a in self.agents]
            if all(c is not None for c in codes):
                return [int(c) for c in codes]  # type: ignore[arg-type]
            if any(c not in (None, 0) for c in codes):
                # One worker group failed: the others would wait at a collective until timeout.
                time.sleep(2)
                processes.terminate_tree([a.pid for a in self.agents], grace=CANCEL_GRACE_SECONDS)
                return [int(a.wait()) for a in self.agents]
            self._check_deadline(started)
            self.stop_event.wait(POLL_SECONDS)
        return [code if (code := a.poll()) is not None else -signal.SIGTERM for a in self.agents]

    @staticmethod
    def _read_from(path: Path, offset: int) -> str:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _back_off(self, verdict: Verdict, retry: RetryPlan) -> bool:
        """Count the retry, wait out the backoff; False when stopped meanwhile."""
        rec = self.record
        resume = resume_source_of(self.store, rec)
        with self.store.transaction() as conn:
            self.store.update(
                conn,
                rec.id,
                state=JobState.RETRYING,
                retries=retry.retries,
                attempt=retry.attempt,
                verdict=verdict.model_dump(mode="json"),
            )
        self.record = self.store.get(rec.id)  # type: ignore[assignment]
        self.jobdir.emit("retry", **retry_event(retry, resume.step if resume else None))
        self.jobdir.emit("state", state=JobState.RETRYING.value, attempt=retry.attempt)
        kind = preemption_alert_kind(rec.spec.notify)
        if verdict.failure_class == FailureClass.PREEMPTED and kind is not None:
            announce(self.home, self.record, self.jobdir, kind)
        return not self.stop_event.wait(retry.backoff_seconds)

    def _suspending(self) -> bool:
        """Stopped because a person suspended the job (a cancel wins over a suspend)."""
        if not self.stop_event.is_set():
            return False
        current = self.store.get(self.record.id)
        return current is not None and current.suspend_requested and not current.cancel_requested

    def _finish(self, verdict: Verdict | None) -> None:
        if verdict is not None and self._suspending():
            record_suspension(self.store, self.record, self.jobdir)
        else:
            record_ending(self.home, self.store, self.record, self.jobdir, verdict)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2:
        print("usage: python -m trainhub.backends.local.supervisor HOME JOB_ID", file=sys.stderr)
        return 2
    return Supervisor(Path(args[0]), args[1]).run()


if __name__ == "__main__":
    sys.exit(main())
