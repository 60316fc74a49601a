"""The backend's part in elastic jobs (trainhub.backends.kubernetes.elastic decides): resize
each elastic Job of the namespace that should change size, and record in its job directory
every change in the workers it holds quota for, with the reason."""

from __future__ import annotations

import json
import logging
from typing import Any

from trainhub.backends.kubernetes import elastic
from trainhub.backends.kubernetes.cluster import Obj
from trainhub.backends.kubernetes.manifests import ANNOTATION
from trainhub.jobs.directory import JobDir

log = logging.getLogger(__name__)

RESIZE_ANNOTATION = ANNOTATION + "resize"  # {"workers": N, "reason": ...}: the last resize
WORKERS_EVENT = "workers"


def _last_resize(job: Obj) -> dict[str, Any]:
    text = (job["metadata"].get("annotations") or {}).get(RESIZE_ANNOTATION)
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Resizing:
    """Mixed into the backend's reconcile, before Cluster (namespace, batch, _cluster_queue)."""

    namespace: str
    batch: Any
    _cluster_queue: Any  # Cluster's method (a stub here would hide it)

    def _resize_elastic(
        self, jobs: list[Obj], pods_of: Any, workloads: list[Obj], current: dict[str, Obj]
    ) -> None:
        """Patch each elastic Job whose size should change (one Job per pass: the next pass
        sees the queue's quota as the first resize left it)."""
        from kubernetes.client import ApiException

        elastic_jobs = [j for j in jobs if elastic.worker_range(j) is not None]
        if not elastic_jobs:
            return
        cq = self._cluster_queue()
        for job in elastic_jobs:
            uid = job["metadata"]["uid"]
            others = [
                w
                for w in workloads
                if not any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])
            ]
            change = elastic.next_size(job, pods_of(job), current.get(uid), others, cq)
            if change is None or change.workers == elastic.size(job):
                continue
            patch = elastic.resize_patch(
                change.workers,
                json.dumps({"workers": change.workers, "reason": change.reason}),
                RESIZE_ANNOTATION,
            )
            try:
                self.batch.patch_namespaced_job(job["metadata"]["name"], self.namespace, patch)
            except ApiException as e:
                if e.status in (404, 409, 422):  # gone, changed, or refused: the next pass
                    log.info("resizing %s refused: %s", job["metadata"]["name"], e.reason)
                    continue
                raise
            log.info("resized %s to %d: %s", job["metadata"]["name"], change.workers, change.reason)
            return

    def _note_workers(self, jobdir: JobDir, job: Obj, workload: Obj | None) -> None:
        """A ``workers`` event for each change in the workers the job holds quota for."""
        if elastic.worker_range(job) is None:
            return
        held = elastic.admitted_workers(workload)
        previous = None
        for e in jobdir.iter_events():
            if e.get("type") == WORKERS_EVENT:
                previous = e.get("workers")
            elif e.get("type") == "preempted":
                previous = None  # evicted whole: the next admission starts afresh
        last = _last_resize(job)
        reason = last.get("reason") if last.get("workers") == held else None
        event = elastic.membership_event(previous, held, reason)
        if event is not None:
            jobdir.emit(WORKERS_EVENT, **event)
