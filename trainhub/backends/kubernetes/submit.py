"""Submitting a job to the cluster: the pool and image the team's policy allows, whether it can
ever fit the team's quota and the pool's nodes (:mod:`trainhub.jobs.placement`), and its Job and
headless Service, made where the submit walk placed it or, for a later attempt, where it is
placed when that attempt starts.
"""

from __future__ import annotations

from pathlib import Path

from trainhub.backends.base import Placement
from trainhub.backends.kubernetes import manifests, nodes
from trainhub.backends.kubernetes.owners import Owners
from trainhub.backends.kubernetes.records import seq_of
from trainhub.checkpoint.layout import CheckpointInfo
from trainhub.errors import OverQuota
from trainhub.imagepolicy import Allowed, choose_image
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.ownership import RunAs
from trainhub.jobs.shares import share_text
from trainhub.jobs.spec import SpecError, field_error
from trainhub.jobs.states import JobState
from trainhub.lifecycle.resume import resume_source
from trainhub.teams import Pool


class Submitting(Owners):
    def pool_for(self, record: JobRecord) -> str:
        """The pool named by the spec's queue, else the team's first pool whose nodes
        hold a worker."""
        per_worker = record.spec.resources.gpus_per_worker
        share = record.spec.resources.gpu_share
        if record.spec.queue and record.spec.queue in self.team.quota:
            return self._shares_fit(self.teams.pool(record.spec.queue), share).name
        for name in self.team.quota:
            pool = self.teams.pool(name)
            if share is not None or pool.sharing is not None:
                # A shared pool takes only jobs that ask for its share, and nothing else.
                if pool.sharing is not None and share == share_text(pool.sharing.share):
                    return pool.name
                continue
            if pool.gpus_per_node >= per_worker and (per_worker or not pool.gpu_only):
                return pool.name
        if share is not None:
            raise field_error(
                "resources.gpu_share", f"no pool of team {self.team.name} offers {share} of a GPU"
            )
        raise OverQuota(
            f"no pool of team {self.team.name} has nodes with {per_worker} GPUs for one worker"
        )

    def _shares_fit(self, pool: Pool, share: str | None) -> Pool:
        offered = None if pool.sharing is None else share_text(pool.sharing.share)
        if share != offered:
            raise field_error(
                "resources.gpu_share",
                f"pool {pool.name} takes only jobs asking for "
                f"{offered + ' of a GPU' if offered else 'whole GPUs'}, "
                f"not {share + ' of a GPU' if share else 'whole GPUs'}",
            )
        return pool

    def check_image(self, wanted: str | None) -> Allowed:
        """The team's policy (:mod:`trainhub.imagepolicy`); no image asked: its first one."""
        offered = [self.teams.image(name) for name in self.team.images]
        return choose_image(
            wanted, team=self.team.name, offered=offered, policy=self.team.image_policy
        )

    def check_fits(self, record: JobRecord, placement: Placement) -> None:
        pool = self._pool(placement)
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
        if problem := nodes.pool_refusal(record, pool, self._nodes(nodes.selector(pool))):
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

    def submit(self, record: JobRecord, placement: Placement) -> JobRecord:
        record = record.model_copy(
            update={
                "team": self.team.name,
                "queue": self.queue,
                "seq": seq_of(record.created_at),
            }
        )
        self._create(record, self._pool(placement), placement.image, placement.resume_from)
        jobdir = JobDir(record.job_dir)
        jobdir.emit(
            "state",
            state=JobState.QUEUED.value,
            namespace=self.namespace,
            queue=self.queue,
            pool=placement.pool,
            image=placement.image,
        )
        return record

    def attempt_placement(self, record: JobRecord) -> Placement:
        """A later attempt's placement (a retry's, a resume's), decided as it starts with the
        submit walk's rules: the team's pools and image policy as they are now, the job's
        latest checkpoint."""
        source = self._resume_source(record)
        return Placement(
            image=self.check_image(record.spec.image).reference,
            pool=self.pool_for(record),
            resume_from=str(source.path) if source is not None else None,
        )

    def _pool(self, placement: Placement) -> Pool:
        if placement.pool is None:
            raise ValueError("a job on the cluster is placed in one of its team's pools")
        return self.teams.pool(placement.pool)

    def _create(
        self,
        record: JobRecord,
        pool: Pool,
        image: str,
        resume_from: str | None,
        run_as: RunAs | None = None,
    ) -> None:
        """The attempt's Job, and its headless Service (kept from an earlier attempt when
        there is one), owned by the Job; its pods run as ``run_as``, else as the submitter."""
        from kubernetes.client import ApiException

        job = manifests.job_manifest(
            record,
            team=self.team,
            pool=pool,
            image=image,
            resume_from=resume_from,
            datasets=self.readable_datasets(),
            run_as=run_as or self.submitter(record.user),
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
        self._cache_saw("jobs", record.id, uid=created["metadata"]["uid"])

    def _resume_source(self, record: JobRecord) -> CheckpointInfo | None:
        """The checkpoint the record's attempt starts from (:mod:`trainhub.lifecycle.resume`);
        the job it asked to start from lies below the team's jobs root."""
        return resume_source(record.job_dir, record.spec.fork_from, self.jobs_root.joinpath)
