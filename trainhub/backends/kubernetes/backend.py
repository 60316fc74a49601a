"""Jobs as Kueue-queued Indexed Jobs in a team's namespace.

Kubernetes and Kueue decide when and where; this backend renders the objects, submits them,
reads their state back and explains it. The job directory on the team's shared volume stays
the durable record: state changes, Kubernetes events and the final verdict are written there,
so a job reads the same after its Job object is gone.

The backend is built of parts, one module each, each on the ones before it: ``cluster`` (the
API requests: each object kind listed once per call), ``records`` (a job's record from its
objects or its directory), ``submit`` (pool, image, quota, the Job and its Service),
``observe`` (the reads), ``act`` (cancel, suspend, resume, and reconcile, which carries out
:mod:`trainhub.lifecycle`'s rules). This module gives them the team's settings.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.alerts.announce import Announcer
from trainhub.backends.base import Backend, Feature
from trainhub.backends.kubernetes.act import Acting
from trainhub.backends.kubernetes.cluster import REQUEST_TIMEOUT
from trainhub.backends.kubernetes.manifests import RUN_AS
from trainhub.datasets.catalog import Catalog, Readable
from trainhub.jobs.ownership import RunAs
from trainhub.jobs.shares import share_text, share_words
from trainhub.outputs.retention import Retention
from trainhub.registry.policy import ModelPolicy
from trainhub.teams import TeamDataset, Teams, load_teams

if TYPE_CHECKING:
    from trainhub.backends.kubernetes.cache import CachedLists, ClusterCache

log = logging.getLogger(__name__)


class KubernetesBackend(Acting, Backend):
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
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
        lists: CachedLists | None = None,
        announcer: Announcer | None = None,
        run_as: RunAs = RUN_AS,
    ):
        """``lists`` answers list requests from a watch-fed cache (the controller's);
        ``announcer`` queues a job's alerts (default: a session announces its user's own);
        ``run_as``: the ids of the member this session submits as."""
        from kubernetes import client

        self.teams = teams
        self.team = teams.team(team)
        self.namespace = namespace or self.team.namespace
        self.queue = queue or self.team.local_queue
        self.jobs_root = Path(jobs_root or Path(self.team.shared_volume.mount_path) / "jobs")
        self.api = api_client or _default_client()
        self.request_timeout = request_timeout
        self.lists, self.announcer, self.run_as = lists, announcer, run_as
        self._user_ids, self._user_ids_read, self._user_ids_lock = (
            {},
            float("-inf"),
            threading.Lock(),
        )
        self._cache: ClusterCache | None = None  # the one watch_reads() started
        # Where the cluster's controller runs, it reconciles: front doors submit and read.
        self.controlled = teams.controller is not None and lists is None
        # What reconcile last recorded of each Job: uid -> the resource versions it saw.
        self._reconciled: dict[str, tuple[Any, ...]] = {}
        self._records = {}
        self._admitted = {}
        self._waits = {}
        self._sharing = {}
        self._gone_read = {}
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
        TRAINHUB_JOBS_ROOT, TRAINHUB_K8S_REQUEST_TIMEOUT (seconds an API request may take),
        TRAINHUB_RUN_AS (the member's ``user:group`` ids, where they have their own)."""
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
            run_as=RunAs.parse(env["TRAINHUB_RUN_AS"]) if env.get("TRAINHUB_RUN_AS") else RUN_AS,
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
            "teams": [
                {
                    "name": self.team.name,
                    "queues": list(self.team.quota),
                    "gpu_shares": self.gpu_shares(),
                }
            ],
        }

    def gpu_shares(self) -> list[dict[str, str]]:
        """The shares of a GPU a job of the team may ask for: one per pool of the team that
        shares its GPUs, with the pool (the queue such a job goes to) and its words."""
        out = []
        for name in self.team.quota:
            sharing = self.teams.pool(name).sharing
            if sharing is not None:
                words = share_words(sharing.share, sharing.strategy)
                out.append({"share": share_text(sharing.share), "queue": name, "label": words})
        return out

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

    def retention(self, team: str | None) -> Retention | None:
        """The teams file's policy of ``team`` (this backend's own team when unnamed)."""
        known = {t.name: t for t in self.teams.teams}
        return known.get(team or self.team.name, self.team).retention

    def team_name(self) -> str | None:
        return self.team.name

    def model_policy(self) -> ModelPolicy:
        """The teams file's ``models:`` of this backend's team."""
        return self.team.models

    def watch_reads(self) -> None:
        """Serve this backend's lists from a watch-fed cache of its namespace, once its first
        lists are in (KubeSpawner's reflector, for a long-running server): a page of jobs then
        reads no object from the API server, however many the namespace holds. Until then,
        and in processes that never call it (the CLI), every list asks the API server. Only
        where the cluster's controller runs: elsewhere a session's reconcile reads the lists
        it writes after, at once."""
        from trainhub.backends.kubernetes.cache import ClusterCache

        if not self.controlled or self._cache is not None:
            return

        cache = ClusterCache(
            self.api,
            [self.namespace],
            on_change=lambda namespace, kind: None,
            cluster_queues={self.namespace: self.team.cluster_queue},
        )
        cache.start()
        if not cache.wait_synced(60):
            cache.close()
            log.warning(
                "trainhub: no watch-fed cache of %s: its lists did not sync", self.namespace
            )
            return
        self._cache, self.lists = cache, cache.lists(self.namespace)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        self.api.close()


def _default_client() -> Any:
    from kubernetes import config

    try:
        config.load_incluster_config()
        from kubernetes import client

        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()
