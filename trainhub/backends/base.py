"""The interface every job backend implements (what a backend may do besides is one of the
capabilities of :mod:`trainhub.backends.capabilities`).

A backend decides *when and where* a job runs; the job directory records *what happened*.
The service prepares the job directory (spec, bundle, lineage) and decides the job's
:class:`Placement` before calling ``submit``.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from trainhub.datasets.catalog import Catalog
from trainhub.imagepolicy import Allowed
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.outputs.retention import Retention
from trainhub.registry.policy import UNPROTECTED, ModelPolicy
from trainhub.usage.models import UsageBy, UsageGroup, UsageScope
from trainhub.usage.panel import PoolQuota
from trainhub.usage.store import UsageStore


class Feature(StrEnum):
    """What the UI is told a backend offers (the REST config document's ``features``), so it
    offers only that. What code calls of a backend that not every backend has is a
    capability (:mod:`trainhub.backends.capabilities`)."""

    MULTI_NODE = "multi_node"
    GPUS = "gpus"
    PRIORITY = "priority"
    QUEUES = "queues"  # team queues with quotas (Kueue)
    PREEMPTION = "preemption"
    PIP_INSTALL = "pip_install"
    DATASETS = "datasets"
    IMAGES = "images"  # the image really selects the environment (containers)
    TEAM_SHARING = "team_sharing"  # teammates' jobs are at hand (a team's namespace and volume)
    WORKER_RESOURCES = "worker_resources"  # CPU and memory per worker are requested, and held


@dataclass(frozen=True)
class Placement:
    """What the submit walk (:mod:`trainhub.jobs.submission`) decided of a new job, each once,
    for :meth:`Backend.submit` to act on rather than decide again."""

    image: str  # the reference the image policy allowed ("" where none was asked, locally)
    pool: str | None  # the pool it runs in (capabilities.Pools); None where there are none
    resume_from: str | None  # the checkpoint its first attempt starts from (a fork's)


class Backend(ABC):
    name: ClassVar[str]
    features: ClassVar[frozenset[Feature]]
    jobs_root: Path  # where this backend's job directories live
    # True where a controller of the cluster's reconciles the jobs (trainhub.controller): the
    # front doors then only submit and read.
    controlled: bool = False

    @classmethod
    @abstractmethod
    def from_settings(cls, home: Path, **kwargs: Any) -> Backend:
        """The backend as configured for this environment (the CLI and the server agree)."""

    @abstractmethod
    def submit(self, record: JobRecord, placement: Placement) -> JobRecord:
        """Queue a job whose directory is ready where ``placement`` says; returns it as stored
        (usually QUEUED)."""

    @abstractmethod
    def get(self, job_id: str) -> JobRecord | None: ...

    @abstractmethod
    def list_jobs(
        self, wanted: JobFilter, *, limit: int, before_seq: int | None = None
    ) -> list[JobRecord]:
        """The jobs ``wanted`` holds, newest first: at most ``limit`` (all for -1), submitted
        before ``before_seq`` when given (the next page's)."""

    @abstractmethod
    def count(self, wanted: JobFilter) -> int:
        """How many jobs ``wanted`` holds."""

    def edit(
        self,
        job_id: str,
        *,
        tags: list[str] | None,
        note: str | None,
        shared: str | None = None,
    ) -> JobRecord:
        """Change a job's tags, note and sharing (None: unchanged); returns the job as changed.
        Kept by default in its job directory (``edits.json``), which outlives the workload; a
        backend with a store of its own keeps tags and note there."""
        from trainhub.errors import NotFound
        from trainhub.jobs.directory import JobDir

        record = self.get(job_id)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        changed = record.model_copy(
            update={
                "tags": record.tags if tags is None else tags,
                "note": record.note if note is None else note,
                "shared": record.shared if shared is None else shared,
            }
        )
        JobDir(record.job_dir).write_edits(changed.tags, changed.note, changed.shared)
        return changed

    def team_name(self) -> str | None:
        """The team whose jobs this backend reads (the session's, on a cluster); None when it
        keeps one user's jobs."""
        return None

    @abstractmethod
    def cancel(self, job_id: str, reason: str) -> JobRecord:
        """Ask the job to stop; returns at once. Queued jobs are cancelled on the spot."""

    @abstractmethod
    def suspend(self, job_id: str, reason: str) -> JobRecord:
        """Ask the job's ranks to save and stop, give its resources back; state ``suspended``."""

    @abstractmethod
    def resume(self, job_id: str) -> JobRecord:
        """Queue a suspended job again (same id, next attempt) from its latest checkpoint."""

    @abstractmethod
    def wait_reason(self, record: JobRecord) -> tuple[str | None, int | None]:
        """For a queued job: a sentence saying why it waits, and how many jobs are ahead."""

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """A scope whose reads (a page of the job list, its total, its wait reasons) the
        backend may answer from one look at its state; by default each read looks afresh."""
        return contextlib.nullcontext()

    def wait_reasons(
        self, records: Sequence[JobRecord]
    ) -> dict[str, tuple[str | None, int | None]]:
        """:meth:`wait_reason` for the queued ones among ``records`` (a page of the job list)."""
        return {r.id: self.wait_reason(r) for r in records if r.state == JobState.QUEUED}

    def dataset_catalog(self) -> Catalog:
        """The datasets this backend's user may ask for by name."""
        return Catalog()

    def check_image(self, wanted: str | None) -> Allowed:
        """The image the admin's policy allows for ``wanted`` (None: the default one), else
        :class:`trainhub.errors.NotAllowed` with a sentence; by default no policy."""
        return Allowed(wanted or "", None, "no policy")

    def ran_image(self) -> dict[str, Any] | None:
        """What the job's ranks run in, as far as the submitting side knows it (lineage's
        ``ran_image``); None when the workload reports it later (a cluster's pods)."""
        return None

    def retention(self, team: str | None) -> Retention | None:
        """The retention policy of ``team``'s job outputs (None: keep everything)."""
        return None

    def model_policy(self) -> ModelPolicy:
        """Who may move which alias of the team's model registry (none protected by default)."""
        return UNPROTECTED

    def catalog(self) -> dict[str, list[dict[str, Any]]]:
        """What the submit dialog may offer: ``{"images": [...], "teams": [...]}``."""
        return {"images": [], "teams": []}

    @abstractmethod
    def check_fits(self, record: JobRecord, placement: Placement) -> None:
        """Raise :class:`trainhub.errors.OverQuota` (or a :class:`~trainhub.jobs.spec.SpecError`
        naming the field) when the job could never run where ``placement`` puts it."""

    def live_log(
        self, job_id: str, rank: int, offset: int, length: int
    ) -> tuple[bytes, int] | None:
        """What the process of ``rank`` printed before it opened its own log in the job directory
        (``logs/rank-<r>.log``), read from the running workload: ``(bytes, next offset)`` in
        that output, or None when the backend has nothing live to show (the default)."""
        return None

    def usage(
        self,
        by: UsageBy,
        since: float,
        *,
        user: str | None = None,
        team: str | None = None,
        recompute: bool = False,
    ) -> list[UsageGroup]:
        """Usage of the jobs that ended since ``since``, grouped (only ``user``'s, only
        ``team``'s when given); ``recompute`` derives every ended job's row again."""
        with self.usage_rows(UsageScope(since, user, team), recompute=recompute) as rows:
            return rows.report(by, since, user=user, team=team)

    @abstractmethod
    def usage_rows(
        self, scope: UsageScope, *, recompute: bool = False
    ) -> contextlib.AbstractContextManager[UsageStore]:
        """The usage rows of the jobs in ``scope`` (at least those: a store may hold more, its
        queries take the scope again), for the report and the Usage panel's questions;
        ``recompute``: kept rows are derived again."""

    def quotas(self) -> tuple[list[PoolQuota], str]:
        """The team's quota per pool now, and where it comes from (none by default)."""
        return [], ""

    def reconcile(self) -> None:  # noqa: B027 - optional hook
        """Bring stored state in line with reality (dead processes, vanished pods)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
