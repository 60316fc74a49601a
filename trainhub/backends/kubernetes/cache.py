"""A watch-fed cache of trainhub's objects in the team namespaces (KubeSpawner's reflector,
client-go's informer): each kind in each namespace is listed once, then kept current by a
watch from that list's resourceVersion, with bookmarks; a watch that ends is resumed from the
last version seen, and one the API server no longer serves (``410 Gone``) starts over with a
list. The backend's list requests are answered from it (:meth:`ClusterCache.lists`), so a
reconcile reads nothing from the API server.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from trainhub.backends.kubernetes.names import KUEUE_API
from trainhub.backends.kubernetes.selectors import matcher
from trainhub.backends.kubernetes.selectors import requirements as _requirements

Obj = dict[str, Any]
OnChange = Callable[[str, str], None]  # (namespace, kind)
log = logging.getLogger(__name__)

KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")

WATCH_SECONDS = 240  # the API server ends each watch after this; it is resumed at once
RETRY_SECONDS = (0.5, 10.0)  # backoff after an error, doubling up to the second
MAX_DERIVED = 256
T = TypeVar("T")


class Gone(Exception):
    """The watch's resourceVersion is too old for the API server: list again."""


@dataclass(frozen=True)
class Kind:
    """One kind the cache keeps: how to list it in a namespace, and which of its objects
    (the server-side label selector: only trainhub's pods, not the sessions')."""

    name: str
    list_call: Callable[..., Any]  # (namespace, **kwargs) -> urllib3 response
    selector: str | None = None
    # Not needed for the cache to be synced: an account that may not list it leaves its reads
    # to the API server.
    optional: bool = False


def kinds(api_client: Any) -> list[Kind]:
    from kubernetes import client

    from trainhub.backends.kubernetes.manifests import JOB_ID_LABEL

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)

    def workloads(namespace: str, **kwargs: Any) -> Any:
        return custom.list_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads", **kwargs
        )

    return [
        Kind("jobs", batch.list_namespaced_job, JOB_ID_LABEL),
        Kind("pods", core.list_namespaced_pod, JOB_ID_LABEL),
        Kind("workloads", workloads),
        Kind("events", core.list_namespaced_event),
    ]


