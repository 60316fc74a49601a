"""Making a job, :meth:`JobService.submit`'s work and that of the verbs built on it (validate,
resubmit, resume): every check before anything is made (spec, paths, datasets by name, image,
fit, resume source), the job directory (bundle, spec, the ``submitted`` event), the hand-off to
the backend, then the lineage. A refused or abandoned submit leaves nothing behind.

The image, the pool and the checkpoint the job starts from are each decided once here, in a
:class:`~trainhub.backends.base.Placement` the backend acts on.

Functions of the service, reading its backend and its settings (workspace, ``%pip``, the
workspace's size cap) as they are when called.
"""

from __future__ import annotations

import getpass
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub import settings
from trainhub.backends.base import Backend, Placement
from trainhub.backends.capabilities import Pools
from trainhub.checkpoint.layout import list_checkpoints
from trainhub.datasets.catalog import Readable
from trainhub.errors import Conflict, NotFound
from trainhub.jobs import sharing, views
from trainhub.jobs.datasets import check_dataset_paths
from trainhub.jobs.directory import JobDir, write_json_atomic
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import DescribeJob, JobRecord
from trainhub.jobs.naming import successor_name
from trainhub.jobs.spec import JobSpec, field_error, parse_spec
from trainhub.jobs.states import JobState
from trainhub.lifecycle.resume import fork_source

if TYPE_CHECKING:
    from trainhub.bundle.schema import BundleManifest
    from trainhub.bundle.snapshot import Snapshot
    from trainhub.jobs.service import JobService


class SubmitAbandoned(Conflict):
    """The submit was given up (its client went away, or its time ran out) before the job was
    handed to the backend; no job was made."""


def _check_wanted(abandoned: threading.Event | None) -> None:
    if abandoned is not None and abandoned.is_set():
        raise SubmitAbandoned(
            "The submit was given up before the job was created; no job was made."
        )


def submit(
    service: JobService,
    spec: JobSpec | dict[str, Any],
    *,
    user: str | None,
    resubmitted_from: str | None,
    abandoned: threading.Event | None,
    source: Snapshot | None,
) -> DescribeJob:
    """Check, prepare the job directory, hand the job to the backend, record its lineage."""
    from trainhub.bundle.compile import compile_bundle
    from trainhub.jobs.lineage import collect_lineage

    _check_wanted(abandoned)
    spec = spec if isinstance(spec, JobSpec) else parse_spec(spec)
    user = user or getpass.getuser()
    backend = service.backend
    workspace = _workspace(service, source)
    spec, named = _check_paths(service, spec, workspace)
    image = backend.check_image(spec.image).reference  # refused before anything is made
    start = _fork_start(service, spec, user)  # the checkpoint it starts from
    job_id = f"{spec.name}-{secrets.token_hex(4)}"
    jobdir = JobDir(service.jobs_root / job_id).create()
    record = _new_record(spec, user, job_id, str(jobdir.root), resubmitted_from)
    try:
        placement = _place(backend, record, image, start)
        manifest = compile_bundle(
            spec,
            workspace,
            jobdir.bundle,
            pip_refused=service.pip_refused,
            max_workspace_bytes=service.max_workspace_bytes,
            frozen=source is not None,
        )
        write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": job_id, "user": user})
        jobdir.emit(
            "submitted",
            user=user,
            created_at=record.created_at,
            host=socket.gethostname(),
            content_hash=manifest.content_hash,
        )
        # The last moment to give up: after this the backend has the job.
        _check_wanted(abandoned)
        record = backend.submit(record, placement)
    except BaseException:
        # Refused or broken: leave nothing half-made behind.
        shutil.rmtree(jobdir.root, ignore_errors=True)
        raise
    # After the hand-off, so that collecting it does not delay the start.
    lineage = collect_lineage(
        spec,
        workspace,
        manifest,
        user=user,
        # The submitter's own (not the team volume's: a teammate could write it for them).
        cache_dir=settings.home() / ".cache",
        dataset_views={n: (r.view_path, r.entry.content_hash) for n, r in named.items()},
        ran_image=backend.ran_image(),
        workspace_facts=source.lineage if source is not None else None,
    )
    write_json_atomic(jobdir.lineage, lineage)
    return views.describe(backend, backend.get(job_id) or record)


def validate(
    service: JobService,
    spec: JobSpec | dict[str, Any],
    *,
    user: str | None,
    bundle: bool = True,
    source: Snapshot | None = None,
) -> list[str]:
    """Every check of :func:`submit`, the bundle compiled into a directory thrown away (but
    without ``bundle``: a pipeline's quick check of many steps, whose notebooks' own checks
    come when each step is submitted); ``source``: checked against that frozen workspace."""
    spec = spec if isinstance(spec, JobSpec) else parse_spec(spec)
    user = user or getpass.getuser()
    workspace = _workspace(service, source)
    spec, _ = _check_paths(service, spec, workspace)
    image = service.backend.check_image(spec.image).reference
    start = _fork_start(service, spec, user)
    record = _new_record(spec, user, f"{spec.name}-validate", "", None)
    _place(service.backend, record, image, start)
    if not bundle:
        return []
    return list(trial_manifest(service, spec, workspace, frozen=source is not None).warnings)


