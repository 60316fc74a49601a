"""A pipeline step as the job spec it runs as. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainhub.jobs.naming import MAX_NAME_LENGTH
from trainhub.pipelines.spec import Pipeline


def job_name(pipeline: str, step: str) -> str:
    """``train-eval-prepare``: the pipeline's name, cut to leave the step's whole (a step's
    name is at most 30 characters, a job's 40)."""
    room = MAX_NAME_LENGTH - len(step) - 1
    return f"{pipeline[:room].rstrip('-')}-{step}"


def step_parameters(pipeline: Pipeline, step: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a step is given: the pipeline's it names (the run's ``values``), then its
    own."""
    spec = pipeline.steps[step]
    return {**{p: values[p] for p in spec.pipeline_parameters}, **spec.parameters}


def step_spec(
    pipeline: Pipeline,
    step: str,
    *,
    run_id: str,
    values: Mapping[str, Any],
    inputs: Mapping[str, str],
) -> dict[str, Any]:
    """The job spec (as data, for :func:`trainhub.jobs.spec.parse_spec`) of ``step`` in run
    ``run_id``: ``values`` the run's pipeline parameters, ``inputs`` each input's path (an
    earlier step's output, read-only as a dataset of the input's name)."""
    spec = pipeline.steps[step]
    assert pipeline.name is not None
    datasets = [d.model_dump(mode="json", exclude_defaults=True) for d in spec.datasets]
    datasets += [{"name": name, "path": path} for name, path in sorted(inputs.items())]
    data: dict[str, Any] = {
        "name": job_name(pipeline.name, step),
        "source": {
            "kind": "notebook",
            "path": spec.notebook,
            "cells": spec.cells.model_dump(mode="json"),
        },
        "parameters": step_parameters(pipeline, step, values),
        "resources": spec.resources.model_dump(mode="json", exclude_none=True),
        "priority": spec.priority.value,
        "retry": spec.retry.model_dump(mode="json"),
        "env": dict(spec.env),
        "datasets": datasets,
        "pipeline": {"run": run_id, "step": step, "name": pipeline.name},
    }
    optional = {
        "image": spec.image,
        "queue": spec.queue,
        "max_runtime": spec.max_runtime.total_seconds() if spec.max_runtime else None,
    }
    data.update({k: v for k, v in optional.items() if v is not None})
    return data
