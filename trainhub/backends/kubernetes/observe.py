"""The Kubernetes backend's reads: a job, a page of jobs and their count, why queued jobs wait
(Kueue's quota) and why starting ones do (their pods),
usage, quotas and a rank's live log. Each call reads the namespace once per object kind
(:mod:`~trainhub.backends.kubernetes.cluster`) and writes nothing: what the job directory
records (state changes, Kubernetes events, the verdict) is written by reconcile()
(:mod:`~trainhub.backends.kubernetes.act`), which the server runs periodically.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from trainhub import settings
from trainhub.backends.kubernetes import manifests, nodes, status, waits
from trainhub.backends.kubernetes.cluster import (
    PAGE_WORKLOADS,
    Namespace,
    Obj,
    by_owner,
    events_by_object,
)
from trainhub.backends.kubernetes.records import (
    Records,
    created_seq,
    read_spec,
    record_notes,
    refusals_logged,
    with_workload,
)
from trainhub.backends.kubernetes.render import TEAM_LABEL
from trainhub.errors import BackendUnavailable
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.search import found
from trainhub.jobs.states import JobState
from trainhub.usage.compute import job_usage
from trainhub.usage.models import UsageBy, UsageGroup
from trainhub.usage.panel import PoolQuota, cluster_queue_quotas
from trainhub.usage.store import UsageStore


class Observing(Records):
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
            with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
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
        workloads = by_owner(self._workloads()) if any(e.job for e in entries) else {}
        return [
            with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
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
            notes = record_notes(job)
            if _going(job):
                continue  # read from its directory, below
            # the label holds the name made label-safe; the annotation holds it
            theirs = user is not None and notes.get("user") != user
            if theirs and not (with_shared and self._shared(job["metadata"]["name"])):
                continue
            entries.append(
                _Listed(
                    job["metadata"]["name"],
                    created_seq(notes),
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
                with refusals_logged(path.name):
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
        does, from its pods and their events (:mod:`~trainhub.backends.kubernetes.waits`)."""
        starting = self._pod_waits([r for r in records if r.state == JobState.STARTING])
        pods_say = {job_id: (wait.text(), None) for job_id, wait in starting.items()}
        queued = [r for r in records if r.state == JobState.QUEUED]
        if not queued:
            return pods_say
        shared = getattr(self._reading, "seen", None) or {}
        page = shared.get(PAGE_WORKLOADS)  # the list's page just read them
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
        """What each job's pods wait for (those that wait), from the pods a list just read
        (else one list of them) and one list of the namespace's events."""
        if not records:
            return {}
        shared = getattr(self._reading, "seen", None) or {}
        read = next((v.pods for v in shared.values() if isinstance(v, Namespace)), None)
        if read is None and len(records) == 1:
            read = {records[0].id: self._pods(records[0].id)}
        elif read is None:
            read = self._read_namespace(None).pods
        pending = {
            r.id: read.get(r.id, [])
            for r in records
            if any(p.get("status", {}).get("phase") == "Pending" for p in read.get(r.id, []))
        }
        if not pending:
            return {}
        events = events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        return {
            job_id: wait
            for job_id, pods in pending.items()
            if (wait := self._job_wait(pods, events)) is not None
        }

    def _job_wait(self, pods: list[Obj], events_of: dict[str, list[Obj]]) -> waits.Wait | None:
        """The job's wait; one the scheduler reports judged against the nodes its pods may go
        to (room later or never; a taint of its pool's nodes or of others')."""
        now = time.time()
        wait = waits.job_wait(pods, events_of, now)
        if wait is not None and wait.cause in waits.NODE_CAUSES and pods:
            found = self._nodes(nodes.pod_selector(pods[0]))
            wait = waits.job_wait(pods, events_of, now, found)
        return wait

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
            spec = read_spec(JobDir(self.jobs_root / job_id))
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


def _index(pod: Obj) -> int | None:
    value = pod["metadata"].get("annotations", {}).get("batch.kubernetes.io/job-completion-index")
    return int(value) if value is not None else None


@dataclass
class _Listed:
    """A job of a list: what filtering and ordering need, its record built on demand (None
    when its files are refused: it is left out, logged)."""

    id: str
    seq: int
    state: JobState
    build: Callable[[], JobRecord | None]  # without what its Workload adds (with_workload)
    job: Obj | None = None  # None: read from its directory

    def record(self) -> JobRecord | None:
        # One job that swapped its files for links or FIFOs is left out of the list (asking
        # for it names the refusal); it never takes the list of every other job down with it.
        with refusals_logged(self.id):
            return self.build()
        return None


def _wanted(record: JobRecord, sweep_id: str | None, search: str | None) -> bool:
    return (sweep_id is None or record.sweep_id == sweep_id) and (
        not search or found(record, search)
    )


def _going(job: Obj) -> bool:
    """A Job on its way out (cancelled, or replaced by its next attempt's): its pods and state
    are being torn down, so the job directory says how it stands."""
    return bool(job["metadata"].get("deletionTimestamp"))
