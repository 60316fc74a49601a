"""trainhub: turn a notebook into a queued, distributed training job and follow it.

The names below load lazily so that ``import trainhub`` stays cheap inside every training
rank and never pulls in PyTorch, Jupyter Server or JupyterHub.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not typing's: every rank imports this package, typing costs ~10 ms

__version__ = "0.1.0"

_LAZY = {
    "submit": ("trainhub.api", "submit"),
    "get_job": ("trainhub.api", "get_job"),
    "jobs": ("trainhub.api", "jobs"),
    "compare": ("trainhub.api", "compare"),
    "Job": ("trainhub.api", "Job"),
    "schedule": ("trainhub.schedules.api", "schedule"),
    "list_schedules": ("trainhub.schedules.api", "list_schedules"),
    "get_schedule": ("trainhub.schedules.api", "get_schedule"),
    "log": ("trainhub.metrics.scalars", "log"),
    "checkpoint": ("trainhub.checkpoint", None),
    "distributed": ("trainhub.rank.distributed", None),
    "datasets": ("trainhub.datasets", None),
    "outputs": ("trainhub.outputs", None),
    "models": ("trainhub.models", None),
    "datasets_available": ("trainhub.api", "datasets_available"),
    "JobSpec": ("trainhub.jobs.spec", "JobSpec"),
    "run_pipeline": ("trainhub.api", "run_pipeline"),
    "pipeline_runs": ("trainhub.api", "pipeline_runs"),
    "PipelineRun": ("trainhub.api", "PipelineRun"),
}

__all__ = [  # noqa: RUF022 - the order of _LAZY
    "__version__",
    "submit",
    "get_job",
    "jobs",
    "compare",
    "Job",
    "schedule",
    "list_schedules",
    "get_schedule",
    "log",
    "checkpoint",
    "distributed",
    "datasets",
    "outputs",
    "models",
    "datasets_available",
    "JobSpec",
    "run_pipeline",
    "pipeline_runs",
    "PipelineRun",
]

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from trainhub import checkpoint, datasets, distributed, models, outputs
    from trainhub.api import (
        Job,
        PipelineRun,
        compare,
        datasets_available,
        get_job,
        jobs,
        pipeline_runs,
        run_pipeline,
        submit,
    )
    from trainhub.jobs.spec import JobSpec
    from trainhub.metrics.scalars import log
    from trainhub.schedules.api import get_schedule, list_schedules, schedule


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built JupyterLab extension lies, for ``jupyter labextension develop``."""
    return [{"src": "labextension", "dest": "trainhub"}]


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'trainhub' has no attribute {name!r}") from None
    module = import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value
