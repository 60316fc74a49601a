"""The Kubernetes backend's reads: a job (a page of them: :mod:`.listing`), why queued jobs
wait (Kueue's quota) and why starting ones do (their pods), usage, quotas and a rank's live
log. Each call reads the namespace once per object kind
(:mod:`~trainhub.backends.kubernetes.cluster`) and writes nothing: what the job directory
records (state changes, Kubernetes events, the verdict) is written by reconcile()
(:mod:`~trainhub.backends.kubernetes.reconcile`), which the controller runs (each session,
where a cluster has none).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from trainhub import settings
from trainhub.backends.kubernetes import manifests, nodes, status, unschedulable, waits
from trainhub.backends.kubernetes.cluster import (
    PAGE_WORKLOADS,
    Namespace,
    Obj,
    events_by_object,
)
from trainhub.backends.kubernetes.listing import Listing, going
from trainhub.backends.kubernetes.names import TEAM_LABEL
from trainhub.backends.kubernetes.records import (
    RECORDS_KEPT,
    read_spec,
)
from trainhub.backends.kubernetes.wait import Wait
from trainhub.errors import BackendUnavailable
from trainhub.jobs import ownership
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.usage import kept
from trainhub.usage.compute import job_usage
from trainhub.usage.models import UsageScope
from trainhub.usage.panel import PoolQuota, cluster_queue_quotas
from trainhub.usage.store import UsageStore

UNVERSIONED = "unversioned"  # _version of an object the API server did not write: never kept


class Observing(Listing):
    # job id -> (the versions of its Workload and the ClusterQueue, why it waits) (_queued_wait)
    _waits: dict[str, tuple[tuple[str | None, str | None], str | None]]

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
        if going(job):
            return self._from_jobdir(self.jobs_root / job_id)
        try:
            return self._observe(job, self._pods(job_id), self._workload_of(job))
        except PermissionError:
            return None  # a teammate's job, private: to this member there is no such job

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
            r.id: (self._queued_wait(r.id, workloads.get(r.id), cluster_queue), None)
            for r in queued
        }

    def _queued_wait(
        self, job_id: str, workload: Obj | None, cluster_queue: Obj | None
    ) -> str | None:
        """:func:`status.wait_reason`, worded again only once the job's Workload or the
        ClusterQueue changed (their resource versions): a page of queued jobs words none."""
        versions = (_version(workload), _version(cluster_queue))
        held = self._waits.get(job_id)
        if held is not None and held[0] == versions:
            return held[1]
        said = status.wait_reason(workload, cluster_queue)
        if UNVERSIONED not in versions:
            if len(self._waits) >= RECORDS_KEPT:
                self._waits.clear()
            self._waits[job_id] = (versions, said)
        return said

    def _pod_waits(self, records: Sequence[JobRecord]) -> dict[str, Wait]:
        """What each job's pods wait for (at least that they are on their way), from the pods a
        list just read (else one list of them) and, where a pod is pending, one list of the
        namespace's events."""
        if not records:
            return {}
        shared = getattr(self._reading, "seen", None) or {}
        read = next((v.pods for v in shared.values() if isinstance(v, Namespace)), None)
        if read is None and len(records) == 1:
            read = {records[0].id: self._pods(records[0].id)}
        elif read is None:
            read = self._read_namespace(None).pods
        starting = {r.id: read.get(r.id, []) for r in records}
        events: dict[str, list[Obj]] = {}
        if any(p.get("status", {}).get("phase") == "Pending" for v in starting.values() for p in v):
            events = events_by_object(self._items(self.core.list_namespaced_event, self.namespace))
        return {
            job_id: wait
            for job_id, pods in starting.items()
            if (wait := self._job_wait(pods, events)) is not None
        }

    def _job_wait(self, pods: list[Obj], events_of: dict[str, list[Obj]]) -> Wait | None:
        """The job's wait; one the scheduler reports judged against the nodes its pods may go
        to (room later or never; a taint of its pool's nodes or of others')."""
        now = time.time()
        wait = waits.job_wait(pods, events_of, now)
        if wait is not None and wait.cause in unschedulable.NODE_CAUSES and pods:
            found = self._nodes(nodes.pod_selector(pods[0]))
            wait = waits.job_wait(pods, events_of, now, found)
        return wait

    @contextlib.contextmanager
    def usage_rows(self, scope: UsageScope, *, recompute: bool = False) -> Iterator[UsageStore]:
        """Rows derived afresh from the team's ended jobs this process may read (records,
        Kueue's times kept in the final state event, the in-pod sampler's files), and where
        members own their files the rows the controller kept of the others
        (trainhub.usage.kept), into an in-memory table."""
        conn = sqlite3.connect(":memory:")
        try:
            usage = UsageStore(lambda: conn)
            if scope.team is None or scope.team == self.team.name:
                ended = [
                    r
                    for r in self._all(scope.user)
                    if r.state.terminal and (r.finished_at or 0) >= scope.since
                ]
                pct = settings.waste_utilization_pct()
                usage.record(job_usage(r, threshold_pct=pct) for r in ended)
                if ownership.guarded(self.jobs_root):
                    root = Path(self.team.shared_volume.mount_path)
                    excluding = {r.id for r in ended}
                    usage.record(
                        kept.kept_rows(
                            root, since=scope.since, user=scope.user, excluding=excluding
                        )
                    )
            yield usage
        finally:
            conn.close()

    def quotas(self) -> tuple[list[PoolQuota], str]:
        """The team's ClusterQueue: its spec's quotas and its status's usage."""
        cq = self._cluster_queue()
        shares = {
            pool.name: (pool.sharing.resource, pool.sharing.replicas)
            for pool in self.teams.pools
            if pool.sharing is not None
        }
        return cluster_queue_quotas(cq, shares), f"ClusterQueue {self.team.cluster_queue}"

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
            # container waiting to start; pod or its log gone; a session that may read no pod's
            # log (members own their files): the job directory's logs are the job's
            if e.status in (400, 403, 404):
                return None
            raise BackendUnavailable(
                f"cannot read the log of pod {pod['metadata']['name']}: {e.status} {e.reason}"
            ) from None
        data = raw[offset : offset + length]
        if len(data) == length and (cut := data.rfind(b"\n")) >= 0:
            data = data[: cut + 1]  # end on a line boundary, as the job directory's logs do
        return data, offset + len(data)


def _version(obj: Obj | None) -> str | None:
    """An object's resource version (None for no object; UNVERSIONED for one without)."""
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("resourceVersion") or UNVERSIONED


def _index(pod: Obj) -> int | None:
    value = pod["metadata"].get("annotations", {}).get("batch.kubernetes.io/job-completion-index")
    return int(value) if value is not None else None
