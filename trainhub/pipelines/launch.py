"""A claimed step's start, the facts it needs: the paths of its inputs (the outputs of the
steps before it), its cache key from what a submit of it would record
(trainhub.pipelines.cache), and an earlier job whose outputs stand for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from trainhub import outputs
from trainhub.errors import NotFound
from trainhub.jobs.lineage import dataset_fingerprint
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import JobState
from trainhub.jobs.submission import trial_manifest
from trainhub.pipelines.cache import cache_key
from trainhub.pipelines.graph import producer
from trainhub.pipelines.records import RunRecord

if TYPE_CHECKING:
    from trainhub.backends.base import Backend
    from trainhub.bundle.snapshot import Snapshot
    from trainhub.jobs.service import JobService


def inputs_of(backend: Backend, run: RunRecord, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each input's path (the producing job's outputs folder) and ``job/output`` (what the
    cache key says of it); a declared output its step did not write is refused."""
    paths: dict[str, str] = {}
    produced: dict[str, str] = {}
    for input_name, ref in run.pipeline.steps[name].inputs.items():
        found = producer(ref)
        assert found is not None  # checked before the run started
        step, output = found
        attempt = run.steps[step]
        job_id = attempt.reused_from or attempt.job_id
        job = backend.get(job_id) if job_id else None
        if job is None:
            raise NotFound(f"input {input_name}: the job of step {step} is gone")
        path = Path(job.job_dir) / outputs.FOLDER / output
        if not path.exists():
            raise NotFound(
                f"input {input_name}: step {step} (job {job.id}) did not write its output "
                f"{output!r} (trainhub.outputs.path() / {output!r})"
            )
        paths[input_name] = str(path)
        produced[input_name] = f"{job.id}/{output}"
    return paths, produced


def step_key(
    service: JobService,
    spec: JobSpec,
    source: Snapshot | None,
    produced_by: Mapping[str, str],
    declared: list[str],
) -> str:
    """The step's cache key (trainhub.pipelines.cache), from the facts a submit of
    ``spec`` would record: its bundle's content hash, image, datasets' fingerprints."""
    workspace = source.root if source is not None else service.workspace_root
    assert workspace is not None
    manifest = trial_manifest(service, spec, workspace, frozen=source is not None)
    resolved, named = service.backend.dataset_catalog().resolve(spec)
    fingerprints = [
        dataset_fingerprint(
            d,
            view_path=named[d.name].view_path if d.name in named else None,
            with_hash=bool(named[d.name].entry.content_hash) if d.name in named else False,
        )
        for d in resolved.datasets
        if d.name not in produced_by  # an input is known by its producer, not its bytes
    ]
    image = {
        "reference": service.backend.check_image(spec.image).reference,
        "ran": service.backend.ran_image(),
    }
    return cache_key(
        code=manifest.content_hash,
        parameters=spec.parameters,
        image=image,
        datasets=fingerprints,
        inputs=produced_by,
        outputs=declared,
    )


def earlier_result(
    backend: Backend, runs: Iterable[RunRecord], key: str, declared: list[str]
) -> str | None:
    """The job whose outputs an earlier step of ``key`` made, in ``runs`` (the user's): one
    that succeeded and still has every declared output (retention may have removed them)."""
    for run in runs:
        for attempt in [*run.steps.values(), *run.earlier]:
            if attempt.cache_key != key:
                continue
            job_id = attempt.reused_from or attempt.job_id
            job = backend.get(job_id) if job_id else None
            if job is None or job.state != JobState.SUCCEEDED:
                continue
            made = Path(job.job_dir) / outputs.FOLDER
            if all((made / name).exists() for name in declared):
                return job.id
    return None
