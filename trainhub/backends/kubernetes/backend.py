"""Jobs as Kueue-queued Indexed Jobs in a team's namespace.

Kubernetes and Kueue decide when and where; this backend renders the objects, submits them,
reads their state back and explains it. The job directory on the team's shared volume stays
the durable record: state changes, Kubernetes events and the final verdict are written there,
so a job reads the same after its Job object is gone.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub import settings
from trainhub.alerts.announce import announce_job, end_alert_kind
from trainhub.backends.base import Backend, Feature
from trainhub.backends.kubernetes import manifests, nodes, recovery, status, waits
from trainhub.backends.kubernetes.manifests import ANNOTATION, JOB_ID_LABEL, USER_LABEL, label_value
from trainhub.backends.kubernetes.render import KUEUE_API, TEAM_LABEL
from trainhub.checkpoint.layout import resume_checkpoint
from trainhub.datasets.catalog import Catalog, Readable
from trainhub.errors import BackendUnavailable, Conflict, NotFound, OverQuota
from trainhub.imagepolicy import Allowed, choose_image
from trainhub.jobs import confined, placement
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.directory import LINEAGE, JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.search import found
from trainhub.jobs.spec import JobSpec, NotifyOn, SpecError
from trainhub.jobs.states import FailureClass, JobState
from trainhub.jobs.suspension import check_resumable, check_suspendable, saved_step
from trainhub.outcome.retry import count_retry
from trainhub.outcome.verdict import cancel_verdict
from trainhub.outputs.retention import Retention
from trainhub.teams import Pool, Team, TeamDataset, Teams, load_teams
from trainhub.usage.compute import job_usage
from trainhub.usage.kueue import workload_times
from trainhub.usage.models import UsageBy, UsageGroup
from trainhub.usage.panel import PoolQuota, cluster_queue_quotas
from trainhub.usage.store import UsageStore

KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"  # on the Workload Kueue makes for a Job
_PAGE_WORKLOADS = object()  # reading()'s key for the Workloads of the page just listed
# (connect, read) seconds for each API request: a cluster that does not answer ends the
# request with an error well within the server's call_time_limit, never holding a worker.
REQUEST_TIMEOUT = (5.0, 10.0)
DELETE_WAIT_SECONDS = 30.0  # for a failed Job to be gone before its retry's takes its name
Obj = dict[str, Any]
log = logging.getLogger(__name__)


class KubernetesBackend(Backend):
    name = "kubernetes"
    features = frozenset(
        {
            Feature.QUEUES,
            Feature.PRIORITY,
            Feature.PREEMPTION,
            Feature.MULTI_NODE,
            Feature.GPUS,
            Feature.IMAGES,
            Feature.DATASETS,
            Feature.TEAM_SHARING,
            Feature.WORKER_RESOURCES,
        }
    )

    def __init__(
        self,
        teams: Teams,
        team: str,
        *,
        namespace: str | None = None,
        queue: str | None = None,
        jobs_root: Path | None = None,
        api_client: Any = None,
        default_image: str | None = None,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ):
        from kubernetes import client

        self.teams = teams
        self.team: Team = teams.team(team)
        self.namespace = namespace or self.team.namespace
        self.queue = queue or self.team.local_queue
        self.jobs_root = Path(jobs_root or Path(self.team.shared_volume.mount_path) / "jobs")
        self.default_image = default_image or teams.image(self.team.images[0]).image
        self.api = api_client or _default_client()
        self.request_timeout = request_timeout
        # What reconcile last recorded of each Job: uid -> the resource versions it saw.
        self._reconciled: dict[str, tuple[Any, ...]] = {}
        self._reading = threading.local()  # what reading() has seen, per thread
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    @classmethod
    def from_settings(cls, home: Path, **kwargs: Any) -> KubernetesBackend:
        """Configured by the environment the spawner gives each session; see :meth:`from_env`."""
        return cls.from_env()

    @classmethod
    def from_env(cls) -> KubernetesBackend:
        """TRAINHUB_TEAMS_FILE, TRAINHUB_TEAM, TRAINHUB_K8S_NAMESPACE, TRAINHUB_K8S_QUEUE,
        TRAINHUB_JOBS_ROOT, TRAINHUB_K8S_REQUEST_TIMEOUT (seconds an API request may take)."""
        env = os.environ
        teams = load_teams(env.get("TRAINHUB_TEAMS_FILE", "/etc/trainhub/teams.yaml"))
        team = env.get("TRAINHUB_TEAM") or teams.teams[0].name
        root = env.get("TRAINHUB_JOBS_ROOT")
        return cls(
            teams,
            team,
            namespace=env.get("TRAINHUB_K8S_NAMESPACE"),
            queue=env.get("TRAINHUB_K8S_QUEUE"),
            jobs_root=Path(root) if root else None,
            **(
                {"request_timeout": (REQUEST_TIMEOUT[0], float(timeout))}
                if (timeout := env.get("TRAINHUB_K8S_REQUEST_TIMEOUT"))
                else {}
            ),
        )

    def catalog(self) -> dict[str, list[dict[str, Any]]]:
        """The team's curated images, and its pools as the queues a job may name."""
        images = [self.teams.image(name) for name in self.team.images]
        return {
            "images": [
                {"name": i.name, "image": i.image, "description": i.description} for i in images
            ],
            "teams": [{"name": self.team.name, "queues": list(self.team.quota)}],
        }

    @property
    def dataset_roots(self) -> list[Path]:
        """Where a session sees the team's data: its shared volume and its datasets' mounts."""
        mounts = [self.team.dataset_mount(name) for name in self.readable_datasets()]
        return [Path(self.team.shared_volume.mount_path), *map(Path, mounts)]

    def readable_datasets(self) -> dict[str, TeamDataset]:
        return {n: ds for n, (_, ds) in self.teams.readable_datasets(self.team.name).items()}

    def dataset_catalog(self) -> Catalog:
        """The datasets the team may read: its ranks find each at /datasets/<name>; a session
        sees a claim there too (the spawner mounts it), a path dataset where it lies."""
        return Catalog(
            (
                Readable(
                    name,
                    ds,
                    rank_path=self.team.dataset_mount(name),
                    view_path=ds.path or self.team.dataset_mount(name),
                    team=owner.name,
                )
                for name, (owner, ds) in self.teams.readable_datasets(self.team.name).items()
            ),
            team=self.team.name,
        )

    # --- choosing ------------------------------------------------------------------------------
    def retention(self, team: str | None) -> Retention | None:
        """The teams file's policy of ``team`` (this backend's own team when unnamed)."""
        known = {t.name: t for t in self.teams.teams}
        return known.get(team or self.team.name, self.team).retention

    def pool_for(self, record: JobRecord) -> Pool:
        """The pool named by the spec's queue, else the team's first pool whose nodes
        hold a worker."""
        per_worker = record.spec.resources.gpus_per_worker
        if record.spec.queue and record.spec.queue in self.team.quota:
            return self.teams.pool(record.spec.queue)
        for name in self.team.quota:
            pool = self.teams.pool(name)
            if pool.gpus_per_node >= per_worker and (per_worker or not pool.gpu_only):
                return pool
        raise OverQuota(
            f"no pool of team {self.team.name} has nodes with {per_worker} GPUs for one worker"
        )

    def image_for(self, record: JobRecord) -> str:
        """The image the team's policy allows for this job (:mod:`trainhub.imagepolicy`)."""
        wanted = record.spec.image
        if wanted is None:
            return self.default_image
        return self.check_image(wanted).reference

    def check_image(self, wanted: str | None) -> Allowed:
        offered = [self.teams.image(name) for name in self.team.images]
        return choose_image(
            wanted, team=self.team.name, offered=offered, policy=self.team.image_policy
        )

    def check_fits(self, record: JobRecord) -> None:
        pool = self.pool_for(record)
        self.image_for(record)
        quota = self.team.quota[pool.name]
        ceiling = quota.gpus + (
            quota.borrowing_limit.gpus
            if quota.borrowing_limit and quota.borrowing_limit.gpus is not None
            else sum(
                t.quota[pool.name].gpus
                for t in self.teams.teams
                if t is not self.team
                and t.cohort
                and t.cohort == self.team.cohort
                and pool.name in t.quota
            )
        )
        if record.gpus > ceiling:
            raise OverQuota(
                f"{record.gpus} GPUs is more than team {self.team.name} can ever get in pool "
                f"{pool.name} ({ceiling})"
            )
        if problem := nodes.pool_refusal(record, pool, self._pool_nodes(pool)):
            raise SpecError([problem])
        shared = Path(self.team.shared_volume.mount_path)
        for ds in record.spec.datasets:
            if ds.catalog or ds.path is None:
                continue  # by name: resolved against the datasets the team may read
            if not Path(ds.path).resolve().is_relative_to(shared):
                raise OverQuota(
                    f"dataset {ds.name}: {ds.path} is neither a dataset of team {self.team.name} "
                    f"nor on its shared volume {shared}"
                )

    # --- submit / cancel -----------------------------------------------------------------------
    def submit(self, record: JobRecord) -> JobRecord:
        record = record.model_copy(
            update={
                "team": self.team.name,
                "queue": self.queue,
                "seq": int(record.created_at * 1000),
            }
        )
        pool, image = self.pool_for(record), self.image_for(record)
        self._create(record, pool, image, self._resume_from(record))
        jobdir = JobDir(record.job_dir)
        jobdir.emit(
            "state",
            state=JobState.QUEUED.value,
            namespace=self.namespace,
            queue=self.queue,
            pool=pool.name,
            image=image,
        )
        return record

    def _create(self, record: JobRecord, pool: Pool, image: str, resume_from: str | None) -> None:
        """The attempt's Job, and its headless Service (kept from an earlier attempt when
        there is one), owned by the Job."""
        from kubernetes.client import ApiException

        job = manifests.job_manifest(
            record,
            team=self.team,
            pool=pool,
            image=image,
            resume_from=resume_from,
            datasets=self.readable_datasets(),
        )
        job["metadata"]["namespace"] = self.namespace
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = self.queue
        service = manifests.service_manifest(record, self.team)
        service["metadata"]["namespace"] = self.namespace
        made_service = True
        try:
            self.core.create_namespaced_service(self.namespace, service)  # type: ignore[arg-type]
        except ApiException as e:
            if e.status != 409 or record.attempt == 0:
                raise
            made_service = False  # the earlier attempt's, released by it
        try:
            created = self.api.sanitize_for_serialization(
                self.batch.create_namespaced_job(self.namespace, job)
            )  # type: ignore[arg-type]
        except BaseException:
            if made_service:
                self.core.delete_namespaced_service(record.id, self.namespace)
            raise
        owner = manifests.owned_by(service, created)["metadata"]["ownerReferences"]
        self.core.patch_namespaced_service(
            record.id, self.namespace, {"metadata": {"ownerReferences": owner}}
        )

    def _delete_job(self, job_id: str, propagation: str = "Background") -> None:
        """Delete the Job (its pods and Workload with it), if it is still there."""
        from kubernetes.client import ApiException

        try:
            self.batch.delete_namespaced_job(job_id, self.namespace, propagation_policy=propagation)
        except ApiException as e:
            if e.status != 404:
                raise

    def _resume_from(self, record: JobRecord) -> str | None:
        """The checkpoint of an earlier job this one starts from, if it asked for one."""
        ref = record.spec.resume_from
        info = resume_checkpoint(self.jobs_root / ref.job_id, ref.step) if ref else None
        return str(info.path) if info is not None else None

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        if record.state.terminal:
            return record
        JobDir(record.job_dir).emit("cancel_requested", reason=reason)
        self._delete_job(job_id, propagation="Foreground")
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
            self.custom.patch_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                self.namespace,
                "workloads",
                workload["metadata"]["name"],
                {"spec": {"active": False}},
            )
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
        plan = recovery.RetryPlan(
            attempt=record.attempt + 1,
            failure_class="suspended",
            reason="resumed",
            backoff_seconds=0.0,
            not_before=0.0,
            retries=dict(record.retries),
        )
        self._next_attempt(record, plan)
        return self.get(job_id) or record

    # --- reads --------------------------------------------------------------------------------
    # Reads list each object kind once per call (Jobs, pods, Workloads, by label selector) and
    # build every record from those lists in memory, so a call makes the same few requests
    # whatever the number of jobs. A watch-fed cache (KubeSpawner's reflector) would spare even
    # those, but needs a watch thread per kind, resyncs, and a rule for how stale an answer may
    # be; the lists keep each answer as fresh as the apiserver's and cost milliseconds. Reads
    # write nothing: what the job directory records (state changes, Kubernetes events, the
    # verdict) is written by reconcile(), which the server runs periodically.
    def get(self, job_id: str) -> JobRecord | None:
        from kubernetes.client import ApiException

        try:
            job = self._json(self.batch.read_namespaced_job, job_id, self.namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            return self._from_jobdir(self.jobs_root / job_id)
        if job["metadata"].get("labels", {}).get(TEAM_LABEL) != self.team.name:
            return None
        if _going(job):
            return self._from_jobdir(self.jobs_root / job_id)
        return self._observe(job, self._pods(job_id), self._workload_of(job))

    def list_jobs(
        self,
        *,
        user: str | None,
        states: Sequence[JobState] | None,
        limit: int,
        before_seq: int | None,
        sweep_id: str | None = None,
        search: str | None = None,
        with_shared: bool = False,
    ) -> list[JobRecord]:
        page: list[tuple[_Listed, JobRecord]] = []
        for entry in self._listed(user, states, before_seq, with_shared):
            record = entry.record()
            if record is not None and _wanted(record, sweep_id, search):
                page.append((entry, record))
                if len(page) == limit:
                    break
        # Kueue's side of the page alone: its Workloads, in one request by their Jobs' uids.
        workloads = self._workloads_of([e.job for e, _ in page if e.job is not None])
        return [
            _with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
            for e, r in page
        ]

    def count(
        self,
        *,
        user: str | None,
        states: Sequence[JobState] | None,
        sweep_id: str | None = None,
        search: str | None = None,
        with_shared: bool = False,
    ) -> int:
        listed = self._listed(user, states, None, with_shared)
        if sweep_id is None and not search:
            return len(listed)  # state, user and order come from the objects: no record built
        return sum(
            1 for e in listed if (r := e.record()) is not None and _wanted(r, sweep_id, search)
        )

    def _all(self, user: str | None) -> list[JobRecord]:
        entries = self._listed(user, None, None)
        workloads = _by_owner(self._workloads()) if any(e.job for e in entries) else {}
        return [
            _with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
            for e in entries
            if (r := e.record()) is not None
        ]

    def _listed(
        self,
        user: str | None,
        states: Sequence[JobState] | None,
        before_seq: int | None,
        with_shared: bool = False,
    ) -> list[_Listed]:
        """The team's jobs (``user``'s only, when given, and with ``with_shared`` those other
        members shared with the team) in ``states`` submitted before ``before_seq``, newest
        first: those with a Job object from one read of the namespace, each record built only
        when asked for; those whose objects are gone (cancelled, cleaned up) from their
        directories."""
        seen = self._read_namespace(None if with_shared else user)
        entries = []
        for job in seen.jobs:
            notes = _notes(job)
            if _going(job):
                continue  # read from its directory, below
            # the label holds the name made label-safe; the annotation holds it
            theirs = user is not None and notes.get("user") != user
            if theirs and not (with_shared and self._shared(job["metadata"]["name"])):
                continue
            entries.append(
                _Listed(
                    job["metadata"]["name"],
                    _seq(notes),
                    status.job_state(job, seen.pods_of(job)),
                    lambda job=job: self._observe(job, seen.pods_of(job), None),
                    job,
                )
            )
        named = {j["metadata"]["name"] for j in seen.jobs if not _going(j)}
        if self.jobs_root.is_dir():
            for path in self.jobs_root.iterdir():
                if path.name in named or not path.is_dir() or path.is_symlink():
                    continue
                with _refusals_logged(path.name):
                    rec = self._from_jobdir(path)
                    if rec is not None and (
                        user is None or rec.user == user or (with_shared and rec.shared == "team")
                    ):
                        entries.append(_Listed(rec.id, rec.seq or 0, rec.state, lambda r=rec: r))
        entries = [
            e
            for e in entries
            if (not states or e.state in states) and (before_seq is None or e.seq < before_seq)
        ]
        entries.sort(key=lambda e: e.seq, reverse=True)
        return entries

    def _shared(self, job_id: str) -> bool:
        """Whether the owner of the team's job ``job_id`` shared it with the team, as its
        directory below the team's jobs root says (trainhub.jobs.sharing)."""
        return JobDir(self.jobs_root / job_id).read_edits([])["shared"] == "team"

    def team_name(self) -> str | None:
        return self.team.name

    def wait_reason(self, record: JobRecord) -> tuple[str | None, int | None]:
        if record.state == JobState.STARTING:
            return self.wait_reasons([record]).get(record.id, (None, None))
        if record.state != JobState.QUEUED:
            return None, None
        return status.wait_reason(self._workload(record.id), self._cluster_queue()), None

    def wait_reasons(
        self, records: Sequence[JobRecord]
    ) -> dict[str, tuple[str | None, int | None]]:
        """Why each queued one waits, from one list of the namespace's Workloads and one read
        of the team's ClusterQueue (a Workload names the Job owning it); why each starting one
        does, from its pods and their events (:mod:`waits`)."""
        starting = self._pod_waits([r for r in records if r.state == JobState.STARTING])
        pods_say = {job_id: (wait.text(), None) for job_id, wait in starting.items()}
        queued = [r for r in records if r.state == JobState.QUEUED]
        if not queued:
            return pods_say
        shared = getattr(self._reading, "seen", None) or {}
        page = shared.get(_PAGE_WORKLOADS)  # the list's page just read them
        if page is None or any(r.id not in page for r in queued):
            page = {
                o["name"]: w
                for w in self._workloads()
                for o in w["metadata"].get("ownerReferences") or []
                if o.get("kind") == "Job"
            }
        workloads = page
        cluster_queue = self._cluster_queue()
        return pods_say | {
            r.id: (status.wait_reason(workloads.get(r.id), cluster_queue), None) for r in queued
        }

    def _pod_waits(self, records: Sequence[JobRecord]) -> dict[str, waits.Wait]:
        """What each job's pods wait for (those that wait), from one read of the namespace's
        pods and one list of its events."""
        if not records:
            return {}
        # The pods a list just read (every pod of the team's jobs), else those of the one job.
        shared = getattr(self._reading, "seen", None) or {}
        read = next((v.pods for v in shared.values() if isinstance(v, _Namespace)), None)
        if read is None and len(records) == 1:
            read = {records[0].id: self._pods(records[0].id)}
        elif read is None:
            read = self._read_namespace(None).pods
        pods = {r.id: read.get(r.id, []) for r in records}
        pending = {
            job_id: mine
            for job_id, mine in pods.items()
            if any(p.get("status", {}).get("phase") == "Pending" for p in mine)
        }
        if not pending:
            return {}
        events = _events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        by_id = {r.id: r for r in records}
        return {
            job_id: wait
            for job_id, pods in pending.items()
            if (wait := self._job_wait(by_id[job_id], pods, events)) is not None
        }

    def _job_wait(
        self, record: JobRecord, pods: list[Obj], events_of: dict[str, list[Obj]]
    ) -> waits.Wait | None:
        now = time.time()
        wait = waits.job_wait(pods, events_of, now)
        if wait is not None and wait.cause == "insufficient":  # room later, or never: the nodes say
            try:
                pool = self.pool_for(record)
            except OverQuota:  # the teams file changed since: no pool to judge by
                return wait
            wait = waits.job_wait(pods, events_of, now, self._pool_nodes(pool))
        return wait

    def _end_if_stuck(self, record: JobRecord, job: Obj, wait: waits.Wait) -> bool:
        """End the job on a cause that cannot heal once it is overdue (the team's grace
        period): its verdict names the cause, and its Job goes, releasing the quota; unless the
        class's retry policy replaces it by the next attempt. True when it ended."""

        grace = self.team.wait_grace_minutes * 60
        if not waits.overdue(wait, grace, time.time()):
            return False
        verdict = waits.verdict(wait, self.team.wait_grace_minutes, record.attempt)
        if self._plan_retry(record, verdict):
            return True
        self._delete_job(record.id)
        self._finish(record, JobState.FAILED, verdict, _times(job), retry=False)
        return True

    def reconcile(self) -> None:
        """Record in each job directory what the cluster did since the last reconcile: state
        changes, preemptions, the verdict of a job that ended, and the Kubernetes events of the
        Job, its pods and its Workload; from one read of the namespace and one list of events."""
        seen = self._read_namespace(None)
        workloads = _by_owner(self._workloads())
        events = _events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        reconciled = {}
        for job in seen.jobs:
            pods, workload = seen.pods_of(job), workloads.get(job["metadata"]["uid"])
            mine = [e for uid in _uids(job, pods, workload) for e in events.get(uid, ())]
            uid, version = job["metadata"]["uid"], _versions(job, pods, workload, mine)
            reconciled[uid] = version
            if self._reconciled.get(uid) == version:
                continue  # nothing about it changed since it was last recorded: no file read
            with _refusals_logged(job["metadata"]["name"]):
                record = self._record_base(job)
                self._record_changes(record, job, pods, workload)
                self._sync_events(JobDir(record.job_dir), mine)
                if not self._note_image(JobDir(record.job_dir), pods):
                    reconciled.pop(uid)  # the submitter has not written the lineage yet
                if status.job_state(job, pods) == JobState.STARTING and not _going(job):
                    wait = self._job_wait(record, pods, events)
                    if (
                        wait is not None
                        and not wait.heals
                        and not self._end_if_stuck(record, job, wait)
                    ):
                        reconciled.pop(uid, None)  # its grace runs out with no change: look again
        self._reconciled = reconciled  # only once all are recorded: a failure retries them
        self._start_retries(seen.jobs)

    def usage(
        self,
        by: UsageBy,
        since: float,
        *,
        user: str | None = None,
        team: str | None = None,
        recompute: bool = False,
    ) -> list[UsageGroup]:
        """Rows derived afresh from the team's ended jobs (records, Kueue's times kept in the
        final state event, the in-pod sampler's files), aggregated in an in-memory table."""
        with self.usage_rows(since, user=user, team=team) as usage:
            return usage.report(by, since, user=user, team=team)

    @contextlib.contextmanager
    def usage_rows(
        self, since: float, *, user: str | None = None, team: str | None = None
    ) -> Iterator[UsageStore]:
        conn = sqlite3.connect(":memory:")
        try:
            usage = UsageStore(lambda: conn)
            if team is None or team == self.team.name:
                usage.record(
                    job_usage(r, threshold_pct=settings.waste_utilization_pct())
                    for r in self._all(user)
                    if r.state.terminal and (r.finished_at or 0) >= since
                )
            yield usage
        finally:
            conn.close()

    def quotas(self) -> tuple[list[PoolQuota], str]:
        """The team's ClusterQueue: its spec's quotas and its status's usage."""
        cq = self._cluster_queue()
        return cluster_queue_quotas(cq), f"ClusterQueue {self.team.cluster_queue}"

    def live_log(
        self, job_id: str, rank: int, offset: int, length: int
    ) -> tuple[bytes, int] | None:
        """The log of the pod that runs ``rank`` (worker ``rank // ranks_per_worker``), from byte
        ``offset``, while that pod exists.

        A pod's log holds its torchrun agent's output and whatever its local ranks printed
        before each of them opened ``logs/rank-<r>.log``; so until then a rank's live log shows
        its whole worker's start-up (all its local ranks, interleaved). None when there is no
        such pod (not created yet, or gone: the job directory is then the record) or when the
        node cannot serve its log (container not started, log gone with the node).
        """
        from kubernetes.client import ApiException
        from urllib3.exceptions import HTTPError

        try:
            spec = _read_spec(JobDir(self.jobs_root / job_id))
        except (OSError, ValueError):
            return None
        worker = rank // spec.resources.ranks_per_worker
        pods = [p for p in self._pods(job_id) if _index(p) == worker]
        if not pods or length <= 0:
            return None
        # The newest pod of that index: a replacement after preemption, not the one going away.
        pod = max(
            pods,
            key=lambda p: (
                not p["metadata"].get("deletionTimestamp"),
                p["metadata"].get("creationTimestamp") or "",
            ),
        )
        try:
            # The API has no byte offset: read up to offset + length and keep the tail.
            raw = self.core.read_namespaced_pod_log(
                pod["metadata"]["name"],
                self.namespace,
                container=manifests.CONTAINER,
                limit_bytes=offset + length,
                _preload_content=False,
                _request_timeout=self.request_timeout,
            ).data  # type: ignore[attr-defined]
        except HTTPError as e:
            raise BackendUnavailable(
                f"cannot read the log of pod {pod['metadata']['name']}: {type(e).__name__}"
            ) from None
        except ApiException as e:
            if e.status in (400, 404):  # container waiting to start; pod or its log gone
                return None
            raise BackendUnavailable(
                f"cannot read the log of pod {pod['metadata']['name']}: {e.status} {e.reason}"
            ) from None
        data = raw[offset : offset + length]
        if len(data) == length and (cut := data.rfind(b"\n")) >= 0:
            data = data[: cut + 1]  # end on a line boundary, as the job directory's logs do
        return data, offset + len(data)

    def close(self) -> None:
        self.api.close()

    # --- observation ----------------------------------------------------------------------------
    def _json(self, call: Any, *args: Any, **kwargs: Any) -> Obj:
        """One API request's answer as plain JSON (the client's models are slow to build and
        only converted back), within the per-request time limit."""
        from urllib3.exceptions import HTTPError

        try:
            response = call(
                *args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs
            )
        except HTTPError as e:  # timed out, refused, cut off (after urllib3's retries)
            raise BackendUnavailable(
                f"the cluster did not answer within {self.request_timeout[1]:g} s "
                f"({type(e).__name__}); try again"
            ) from None
        return json.loads(response.data)

    def _items(self, call: Any, *args: Any, **kwargs: Any) -> list[Obj]:
        return self._json(call, *args, **kwargs).get("items") or []

    def _read_namespace(self, user: str | None) -> _Namespace:
        """The team's Jobs (``user``'s only, when given), their pods and the namespace's
        Workloads: one list request each."""
        shared = getattr(self._reading, "seen", None)  # inside reading(): looked at once
        if shared is not None and user in shared:
            return shared[user]
        team = f"{TEAM_LABEL}={self.team.name},{JOB_ID_LABEL}"
        selector = team if user is None else f"{team},{USER_LABEL}={label_value(user)}"
        jobs = self._items(self.batch.list_namespaced_job, self.namespace, label_selector=selector)
        pods: dict[str, list[Obj]] = {}
        for pod in self._items(self.core.list_namespaced_pod, self.namespace, label_selector=team):
            pods.setdefault(pod["metadata"]["labels"][JOB_ID_LABEL], []).append(pod)
        seen = _Namespace(jobs, pods)
        if shared is not None:
            shared[user] = seen
        return seen

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Reads inside share one read of the namespace (per thread: each request its own)."""
        if getattr(self._reading, "seen", None) is not None:
            yield  # already inside one
            return
        self._reading.seen = {}
        try:
            yield
        finally:
            self._reading.seen = None

    def _pods(self, job_id: str) -> list[Obj]:
        return self._items(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=f"{TEAM_LABEL}={self.team.name},{JOB_ID_LABEL}={job_id}",
        )

    def _workloads(self, job_uid: str | None = None) -> list[Obj]:
        """The namespace's Workloads; only the one Kueue made for the Job ``job_uid`` (by the
        label Kueue puts on it) when given."""
        selector = {"label_selector": f"{KUEUE_JOB_UID_LABEL}={job_uid}"} if job_uid else {}
        return self._items(
            self.custom.list_namespaced_custom_object,
            KUEUE_GROUP,
            KUEUE_VERSION,
            self.namespace,
            "workloads",
            **selector,
        )

    def _workloads_of(self, jobs: list[Obj]) -> dict[str, Obj]:
        """The Workloads of ``jobs`` (a page of them), by their Job's uid: one request with a
        set-based selector on Kueue's label, however many Workloads the namespace holds."""
        if not jobs:
            return {}
        uids = ",".join(j["metadata"]["uid"] for j in jobs)
        listed = self._items(
            self.custom.list_namespaced_custom_object,
            KUEUE_GROUP,
            KUEUE_VERSION,
            self.namespace,
            "workloads",
            label_selector=f"{KUEUE_JOB_UID_LABEL} in ({uids})",
        )
        shared = getattr(self._reading, "seen", None)
        if shared is not None:  # for the page's wait reasons
            shared[_PAGE_WORKLOADS] = {j["metadata"]["name"]: None for j in jobs} | {
                o["name"]: w
                for w in listed
                for o in w["metadata"].get("ownerReferences") or []
                if o.get("kind") == "Job"
            }
        return _by_owner(listed)

    def _workload_of(self, job: Obj) -> Obj | None:
        return _by_owner(self._workloads(job["metadata"]["uid"])).get(job["metadata"]["uid"])

    def _workload(self, job_id: str) -> Obj | None:
        from kubernetes.client import ApiException

        try:
            job = self._json(self.batch.read_namespaced_job, job_id, self.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return self._workload_of(job)

    def _pool_nodes(self, pool: Pool) -> list[placement.Node] | None:
        """The nodes ``pool`` selects; None when this account may not list nodes."""
        from kubernetes.client import ApiException

        try:
            listed = self._items(self.core.list_node, label_selector=nodes.selector(pool))
        except ApiException:
            return None
        return [nodes.node_of(n) for n in listed]

    def _cluster_queue(self) -> Obj | None:
        from kubernetes.client import ApiException

        name = self.team.cluster_queue
        try:
            return self._json(
                self.custom.get_cluster_custom_object,
                KUEUE_GROUP,
                KUEUE_VERSION,
                "clusterqueues",
                name,
            )
        except ApiException:
            return None  # not readable for this account: the sentence goes without figures

    def _observe(self, job: Obj, pods: list[Obj], workload: Obj | None) -> JobRecord:
        """The record of a live Job, from its objects and its directory; writes nothing."""
        record = self._record_base(job)
        state = status.job_state(job, pods)
        verdict = None
        if state == JobState.FAILED:
            verdict = status.failure_verdict(
                job,
                pods,
                _rank_results(JobDir(record.job_dir), record.attempt),
                attempt=record.attempt,
            )
        step = saved_step(record.job_dir) if state == JobState.SUSPENDED else None
        observed = record.model_copy(
            update={"state": state, "verdict": verdict, "suspended_step": step}
        )
        return _with_workload(observed, job, workload)

    def _record_changes(
        self, record: JobRecord, job: Obj, pods: list[Obj], workload: Obj | None
    ) -> None:
        """Write to the job directory what changed since it last recorded the Job: a
        preemption, a new state, the verdict and times of a job that ended (the final state
        event keeps Kueue's admission time, which outlives the Job: usage reads it there)."""
        jobdir = JobDir(record.job_dir)
        self._note_preemptions(record, jobdir, workload)
        observed = self._observe(job, pods, workload)
        last = _last_state(jobdir)
        if last is not None and last.get("state") in _ENDED:
            # Its end is recorded, and final: a cancelled Job's pods, killed as it goes away,
            # must not make it "failed" after the fact.
            return
        if last is None or last.get("state") != observed.state.value:
            if observed.state.terminal:
                times = _times(job, workload)
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

    def _record_base(self, job: Obj) -> JobRecord:
        meta, notes = job["metadata"], _notes(job)
        jobdir = JobDir(notes["job-dir"])
        spec = _read_spec(jobdir)
        return JobRecord(
            seq=_seq(notes),
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
        last = _last_state(jobdir) or {}
        state = JobState(last.get("state", JobState.CANCELLED.value))
        if not state.terminal:
            # No Job object and no final word in the directory: the Job was removed behind our back.
            state = JobState.FAILED
            last = {
                "verdict": {
                    "failure_class": "infrastructure",
                    "reason": "its Job object disappeared",
                }
            }
        submitted = next((e for e in jobdir.iter_events() if e.get("type") == "submitted"), {})
        created = float(submitted.get("time", os.stat(root, follow_symlinks=False).st_mtime))
        return JobRecord(
            seq=int(created * 1000),
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
            admitted_at=_time_of(last, "admitted_at"),
            started_at=_time_of(last, "started_at"),
            finished_at=_time_of(last, "finished_at") or last.get("time"),
            verdict=Verdict.model_validate(last["verdict"]) if last.get("verdict") else None,
            **jobdir.read_edits(spec.tags),
        )

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
            self._announce(ended, kind)

    @staticmethod
    def _announce(record: JobRecord, kind: str) -> None:
        """Queue the job's alert (trainhub.alerts) when this process is its owner's: the
        session reconciles the whole team's namespace, but only the owner's home holds the
        owner's channels. The reconcile goes on whatever happens to the alert."""
        owner = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
        if record.user != owner:
            return
        problem = announce_job(settings.home(), record, kind)
        if problem:
            JobDir(record.job_dir).emit("alert", error=problem)

    def _plan_retry(self, record: JobRecord, verdict: Verdict) -> bool:
        """Mark the failed Job for a retry and say so in the job directory, when the policy
        allows one; False when the job ends here."""
        from kubernetes.client import ApiException

        plan = recovery.plan_retry(
            verdict, record.spec.retry, record.retries, attempt=record.attempt, now=time.time()
        )
        if plan is None:
            return False
        try:
            self.batch.patch_namespaced_job(
                record.id,
                self.namespace,
                {"metadata": {"annotations": {recovery.RETRY_ANNOTATION: plan.to_json()}}},
            )
        except ApiException as e:
            if e.status != 404:
                raise
            return False  # the Job went meanwhile: nothing left to replace, the job ends
        jobdir = JobDir(record.job_dir)
        latest = resume_checkpoint(jobdir.root)
        jobdir.emit("verdict", **verdict.model_copy(update={"retriable": True}).model_dump())
        jobdir.emit(
            "retry",
            **plan.fields(),
            resume_step=latest.step if latest is not None else None,
        )
        jobdir.emit("state", state=JobState.RETRYING.value, attempt=plan.attempt)
        return True

    def _start_retries(self, jobs: list[Obj]) -> None:
        """Replace each failed Job whose retry backoff has passed by its next attempt's."""
        now = time.time()
        for job in jobs:
            plan = recovery.pending_retry(job)
            if plan is not None and plan.due(now):
                with _refusals_logged(job["metadata"]["name"]):
                    self._next_attempt(self._record_base(job), plan)

    def _next_attempt(self, record: JobRecord, plan: recovery.RetryPlan) -> None:
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
        self._delete_job(record.id)
        jobdir = JobDir(record.job_dir)
        latest = resume_checkpoint(jobdir.root)
        resume = str(latest.path) if latest is not None else self._resume_from(record)
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
            if NotifyOn.PREEMPTION in record.spec.notify:
                self._announce(record.model_copy(update={"state": JobState.QUEUED}), "preemption")

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


def _default_client() -> Any:
    from kubernetes import config

    try:
        config.load_incluster_config()
        from kubernetes import client

        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()


def _index(pod: Obj) -> int | None:
    value = pod["metadata"].get("annotations", {}).get("batch.kubernetes.io/job-completion-index")
    return int(value) if value is not None else None


@dataclass
class _Namespace:
    """What one read of the team's namespace saw."""

    jobs: list[Obj]
    pods: dict[str, list[Obj]]  # by job id

    def pods_of(self, job: Obj) -> list[Obj]:
        return self.pods.get(job["metadata"]["name"], [])


@dataclass
class _Listed:
    """A job of a list: what filtering and ordering need, its record built on demand (None
    when its files are refused: it is left out, logged)."""

    id: str
    seq: int
    state: JobState
    build: Callable[[], JobRecord | None]  # without what its Workload adds (_with_workload)
    job: Obj | None = None  # None: read from its directory

    def record(self) -> JobRecord | None:
        # One job that swapped its files for links or FIFOs is left out of the list (asking
        # for it names the refusal); it never takes the list of every other job down with it.
        with _refusals_logged(self.id):
            return self.build()
        return None


def _with_workload(record: JobRecord, job: Obj, workload: Obj | None) -> JobRecord:
    """What Kueue's Workload adds to a live Job's record: its admission and finish times, and
    its evictions (Kueue requeues a preempted job itself: each is a preemption retry used)."""
    retries = record.retries
    if evictions := status.preemptions(workload):
        retries = count_retry(retries, FailureClass.PREEMPTED, used=evictions)
    return record.model_copy(update={**_times(job, workload), "retries": retries})


def _wanted(record: JobRecord, sweep_id: str | None, search: str | None) -> bool:
    return (sweep_id is None or record.sweep_id == sweep_id) and (
        not search or found(record, search)
    )


def _going(job: Obj) -> bool:
    """A Job on its way out (cancelled, or replaced by its next attempt's): its pods and state
    are being torn down, so the job directory says how it stands."""
    return bool(job["metadata"].get("deletionTimestamp"))


def _notes(job: Obj) -> dict[str, str]:
    """The record fields kept as the Job's annotations."""
    return {
        k[len(ANNOTATION) :]: v
        for k, v in (job["metadata"].get("annotations") or {}).items()
        if k.startswith(ANNOTATION)
    }


def _seq(notes: dict[str, str]) -> int:
    return int(float(notes["created-at"]) * 1000)


def _by_owner(workloads: list[Obj]) -> dict[str, Obj]:
    return {
        o["uid"]: w
        for w in workloads
        for o in w["metadata"].get("ownerReferences") or []
        if o.get("uid")
    }


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


def _events_by_object(events: list[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for event in events:
        uid = (event.get("involvedObject") or {}).get("uid")
        if uid:
            out.setdefault(uid, []).append(event)
    return out


@contextlib.contextmanager
def _refusals_logged(job_id: str) -> Iterator[None]:
    try:
        yield
    except NotAJobFile as e:
        log.warning("trainhub: job %s left out of the list: %s", job_id, e)


def _read_spec(jobdir: JobDir) -> JobSpec:
    data = jobdir.read_spec()
    data.pop("id", None)
    data.pop("user", None)
    return JobSpec.model_validate(data)


_ENDED = frozenset(s.value for s in JobState if s.terminal)


def _last_state(jobdir: JobDir) -> dict[str, Any] | None:
    last = None
    for e in jobdir.iter_events():
        if e.get("type") == "state":
            last = e
    return last


def _rank_results(jobdir: JobDir, attempt: int) -> dict[int, dict[str, Any]]:
    results = {}
    folder = f"status/{attempt}"
    for name, is_dir in confined.entries(jobdir.root, folder):
        stem, _, rank = name.removesuffix(".json").partition("-")
        if is_dir or not name.endswith(".json") or stem != "rank" or not rank.isdigit():
            continue
        try:  # a rank's result the job replaced by a link or FIFO counts as missing
            results[int(rank)] = jobdir.read_json(f"{folder}/{name}")
        except (ValueError, OSError):
            continue
    return results


# Times the final state event keeps for a record read back from the job directory.
_KEPT_TIMES = ("admitted_at", "started_at", "finished_at")


def _time_of(event: dict[str, Any], name: str) -> float | None:
    value = event.get(name)
    return float(value) if isinstance(value, int | float) else None


def _times(job: Obj, workload: Obj | None = None) -> dict[str, float | None]:
    """Admitted (Kueue's Workload when read, else the Job's unsuspension), started, finished."""
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
    return {
        "admitted_at": workload_times(workload).admitted_at or ts(admitted),
        "started_at": ts(st.get("startTime")),
        "finished_at": ts(st.get("completionTime"))
        or workload_times(workload).finished_at
        or next(
            (
                ts(c.get("lastTransitionTime"))
                for c in st.get("conditions") or []
                if c.get("type") == "Failed" and c.get("status") == "True"
            ),
            None,
        ),
    }
