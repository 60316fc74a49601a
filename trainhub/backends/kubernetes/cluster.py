"""The team's namespace as the Kubernetes backend reads it: one API request's answer as plain
JSON within its time limit, and each object kind (Jobs, pods, Workloads, the ClusterQueue)
listed once per call, shared by the reads inside one :meth:`Cluster.reading`.

Reads list each object kind once per call (by label selector) and build every record from those
lists in memory, so a call makes the same few requests whatever the number of jobs. Where a
``lists`` cache is set (the controller's; a session's server where a controller runs), it
answers those lists instead (trainhub.backends.kubernetes.cache), and a write waits for the
cache to hold it (:meth:`Cluster._cache_saw`).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from trainhub.backends.kubernetes import nodes
from trainhub.backends.kubernetes.identity import USER_LABEL, owner_label
from trainhub.backends.kubernetes.manifests import JOB_ID_LABEL, label_value
from trainhub.backends.kubernetes.names import KUEUE_API, SLICE_REPLACES, TEAM_LABEL
from trainhub.errors import BackendUnavailable
from trainhub.jobs import placement
from trainhub.teams import Team, Teams

if TYPE_CHECKING:
    from trainhub.backends.kubernetes.cache import CachedLists

KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"  # on the Workload Kueue makes for a Job
PAGE_WORKLOADS = object()  # reading()'s key for the Workloads of the page just listed
# (connect, read) seconds for each API request: a cluster that does not answer ends the
# request with an error well within the server's call_time_limit, never holding a worker.
REQUEST_TIMEOUT = (5.0, 10.0)
Obj = dict[str, Any]
T = TypeVar("T")


class Cluster:
    """The backend's connection to its team's namespace, and the requests that read it. The
    other parts of the backend (submit, observe, act) build on it; the backend's constructor
    sets these."""

    teams: Teams
    team: Team
    namespace: str
    queue: str
    jobs_root: Path
    api: Any
    request_timeout: tuple[float, float]
    lists: CachedLists | None  # the controller's cache, when it reads through one
    _reading: threading.local  # what reading() has seen, per thread
    core: Any
    batch: Any
    custom: Any

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

    def _cache_saw(self, kind: str, name: str, **how: Any) -> None:
        """After a write: wait (briefly) for the cache to show it, so that the next list of
        this process reads its own write."""
        if self.lists is not None:
            self.lists.saw(kind, name, **how)

    def _derived(self, kinds: tuple[str, ...], key: Hashable, build: Callable[[], T]) -> T:
        """``build()``, kept by the cache until one of ``kinds`` changes; built on every call
        where lists are read from the API server."""
        return build() if self.lists is None else self.lists.derived(kinds, key, build)

    def _items(self, call: Any, *args: Any, **kwargs: Any) -> list[Obj]:
        cached = self.lists.answer(call, args, kwargs) if self.lists is not None else None
        if cached is not None:
            return cached
        return self._json(call, *args, **kwargs).get("items") or []

    def _read_namespace(self, user: str | None) -> Namespace:
        """The team's Jobs (``user``'s only, when given), their pods and the namespace's
        Workloads: one list request each."""
        shared = getattr(self._reading, "seen", None)  # inside reading(): looked at once
        if shared is not None and user in shared:
            return shared[user]
        team = f"{TEAM_LABEL}={self.team.name},{JOB_ID_LABEL}"
        selector = team
        if user is not None:  # label_value: the owner label of Jobs made before owner_label
            owners = ",".join(sorted({owner_label(user), label_value(user)}))
            selector = f"{team},{USER_LABEL} in ({owners})"
        jobs = self._items(self.batch.list_namespaced_job, self.namespace, label_selector=selector)
        pods: dict[str, list[Obj]] = {}
        for pod in self._items(self.core.list_namespaced_pod, self.namespace, label_selector=team):
            pods.setdefault(pod["metadata"]["labels"][JOB_ID_LABEL], []).append(pod)
        seen = Namespace(jobs, pods)
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
        """The Workloads of ``jobs`` (a page of them), by their Job's uid: from the cache's
        index where one is kept, else one request with a set-based selector on Kueue's label;
        either way, however many Workloads the namespace holds."""
        if not jobs:
            return {}
        if self.lists is not None:  # the cache's index of them, kept until a Workload changes
            owned = self._derived(("workloads",), "workloads by owner", self._workloads_by_owner)
            listed = [w for j in jobs if (w := owned.get(j["metadata"]["uid"])) is not None]
        else:
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
            shared[PAGE_WORKLOADS] = {j["metadata"]["name"]: None for j in jobs} | {
                o["name"]: w
                for w in listed
                for o in w["metadata"].get("ownerReferences") or []
                if o.get("kind") == "Job"
            }
        return by_owner(listed)

    def _workloads_by_owner(self) -> dict[str, Obj]:
        return by_owner(self._workloads())

    def _workload_of(self, job: Obj) -> Obj | None:
        return by_owner(self._workloads(job["metadata"]["uid"])).get(job["metadata"]["uid"])

    def _workload(self, job_id: str) -> Obj | None:
        from kubernetes.client import ApiException

        try:
            job = self._json(self.batch.read_namespaced_job, job_id, self.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return self._workload_of(job)

    def _nodes(self, selector: str) -> list[placement.Node] | None:
        """The nodes a label selector picks (a pool's, a pod's); None when this account may
        not list nodes."""
        from kubernetes.client import ApiException

        try:
            listed = self._json(self.core.list_node, label_selector=selector)
        except ApiException:
            return None
        return [nodes.node_of(n) for n in listed.get("items") or []]

    def _cluster_queue(self) -> Obj | None:
        from kubernetes.client import ApiException

        name = self.team.cluster_queue
        if self.lists is not None:
            with contextlib.suppress(LookupError):  # not kept: asked of the API server
                return self.lists.named("clusterqueues", name)
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


@dataclass
class Namespace:
    """What one read of the team's namespace saw."""

    jobs: list[Obj]
    pods: dict[str, list[Obj]]  # by job id

    def pods_of(self, job: Obj) -> list[Obj]:
        return self.pods.get(job["metadata"]["name"], [])


def by_owner(workloads: list[Obj]) -> dict[str, Obj]:
    """Each Job's Workload. An elastic Job has one per slice (Kueue finishes the one a resize
    replaced): its newest is the one that holds or waits for its quota."""
    out: dict[str, Obj] = {}
    for w in sorted(workloads, key=_slice_order):
        for o in w["metadata"].get("ownerReferences") or []:
            if o.get("uid"):
                out[o["uid"]] = w
    return out


def _slice_order(workload: Obj) -> tuple[str, bool]:
    """Oldest first; of two in one second, the replacement after the one it replaces."""
    meta = workload["metadata"]
    replaces = SLICE_REPLACES in (meta.get("annotations") or {})
    return meta.get("creationTimestamp") or "", replaces


def events_by_object(events: list[Obj]) -> dict[str, list[Obj]]:
    """The namespace's events by the uid of the object each is about."""
    out: dict[str, list[Obj]] = {}
    for event in events:
        uid = (event.get("involvedObject") or {}).get("uid")
        if uid:
            out.setdefault(uid, []).append(event)
    return out