def cluster_queue_kind(api_client: Any, name: str) -> Kind:
    """The team's ClusterQueue, kept in the cache of the team's namespace (it is cluster-scoped:
    a field selector picks it), so a page of queued jobs says why they wait without asking the
    API server."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)

    def one(namespace: str, **kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(
            KUEUE_GROUP,
            KUEUE_VERSION,
            "clusterqueues",
            field_selector=f"metadata.name={name}",
            **kwargs,
        )

    return Kind("clusterqueues", one, optional=True)


def _slim(obj: Obj) -> Obj:
    # managedFields are often half an object's size and nothing here reads them.
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def _lines(response: Any) -> Iterator[str]:
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line.decode()


class Informer:
    """One kind in one namespace: its objects by uid, current as of ``version``; its
    ``generation`` counts the changes it has seen (what is derived from it is current while
    that stays the same)."""

    def __init__(
        self,
        kind: Kind,
        namespace: str,
        on_change: OnChange,
        stop: threading.Event,
        counters: Callable[[str, str], None] = lambda kind, what: None,
    ):
        self.kind, self.namespace = kind, namespace
        self.on_change, self.stop, self.count = on_change, stop, counters
        self.objects: dict[str, Obj] = {}
        self.version: str | None = None
        self.generation = 0
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(
            target=self._run, name=f"watch-{kind.name}-{namespace}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def items(self) -> list[Obj]:
        with self.lock:
            return list(self.objects.values())

    def _run(self) -> None:
        delay = RETRY_SECONDS[0]
        while not self.stop.is_set():
            try:
                if self.version is None:
                    self._relist()
                self._watch()
                delay = RETRY_SECONDS[0]
            except Gone:
                self.count(self.kind.name, "gone")
                self.version = None
            except Exception as error:  # the API server restarting, a stream cut short
                if self.kind.optional and getattr(error, "status", None) in (401, 403, 404):
                    log.info("not keeping %s: %s", self.kind.name, error)
                    return  # never synced: its reads go to the API server
                self.count(self.kind.name, "error")
                log.info("watch of %s in %s: %s; again", self.kind.name, self.namespace, error)
                self.stop.wait(delay)
                delay = min(delay * 2, RETRY_SECONDS[1])

    def _relist(self) -> None:
        response = self.kind.list_call(
            self.namespace,
            label_selector=self.kind.selector or "",
            _preload_content=False,
            _request_timeout=(5, 60),
        )
        listed = json.loads(response.data)
        fresh = {o["metadata"]["uid"]: _slim(o) for o in listed.get("items") or []}
        with self.lock:
            changed = fresh != self.objects
            self.objects = fresh
            self.generation += changed
            self.version = listed["metadata"]["resourceVersion"]
        self.synced.set()
        if changed:
            self.on_change(self.namespace, self.kind.name)

    def _watch(self) -> None:
        response = self.kind.list_call(
            self.namespace,
            label_selector=self.kind.selector or "",
            watch=True,
            resource_version=self.version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS,
            _preload_content=False,
            _request_timeout=(5, WATCH_SECONDS + 30),
        )
        try:
            for line in _lines(response):
                self._apply(json.loads(line))
                if self.stop.is_set():
                    return
        finally:
            response.release_conn()
        self.count(self.kind.name, "resumed")

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(obj.get("message"))
            raise RuntimeError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        version = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.version = version or self.version
            return
        uid = obj["metadata"]["uid"]
        with self.lock:
            if kind == "DELETED":
                self.objects.pop(uid, None)
            else:
                self.objects[uid] = _slim(obj)
            self.generation += 1
            self.version = version or self.version
        self.on_change(self.namespace, self.kind.name)


class ClusterCache:
    """Every kept kind in every team namespace."""

    def __init__(
        self,
        api_client: Any,
        namespaces: list[str],
        on_change: OnChange,
        counters: Callable[[str, str], None] = lambda kind, what: None,
        cluster_queues: Mapping[str, str] | None = None,  # namespace -> its team's, to keep
    ):
        self.stop = threading.Event()
        queues = cluster_queues or {}
        self.informers = {
            (ns, kind.name): Informer(kind, ns, on_change, self.stop, counters)
            for ns in namespaces
            for kind in kinds(api_client)
            + ([cluster_queue_kind(api_client, queues[ns])] if ns in queues else [])
        }
        self._derived: dict[tuple[str, Hashable], tuple[tuple[int, ...], Any]] = {}
        self._derived_lock = threading.Lock()

    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for informer in self._required():
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    @property
    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self._required())

    def _required(self) -> list[Informer]:
        return [i for i in self.informers.values() if not i.kind.optional]

    def close(self) -> None:
        self.stop.set()

    def size(self) -> int:
        return sum(len(i.objects) for i in self.informers.values())

    def items(self, namespace: str, kind: str, selector: str | None = None) -> list[Obj]:
        wanted = matcher(selector)
        return [
            o
            for o in self.informers[(namespace, kind)].items()
            if wanted(o["metadata"].get("labels") or {})
        ]

    def lists(self, namespace: str) -> CachedLists:
        return CachedLists(self, namespace)

    def derived(
        self, namespace: str, kinds: tuple[str, ...], key: Hashable, build: Callable[[], T]
    ) -> T:
        """``build()``'s value, built again only once one of the namespace's ``kinds`` has
        changed since (client-go's indexers: a read costs what it returns, not the namespace's
        size). The generations are taken before building, so a change during it builds again
        next time."""
        generations = tuple(self.informers[(namespace, k)].generation for k in kinds)
        with self._derived_lock:
            held = self._derived.get((namespace, key))
        if held is not None and held[0] == generations:
            return held[1]  # type: ignore[no-any-return]
        value = build()
        with self._derived_lock:
            if len(self._derived) >= MAX_DERIVED:
                self._derived.clear()  # keys are few (one per user listing); never unbounded
            self._derived[(namespace, key)] = (generations, value)
        return value


# The list requests a reconcile makes, by the client method's name -> the kind that answers.
_ANSWERS = {
    "list_namespaced_job": "jobs",
    "list_namespaced_pod": "pods",
    "list_namespaced_event": "events",
}


def _not_older(held: str | None, wanted: str | None) -> bool:
    """``held`` is ``wanted`` or later. Resource versions are opaque, but the API server's are
    etcd revisions, which increase: compared as numbers where both are."""
    if wanted is None:
        return True
    if not (held or "").isdigit() or not wanted.isdigit():
        return held == wanted
    return int(held) >= int(wanted)  # type: ignore[arg-type]


@dataclass(frozen=True)
class CachedLists:
    """Answers a backend's list requests in one namespace from the cache; None for a request
    it does not keep (that one goes to the API server)."""

    cache: ClusterCache
    namespace: str

    def answer(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Obj] | None:
        if kwargs.get("field_selector"):
            return None
        name = getattr(call, "__name__", "")
        kind = _ANSWERS.get(name)
        if name == "list_namespaced_custom_object" and args[1:4] == (
            KUEUE_VERSION,
            self.namespace,
            "workloads",
        ):
            kind = "workloads"
        elif kind is not None and args[:1] != (self.namespace,):
            return None
        informer = self.cache.informers.get((self.namespace, kind or ""))
        if informer is None:
            return None
        selector = kwargs.get("label_selector") or ""
        if informer.kind.selector and informer.kind.selector not in _requirements(selector):
            return None  # asks for objects the cache does not keep
        return self.cache.items(self.namespace, kind, kwargs.get("label_selector"))

    def derived(self, kinds: tuple[str, ...], key: Hashable, build: Callable[[], T]) -> T:
        return self.cache.derived(self.namespace, kinds, key, build)

    def named(self, kind: str, name: str) -> Obj | None:
        """The object ``name`` of ``kind`` (None: there is none); LookupError where the cache
        does not keep that kind, or has not listed it yet."""
        informer = self.cache.informers.get((self.namespace, kind))
        if informer is None or not informer.synced.is_set():
            raise LookupError(kind)
        return next((o for o in informer.items() if o["metadata"].get("name") == name), None)

    def saw(
        self,
        kind: str,
        name: str,
        *,
        uid: str | None = None,
        gone: bool = False,
        version: str | None = None,
        timeout: float = 2.0,
    ) -> bool:
        """Wait until the cache holds ``name`` (of ``uid``; at ``version`` or later), or no
        longer holds it (``gone``): whoever just wrote it reads its own write."""
        informer = self.cache.informers[(self.namespace, kind)]
        deadline = time.monotonic() + timeout
        while True:
            held = [
                o
                for o in informer.items()
                if o["metadata"]["name"] == name
                and (uid is None or o["metadata"]["uid"] == uid)
                and _not_older(o["metadata"].get("resourceVersion"), version)
            ]
            if gone != bool(held):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
