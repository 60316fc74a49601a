"""Jobs as Kueue-queued Indexed Jobs in a team's namespace.

Kubernetes and Kueue decide when and where; this backend renders the objects, submits them,
reads their state back and explains it. The job directory on the team's shared volume stays
the durable record: state changes, Kubernetes events and the final verdict are written there,
so a job reads the same after its Job object is gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from trainhub import settings
from trainhub.backends.base import Backend, Feature
from trainhub.backends.kubernetes import manifests, status
from trainhub.backends.kubernetes.manifests import ANNOTATION, JOB_ID_LABEL, USER_LABEL, label_value
from trainhub.backends.kubernetes.render import KUEUE_API, TEAM_LABEL
from trainhub.checkpoint.layout import resume_checkpoint
from trainhub.datasets.catalog import Catalog, Readable
from trainhub.errors import BackendUnavailable, NotFound, OverQuota
from trainhub.jobs import confined
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.outcome.retry import count_retry
from trainhub.outcome.verdict import cancel_verdict
from trainhub.teams import Pool, Team, TeamDataset, Teams, load_teams
from trainhub.usage.compute import job_usage
from trainhub.usage.kueue import workload_times
from trainhub.usage.models import UsageBy, UsageGroup
from trainhub.usage.store import UsageStore

KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")
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
    ):
        from kubernetes import client

        self.teams = teams
        self.team: Team = teams.team(team)
        self.namespace = namespace or self.team.namespace
        self.queue = queue or self.team.local_queue
        self.jobs_root = Path(jobs_root or Path(self.team.shared_volume.mount_path) / "jobs")
        self.default_image = default_image or teams.image(self.team.images[0]).image
        self.api = api_client or _default_client()
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
        TRAINHUB_JOBS_ROOT."""
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
    def pool_for(self, record: JobRecord) -> Pool:
        """The pool named by the spec's queue, else the team's first pool whose nodes
        hold a worker."""
        per_worker = record.spec.resources.gpus_per_worker
        if record.spec.queue and record.spec.queue in self.team.quota:
            return self.teams.pool(record.spec.queue)
        for name in self.team.quota:
            pool = self.teams.pool(name)
            if pool.gpus_per_node >= per_worker:
                return pool
        raise OverQuota(
            f"no pool of team {self.team.name} has nodes with {per_worker} GPUs for one worker"
        )

    def image_for(self, record: JobRecord) -> str:
        wanted = record.spec.image
        if wanted is None:
            return self.default_image
        for name in self.team.images:
            image = self.teams.image(name)
            if wanted in (image.name, image.image):
                return image.image
        allowed = ", ".join(self.team.images)
        raise OverQuota(
            f"image {wanted!r} is not one of team {self.team.name}'s images ({allowed})"
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
        job = manifests.job_manifest(
            record,
            team=self.team,
            pool=pool,
            image=image,
            resume_from=self._resume_from(record),
            datasets=self.readable_datasets(),
        )
        job["metadata"]["namespace"] = self.namespace
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = self.queue
        service = manifests.service_manifest(record, self.team)
        service["metadata"]["namespace"] = self.namespace
        self.core.create_namespaced_service(self.namespace, service)  # type: ignore[arg-type]
        try:
            created = self.api.sanitize_for_serialization(
                self.batch.create_namespaced_job(self.namespace, job)
            )  # type: ignore[arg-type]
        except BaseException:
            self.core.delete_namespaced_service(record.id, self.namespace)
            raise
        owner = manifests.owned_by(service, created)["metadata"]["ownerReferences"]
        self.core.patch_namespaced_service(
            record.id, self.namespace, {"metadata": {"ownerReferences": owner}}
        )
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

    def _resume_from(self, record: JobRecord) -> str | None:
        """The checkpoint of an earlier job this one starts from, if it asked for one."""
        ref = record.spec.resume_from
        info = resume_checkpoint(self.jobs_root / ref.job_id, ref.step) if ref else None
        return str(info.path) if info is not None else None

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        from kubernetes.client import ApiException

        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        if record.state.terminal:
            return record
        JobDir(record.job_dir).emit("cancel_requested", reason=reason)
        try:
            self.batch.delete_namespaced_job(
                job_id, self.namespace, propagation_policy="Foreground"
            )
        except ApiException as e:
            if e.status != 404:
                raise
        verdict = cancel_verdict(reason, record.attempt)
        self._finish(record, JobState.CANCELLED, verdict)
        return record.model_copy(
            update={
                "state": JobState.CANCELLED,
                "verdict": verdict,
                "cancel_requested": True,
                "cancel_reason": reason,
                "finished_at": time.time(),
            }
        )

    # --- reads --------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord | None:
        from kubernetes.client import ApiException

        try:
            job = self.api.sanitize_for_serialization(
                self.batch.read_namespaced_job(job_id, self.namespace)
            )
        except ApiException as e:
            if e.status != 404:
                raise
            return self._from_jobdir(self.jobs_root / job_id)
        if job["metadata"].get("labels", {}).get(TEAM_LABEL) != self.team.name:
            return None
        return self._observe(job, sync_events=True)

    def list_jobs(
        self,
        *,
        user: str | None,
        states: Sequence[JobState] | None,
        limit: int,
        before_seq: int | None,
        sweep_id: str | None = None,
    ) -> list[JobRecord]:
        records = self._all(user)
        if sweep_id is not None:
            records = [r for r in records if r.sweep_id == sweep_id]
        if states:
            records = [r for r in records if r.state in states]
        if before_seq is not None:
            records = [r for r in records if (r.seq or 0) < before_seq]
        records.sort(key=lambda r: r.seq or 0, reverse=True)
        return records[:limit]

    def count(
        self, *, user: str | None, states: Sequence[JobState] | None, sweep_id: str | None = None
    ) -> int:
        return len(
            self.list_jobs(
                user=user, states=states, limit=1 << 30, before_seq=None, sweep_id=sweep_id
            )
        )

    def _all(self, user: str | None) -> list[JobRecord]:
        selector = f"{TEAM_LABEL}={self.team.name},{JOB_ID_LABEL}"
        if user is not None:
            selector += f",{USER_LABEL}={label_value(user)}"
        jobs = self.api.sanitize_for_serialization(
            self.batch.list_namespaced_job(self.namespace, label_selector=selector)
        ).get("items", [])
        # One job that swapped its files for links or FIFOs is left out of the list (asking
        # for it names the refusal); it never takes the list of every other job down with it.
        seen: set[str] = set()
        records = []
        for job in jobs:
            seen.add(job["metadata"]["name"])
            with _refusals_logged(job["metadata"]["name"]):
                record = self._observe(job)
                if user is None or record.user == user:
                    records.append(record)
        # Jobs whose objects are gone (cancelled, cleaned up) live on in their directories.
        if self.jobs_root.is_dir():
            for path in self.jobs_root.iterdir():
                if path.name in seen or not path.is_dir() or path.is_symlink():
                    continue
                with _refusals_logged(path.name):
                    rec = self._from_jobdir(path)
                    if rec is not None and (user is None or rec.user == user):
                        records.append(rec)
        return records

    def wait_reason(self, record: JobRecord) -> tuple[str | None, int | None]:
        if record.state != JobState.QUEUED:
            return None, None
        workload = self._workload(record.id)
        return status.wait_reason(workload, self._cluster_queue()), None

    def reconcile(self) -> None:
        for record in self._all(None):
            if not record.state.terminal:
                self.get(record.id)

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
        if team is not None and team != self.team.name:
            return []
        rows = [
            job_usage(r, threshold_pct=settings.waste_utilization_pct())
            for r in self._all(user)
            if r.state.terminal and (r.finished_at or 0) >= since
        ]
        conn = sqlite3.connect(":memory:")
        try:
            usage = UsageStore(lambda: conn)
            usage.record(rows)
            return usage.report(by, since, user=user, team=team)
        finally:
            conn.close()

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
            ).data  # type: ignore[attr-defined]
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
    def _pods(self, job_id: str) -> list[Obj]:
        pods = self.core.list_namespaced_pod(
            self.namespace, label_selector=f"{JOB_ID_LABEL}={job_id}"
        )
        return self.api.sanitize_for_serialization(pods).get("items", [])

    def _workload(self, job_id: str) -> Obj | None:
        from kubernetes.client import ApiException

        try:
            uid = self.batch.read_namespaced_job(job_id, self.namespace).metadata.uid  # type: ignore[union-attr]
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        listed: Obj = self.custom.list_namespaced_custom_object(  # type: ignore[assignment]
            KUEUE_GROUP, KUEUE_VERSION, self.namespace, "workloads"
        )
        items = listed["items"]
        return next(
            (
                w
                for w in items
                if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences", []))
            ),
            None,
        )

    def _cluster_queue(self) -> Obj | None:
        from kubernetes.client import ApiException

        name = self.team.cluster_queue
        try:
            return self.custom.get_cluster_custom_object(  # type: ignore[return-value]
                KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name
            )
        except ApiException:
            return None  # not readable for this account: the sentence goes without figures

    def _observe(self, job: Obj, *, sync_events: bool = False) -> JobRecord:
        """The record of a live Job; writes state changes (and optionally its events) to the
        job dir."""
        record = self._record_base(job)
        jobdir = JobDir(record.job_dir)
        pods = self._pods(record.id)
        state = status.job_state(job, pods)
        # As a job ends its Workload is read once more: Kueue's admission time goes into the
        # final state event, which outlives the Job (usage accounting reads it from there).
        finishing = state.terminal and (_last_state(jobdir) or {}).get("state") != state.value
        workload = (
            self._workload(record.id)
            if state in (JobState.QUEUED, JobState.STARTING) or sync_events or finishing
            else None
        )
        self._note_preemptions(record, jobdir, workload)
        verdict = None
        if state == JobState.FAILED:
            verdict = status.failure_verdict(
                job, pods, _rank_results(jobdir, record.attempt), attempt=record.attempt
            )
        times = _times(job, workload)
        last = _last_state(jobdir)
        if last is None or last.get("state") != state.value:
            if state.terminal:
                self._finish(record, state, verdict, times)
            else:
                jobdir.emit("state", state=state.value, attempt=record.attempt)
        if sync_events:
            self._sync_events(record, jobdir, job, pods, workload)
        # Kueue requeues a preempted job itself: each of its evictions is a preemption retry used.
        retries = record.retries
        if evictions := status.preemptions(workload):
            retries = count_retry(retries, FailureClass.PREEMPTED, used=evictions)
        return record.model_copy(
            update={"state": state, "verdict": verdict, **times, "retries": retries}
        )

    def _record_base(self, job: Obj) -> JobRecord:
        meta = job["metadata"]
        notes = {
            k[len(ANNOTATION) :]: v
            for k, v in (meta.get("annotations") or {}).items()
            if k.startswith(ANNOTATION)
        }
        jobdir = JobDir(notes["job-dir"])
        spec = _read_spec(jobdir)
        return JobRecord(
            seq=int(float(notes["created-at"]) * 1000),
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
        )

    def _finish(
        self,
        record: JobRecord,
        state: JobState,
        verdict: Verdict | None,
        times: dict[str, float | None] | None = None,
    ) -> None:
        fields: dict[str, Any] = {"state": state.value, "attempt": record.attempt}
        fields.update(
            {k: v for k, v in (times or {}).items() if k in _KEPT_TIMES and v is not None}
        )
        if verdict is not None:
            fields.update(reason=verdict.reason, verdict=verdict.model_dump(mode="json"))
        JobDir(record.job_dir).emit("state", **fields)

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

    def _sync_events(
        self, record: JobRecord, jobdir: JobDir, job: Obj, pods: list[Obj], workload: Obj | None
    ) -> None:
        """Append the Kubernetes events of the Job, its pods and its Workload not yet recorded."""
        uids = {job["metadata"]["uid"], *(p["metadata"]["uid"] for p in pods)}
        if workload:
            uids.add(workload["metadata"]["uid"])
        seen = {
            (e.get("uid"), e.get("count"))
            for e in jobdir.iter_events()
            if e.get("type") == "k8s_event"
        }
        events = self.api.sanitize_for_serialization(
            self.core.list_namespaced_event(self.namespace)
        ).get("items", [])
        events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        for event in events:
            if (event.get("involvedObject") or {}).get("uid") not in uids:
                continue
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