def trial_manifest(
    service: JobService, spec: JobSpec, workspace: Path, *, frozen: bool = False
) -> BundleManifest:
    """The manifest a submit of ``spec`` would compile, its bundle written into a folder that
    is removed at once (a check, a pipeline step's cache key)."""
    from trainhub.bundle.compile import compile_bundle

    with tempfile.TemporaryDirectory(prefix="trainhub-trial-bundle-") as tmp:
        return compile_bundle(
            spec,
            workspace,
            Path(tmp) / "bundle",
            pip_refused=service.pip_refused,
            max_workspace_bytes=service.max_workspace_bytes,
            frozen=frozen,
        )


def _new_record(
    spec: JobSpec, user: str, job_id: str, job_dir: str, resubmitted_from: str | None
) -> JobRecord:
    return JobRecord.of_spec(
        spec,
        id=job_id,
        user=user,
        state=JobState.QUEUED,
        job_dir=job_dir,
        created_at=time.time(),
        resubmitted_from=resubmitted_from,
    )


def _workspace(service: JobService, source: Snapshot | None) -> Path:
    """Where a submit compiles from: a frozen workspace, else the service's own."""
    if source is not None:
        return source.root
    if service.workspace_root is None:
        raise Conflict(
            "This trainhub sees no workspace (the cluster's controller): it submits only "
            "a sweep's trials, from the workspace the sweep froze."
        )
    return service.workspace_root


def _check_paths(
    service: JobService, spec: JobSpec, workspace: Path
) -> tuple[JobSpec, dict[str, Readable]]:
    """The spec with its datasets by name resolved (a name the user's team may not read is
    refused naming those it may), and those datasets; every path checked."""
    path = (workspace / spec.source.path).resolve()
    if not path.is_relative_to(workspace):
        raise field_error("source.path", f"{spec.source.path} is outside the workspace")
    if not path.is_file():
        raise field_error("source.path", f"no such file: {spec.source.path}")
    spec, named = service.backend.dataset_catalog().resolve(spec)
    check_dataset_paths(spec.datasets, service.dataset_roots())
    return spec, named


def _fork_start(service: JobService, spec: JobSpec, user: str) -> str | None:
    """The checkpoint a fork starts from (:func:`~trainhub.lifecycle.resume.fork_source`) of a
    job ``user`` may read, refused when it has none; None for a job that forks nothing."""
    ref = spec.fork_from
    if ref is None:
        return None
    source = service.readable(ref.job_id, user)
    start = fork_source(source.job_dir, ref)
    if start is not None:
        return str(start.path)
    if not list_checkpoints(JobDir(source.job_dir).checkpoints):
        raise Conflict(f"Job {ref.job_id} has no checkpoint to fork from.")
    raise NotFound(f"Job {ref.job_id} has no checkpoint at step {ref.step}.")


def _place(backend: Backend, record: JobRecord, image: str, start: str | None) -> Placement:
    """The job's placement, its pool chosen here, refused where it could never run."""
    if record.spec.resources.gpu_share is not None and not isinstance(backend, Pools):
        raise field_error(
            "resources.gpu_share",
            "a share of a GPU is offered by a cluster's shared pool; here jobs get whole GPUs",
        )
    pool = backend.pool_for(record) if isinstance(backend, Pools) else None
    placement = Placement(image=image, pool=pool, resume_from=start)
    backend.check_fits(record, placement)
    return placement


def resubmit(
    service: JobService,
    job_id: str,
    *,
    user: str | None,
    overrides: dict[str, Any] | None,
    abandoned: threading.Event | None,
) -> DescribeJob:
    """The spec of ``job_id`` with ``overrides`` submitted as a new job, named apart from it."""
    user = user or getpass.getuser()
    old = service.readable(job_id, user)  # a teammate's shared job runs again as one's own
    if not sharing.is_owner(old, user):
        _check_teammate_source(service, old, overrides)
    data = old.spec.model_dump(mode="json")
    # A trial or a step run again is a job of its own, not one of the sweep's or the run's.
    data.pop("sweep", None)
    data.pop("pipeline", None)
    data.update(overrides or {})
    if data.get("name") == old.name:  # told apart from the job it runs again
        data["name"] = _successor_name(service.backend, old, user)
    return service.submit(data, user=user, resubmitted_from=job_id, abandoned=abandoned)


def _check_teammate_source(
    service: JobService, old: JobRecord, overrides: dict[str, Any] | None
) -> None:
    """A run again compiles the notebook from the workspace: a teammate's job runs the file
    of that path in one's own workspace (a clone of the team's repository), or is refused
    saying so before anything is made."""
    source = (overrides or {}).get("source")
    path = source.get("path") if isinstance(source, dict) else None
    path = path if isinstance(path, str) and path else old.spec.source.path
    if not (_workspace(service, None) / path).resolve().is_file():
        raise field_error(
            "source.path",
            f"{path} (of {old.user}'s job {old.id}) is not in your workspace: running a "
            "teammate's job again runs that file from your own workspace",
        )


def _successor_name(backend: Backend, old: JobRecord, user: str) -> str:
    """``name-2`` (the next number free among the user's jobs) for a job run again; the
    number of a job that was itself run again counts on (``train-2`` -> ``train-3``)."""
    numbered = old.resubmitted_from is not None
    base = re.sub(r"-\d+$", "", old.name) if numbered else old.name
    taken = backend.list_jobs(JobFilter(user=user, search=base), limit=500)
    return successor_name(old.name, (r.name for r in taken), numbered=numbered)
