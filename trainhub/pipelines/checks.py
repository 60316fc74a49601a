"""Every check of a pipeline before anything runs, each mistake named by step and field: the
file's schema (trainhub.pipelines.spec), its wiring (trainhub.pipelines.graph), then each step
as the job it will be, by the checks a submit makes (:meth:`JobService.validate`; against a
frozen workspace when one is given: the notebook exists in the workspace, the datasets by
name, the image policy, the request fits the quota or the machine). The notebook's own checks
(its parameters cell, ``%pip``) come when each step is submitted, as a job's do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainhub.errors import Conflict, TrainhubError
from trainhub.jobs import submission
from trainhub.jobs.spec import FieldError, JobSpec, SpecError, parse_spec
from trainhub.pipelines.graph import wiring_errors
from trainhub.pipelines.spec import MAX_FILE_BYTES, Pipeline, PipelineError, read_pipeline, refused
from trainhub.pipelines.steps import step_spec

if TYPE_CHECKING:
    from trainhub.bundle.snapshot import Snapshot
    from trainhub.jobs.service import JobService

# A job spec's fields as a step spells them.
_STEP_FIELDS = {"source.path": "notebook", "source.cells": "cells", "source": "notebook"}
_CHECK_RUN = "check"  # the run id of the specs built to check the steps


def read_workspace_file(service: JobService, file: str) -> Pipeline:
    """The pipeline file at ``file`` in the service's workspace, parsed and validated."""
    root = service.workspace_root
    if root is None:
        raise Conflict("This trainhub sees no workspace: send the pipeline itself.")
    if not file:
        raise PipelineError([refused("file", "name a pipeline file")])
    path = (root / file).resolve()
    if not path.is_relative_to(root):
        raise PipelineError([refused("file", f"{file} is outside the workspace")])
    if not path.is_file():
        raise PipelineError([refused("file", f"no such file: {file}")])
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PipelineError([refused("file", f"{file} is larger than 1 MiB")])
    return read_pipeline(path.read_text(errors="replace"), file)


def check(
    service: JobService,
    pipeline: Pipeline,
    given: Mapping[str, Any],
    *,
    user: str,
    source: Snapshot | None = None,
) -> list[JobSpec]:
    """Every mistake of ``pipeline`` run with parameters ``given`` (its notebooks looked for
    in ``source`` when given, a frozen workspace), in one :class:`PipelineError`; else each
    step's job spec (its inputs not yet known), in the file's order."""
    errors = wiring_errors(pipeline, given)
    values = {**pipeline.parameters, **given}
    specs = []
    for name in pipeline.steps:
        data = step_spec(pipeline, name, run_id=_CHECK_RUN, values=values, inputs={})
        try:
            spec = parse_spec(data)
            submission.validate(service, spec, user=user, bundle=False, source=source)
            specs.append(spec)
        except SpecError as e:
            errors += [_of_step(name, err) for err in e.errors]
        except (TrainhubError, ValueError) as e:  # over quota, an image refused, ...
            errors.append(refused(f"steps.{name}", str(e)))
    if errors:
        raise PipelineError(errors, pipeline.name)
    return specs


def _of_step(step: str, error: FieldError) -> FieldError:
    """A job spec's refusal as the step's: ``source.path`` -> ``steps.train.notebook``."""
    field = error.field
    for job_field, step_field in _STEP_FIELDS.items():
        if field == job_field or field.startswith(job_field + "."):
            field = step_field + field[len(job_field) :]
            break
    return refused(f"steps.{step}.{field}", error.message)
