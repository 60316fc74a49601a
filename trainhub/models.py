"""The team's model registry from a notebook or a job (``trainhub.models``).

    import trainhub
    v = trainhub.models.register("classifier", "train-3f2a:1200")   # a job's checkpoint
    trainhub.models.set_alias("classifier", "staging", v.version, reason="best val acc")
    model = trainhub.models.load("classifier@staging")              # torch.load of its file
    folder = trainhub.models.path("classifier/3")

Inside a job, ``register("classifier")`` registers the job's own newest checkpoint (else its
outputs folder), ``register("classifier", path=trainhub.outputs.path() / "model.pt")`` one
output (call it on one rank); ``load`` and ``path`` there note the version in the job's
lineage as an input. References: ``NAME`` (its newest version not archived), ``NAME@ALIAS``,
``NAME/VERSION``. The registry itself is :mod:`trainhub.registry`; this module imports it
only when called, so ``import trainhub`` stays light.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainhub.registry.views import ModelList, ModelView, VersionView


def _user() -> str:
    import getpass

    return getpass.getuser()


def register(
    name: str,
    from_: str | None = None,
    *,
    step: int | None = None,
    path: str | os.PathLike[str] | None = None,
    description: str = "",
) -> VersionView:
    """The next version of ``name`` from ``from_`` (``JOB``, ``JOB:STEP``, ``JOB:OUTPUT``);
    inside a job with no ``from_``, from the job itself: checkpoint ``step``, output ``path``
    (absolute, or relative to its outputs), or its newest checkpoint."""
    from trainhub.registry import here
    from trainhub.registry.refs import Source, check_output_path

    job = here.this_job()
    if from_ is None and job is not None:
        relative = None
        if path is not None:
            outputs = Path(job.job_dir) / "outputs"
            given = Path(path)
            given = given.relative_to(outputs) if given.is_absolute() else given
            relative = check_output_path(str(given), "path")
        return here.register(
            None, name, Source(job.id, step=step, path=relative), description=description
        )
    from trainhub.api import service

    if from_ is None:
        raise ValueError("from_: name a job: JOB, JOB:STEP or JOB:OUTPUT")
    return here.register(service(), name, from_, user=_user(), description=description)


def get(ref: str) -> VersionView:
    """The version ``ref`` names: its files, metrics, lineage, aliases."""
    from trainhub.registry import here

    return here.registry().version(ref)


def path(ref: str) -> Path:
    """The version's file (a version of one file) or folder; inside a job, noted as its input."""
    from trainhub.registry import here

    registry = here.registry()
    version = registry.version(ref)
    here.note_input(version, ref)
    return registry.files(version)


def load(ref: str, **torch_load: Any) -> Any:
    """``torch.load`` of the version's file (``torch_load``: its keyword arguments,
    ``map_location="cpu"`` by default); a version that is a folder returns its path."""
    where = path(ref)
    if where.is_dir():
        return where
    import torch

    torch_load.setdefault("map_location", "cpu")
    return torch.load(where, **torch_load)


def list() -> ModelList:
    from trainhub.registry import here

    return here.registry().list()


def describe(name: str) -> ModelView:
    """A model's versions (metrics side by side), aliases and audit log."""
    from trainhub.registry import here

    return here.registry().describe(name)


def set_alias(name: str, alias: str, version: int | None, *, reason: str = "") -> ModelView:
    """Point ``alias`` at ``version`` (None removes it); written in the audit log."""
    from trainhub.registry import here

    return here.registry().move_alias(name, alias, version, user=_user(), reason=reason)


def archive(name: str, version: int, *, reason: str = "", archived: bool = True) -> ModelView:
    """Archive a version (``archived=False`` brings it back); never deleted."""
    from trainhub.registry import here

    return here.registry().archive(name, version, user=_user(), reason=reason, archived=archived)
