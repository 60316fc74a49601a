"""The controller: keeps, for every team namespace, the promises made to a job once it is
submitted, whoever is logged in. Watches feed the cache and queue the namespace that changed;
while this replica leads, a few workers reconcile the queued namespaces, never one namespace
in two workers at once: the backend records what the cluster did (states, verdicts,
Kubernetes events, retries, preemptions, alerts), the sweeps and pipeline runs advance and
the schedules fire what is due. A periodic resync queues every namespace as a safety net, and
a pending retry or a schedule's next time queues its namespace for when it is due. A thread of
its own mirrors the teams' jobs into their MLflow servers (trainhub.tracking).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainhub.alerts.announce import announce_job, announce_own
from trainhub.alerts.channels import member_channels
from trainhub.alerts.outbox import deliver_due
from trainhub.backends.kubernetes import recovery
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.backends.kubernetes.cache import ClusterCache
from trainhub.backends.kubernetes.controlplane import CONTROLLER
from trainhub.controller.leader import LeaseElector, Timing
from trainhub.controller.metrics import ControllerMetrics
from trainhub.controller.workqueue import WorkQueue
from trainhub.jobs import ownership
from trainhub.jobs.filter import EVERY_JOB
from trainhub.jobs.models import JobRecord
from trainhub.jobs.records import as_owner
from trainhub.jobs.service import JobService
from trainhub.registry.service import Registry
from trainhub.schedules.model import Run, ScheduleRecord
from trainhub.schedules.notify import refusal
from trainhub.teams import Teams
from trainhub.tracking.models import queue_registered
from trainhub.tracking.pending import enroll_new, run_pass
from trainhub.usage.kept import USAGE_DIR

log = logging.getLogger(__name__)

ERROR_BACKOFF = (1.0, 60.0)  # seconds before a failed reconcile of a namespace runs again
MIRROR_SECONDS = 5.0  # between two passes of the MLflow mirror (each job backs off on its own)


@dataclass(frozen=True)
class Settings:
    lease_namespace: str
    identity: str
    lease_name: str = CONTROLLER
    timing: Timing = field(default_factory=Timing)
    resync_seconds: float = 60.0  # every namespace reconciled at least this often
    sync_timeout: float = 120.0  # for the cache's first lists before acting
    # Namespaces reconciled side by side: a reconcile mostly waits on the API server and the
    # team volume, so 100 endings at once must not wait behind one another's round trips.
    workers: int = 4


class TeamWork:
    """One team: its backend, answering its lists from the cache; its sweeps; its alerts,
    queued by the owner's rules into an outbox on the team's volume (it outlives the
    controller, so an ending recorded twice is announced once: the outbox's keys)."""

    def __init__(self, teams: Teams, team: str, api_client: Any, cache: ClusterCache):
        t = teams.team(team)
        self.root = Path(t.shared_volume.mount_path)
        self.outbox = self.root / ".trainhub" / "outbox"
        self.mlflow, self.mirror_state = t.mlflow, self.root / ".trainhub" / "mlflow"
        self.backend = KubernetesBackend(
            teams,
            team,
            api_client=api_client,
            lists=cache.lists(t.namespace),
            announcer=self.announce,
        )
        self.service = JobService(self.backend, jobs_root=self.backend.jobs_root)
        self.service.schedules.on_refused = self.announce_refused
        self.errors = 0
        if teams.controller is not None and teams.controller.per_user_ids:
            self._prepare_volume()

    def _prepare_volume(self) -> None:
        """Where members own their files: the places on the team's volume where each makes
        their own (job directories, sweeps, pipeline runs, schedules, the model registry's
        entries and versions, comments, alert channels) open to all and sticky, the outbox the
        controller's alone. What cannot be made so is logged, for an admin."""
        jobs = self.backend.jobs_root
        kinds = (".sweeps", ".pipelines", ".schedules", ".models", ".comments")
        places = [jobs, *(jobs / kind for kind in kinds), self.root / ".trainhub" / "users"]
        problems = ownership.prepare_team_volume(
            self.root, [str(p.relative_to(self.root)) for p in places]
        )
        own_dirs = (
            (self.outbox, ownership.PRIVATE),
            (self.mirror_state, ownership.PRIVATE),
            (self.root / USAGE_DIR, 0o755),
        )
        for own, mode in own_dirs:
            try:
                ownership.own_dir(own, mode)
            except OSError as e:
                problems.append(f"{own}: {e.strerror or e}")
        for problem in problems:
            log.warning("trainhub: team volume of %s: %s", self.namespace, problem)

    @property
    def namespace(self) -> str:
        return self.backend.namespace

    def announce(self, record: JobRecord, kind: str, key: str) -> str | None:
        """Called as the job's owner where members own their files: the member's channels
        are read as the member (theirs alone count), the outbox written as the controller."""
        owner = ownership.current().user if self.backend.acts_as_owners else None
        try:
            mine = member_channels(self.root, record.user, owner_id=owner)
        except Exception as error:  # an alert never stands in the way of a job
            return f"The {kind} alert could not be queued: {error}"
        with ownership.acting_as_itself():
            return announce_job(
                self.root,
                record,
                kind,
                owner=lambda: mine,
                outbox=self.outbox,
                key=key,
                start_sender=False,
            )

    def announce_refused(self, record: ScheduleRecord, run: Run) -> None:
        """A schedule's run that made no job, to its owner's channels (read as the owner,
        as :meth:`announce` reads them) and the team's."""
        owner = ownership.current().user if self.backend.acts_as_owners else None
        alert, key = refusal(record, run)
        try:
            mine = member_channels(self.root, record.user, owner_id=owner)
        except Exception:  # an alert never stands in the way of a schedule
            log.exception("trainhub: the channels of %s could not be read", record.user)
            return
        with ownership.acting_as_itself():
            problem = announce_own(
                self.root,
                alert,
                record.team,
                key=key,
                owner=lambda: mine,
                outbox=self.outbox,
                start_sender=False,
            )
        if problem:
            log.warning("trainhub: schedule %s: %s", record.id, problem)

    def reconcile(self) -> float | None:
        """One pass; returns in how many seconds a pending retry or a schedule's next time
        wants the next one."""
        self.backend.reconcile()
        self.service.sweeps.advance_all()
        self.service.pipelines.advance_all()
        due = self.service.schedules.tick_all()
        waits = [self._next_retry(), None if due is None else max(0.0, due - time.time())]
        return min((w for w in waits if w is not None), default=None)

    def _next_retry(self) -> float | None:
        from trainhub.backends.kubernetes.manifests import JOB_ID_LABEL

        jobs = self.backend.lists.answer(  # type: ignore[union-attr]
            self.backend.batch.list_namespaced_job,
            (self.namespace,),
            {"label_selector": JOB_ID_LABEL},
        )
        plans = [p for j in jobs or [] if (p := recovery.pending_retry(j)) is not None]
        if not plans:
            return None
        return max(0.0, min(p.not_before for p in plans) - time.time())

    def deliver(self) -> None:
        if self.outbox.is_dir():
            deliver_due(self.outbox, time.time())

    def mirror(self) -> None:
        """The team's jobs into its MLflow server (trainhub.tracking): the newest jobs made
        since the team first mirrored are enrolled, and every due one caught up — its
        directory read as its owner, the cursors (on the team's volume, the controller's
        own) written as the controller."""
        if self.mlflow is None:
            return
        with ownership.acting_as_itself():
            self.mirror_state.mkdir(parents=True, exist_ok=True, mode=ownership.PRIVATE)
            newest = self.backend.list_jobs(EVERY_JOB, limit=100)
            enroll_new(self.mirror_state, newest)
            queue_registered(self.mirror_state, Registry.of_backend(self.backend))
        run_pass(
            self.mirror_state,
            self.backend.get,
            lambda record: self.mlflow,
            reading=lambda record: as_owner(self.backend, Path(record.job_dir), record.user),
            writing=ownership.acting_as_itself,
        )


class Controller:
    def __init__(self, teams: Teams, api_client: Any, settings: Settings):
        self.teams, self.settings = teams, settings
        self.metrics = ControllerMetrics()
        self.queue = WorkQueue()
        self.stop = threading.Event()
        namespaces = [t.namespace for t in teams.teams]
        self.cache = ClusterCache(
            api_client, namespaces, self._changed, counters=self.metrics.watch_restart
        )
        self.work = {
            t.namespace: TeamWork(teams, t.name, api_client, self.cache) for t in teams.teams
        }
        self.elector = LeaseElector(
            api_client,
            settings.lease_namespace,
            settings.lease_name,
            settings.identity,
            settings.timing,
        )
        self.reconciled = threading.Event()  # set once every namespace was reconciled once
        self._done: set[str] = set()
        self._done_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # --- life ----------------------------------------------------------------------------------
    def start(self) -> None:
        self.cache.start()
        workers = [(self._work, f"reconcile-{n}") for n in range(self.settings.workers)]
        for target, name in (
            (self._elect, "leader-election"),
            *workers,
            (self._resync, "resync"),
            (self._send_alerts, "alerts"),
            (self._mirror, "mlflow-mirror"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        self.stop.set()
        self.cache.close()
        for thread in self._threads:
            thread.join(timeout=15)

    @property
    def ready(self) -> bool:
        """Serving: the cache is synced (a standby is ready too: it takes over at once)."""
        return self.cache.synced

    @property
    def healthy(self) -> bool:
        return all(t.is_alive() for t in self._threads) or self.stop.is_set()

    # --- the loops -----------------------------------------------------------------------------
    def _changed(self, namespace: str, kind: str) -> None:
        self.queue.add(namespace)
        self.metrics.queue_depth.set(len(self.queue))

    def _elect(self) -> None:
        self.elector.run(self.stop, self._leading)

    def _leading(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        if leading:  # whatever happened while another replica led, or none did
            for namespace in self.work:
                self.queue.add(namespace)

    def _resync(self) -> None:
        while not self.stop.wait(self.settings.resync_seconds):
            for namespace in self.work:
                self.queue.add(namespace)

    def _work(self) -> None:
        if not self.cache.wait_synced(self.settings.sync_timeout):
            log.warning(
                "the cache is not synced after %gs; acting on what it holds",
                self.settings.sync_timeout,
            )
        while not self.stop.is_set():
            namespace = self.queue.get(timeout=1.0)
            self.metrics.queue_depth.set(len(self.queue))
            if namespace is None:
                continue
            try:
                if not self.elector.leading():
                    continue  # the leader acts; this replica only keeps its cache warm
                self._reconcile(self.work[namespace])  # type: ignore[index]
                with self._done_lock:
                    self._done.add(namespace)  # type: ignore[arg-type]
                    if len(self._done) == len(self.work):
                        self.reconciled.set()
            finally:
                self.queue.done(namespace)

    def _reconcile(self, work: TeamWork) -> None:
        started = time.perf_counter()
        try:
            again = work.reconcile()
        except Exception:
            work.errors += 1
            self.metrics.reconcile_errors.labels(namespace=work.namespace).inc()
            log.exception("reconcile of %s failed", work.namespace)
            delay = min(ERROR_BACKOFF[0] * 2 ** (work.errors - 1), ERROR_BACKOFF[1])
            self.queue.add_after(work.namespace, delay)
            return
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.reconcile_seconds.labels(namespace=work.namespace).observe(elapsed)
            self.metrics.cached_objects.set(self.cache.size())
        work.errors = 0
        if again is not None:
            self.queue.add_after(work.namespace, again + 0.05)

    def _send_alerts(self) -> None:
        """The leader delivers what the outboxes hold (a standby's turn comes at takeover;
        a message's retries are kept in its file)."""
        while not self.stop.wait(1.0):
            if not self.elector.leading():
                continue
            for work in self.work.values():
                try:
                    work.deliver()
                except Exception:
                    log.exception("alerts of %s", work.namespace)

    def _mirror(self) -> None:
        """The leader mirrors the teams' jobs into their MLflow servers, on a thread of its
        own: a server that is down or slow holds up no reconcile."""
        while not self.stop.wait(MIRROR_SECONDS):
            if not self.elector.leading():
                continue
            for work in self.work.values():
                try:
                    work.mirror()
                except Exception:
                    log.exception("MLflow mirror of %s", work.namespace)
