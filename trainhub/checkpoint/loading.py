"""Finding and loading: the latest checkpoint (of this job, else the one it resumes from),
the step to resume at, and ``load`` of a checkpoint as saved or into the caller's state,
sharded checkpoints resharded to this job's ranks. torch is imported inside ``load``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainhub.checkpoint import sharded
from trainhub.checkpoint.environment import checkpoint_dir
from trainhub.checkpoint.layout import (
    DCP_FORMAT,
    CheckpointInfo,
    latest_checkpoint,
    load_manifest,
    read_manifest,
    resume_checkpoint,
)
from trainhub.checkpoint.ranks import current_rank, load_group
from trainhub.checkpoint.state import apply_loaded, as_state


def latest(dir: str | os.PathLike[str] | None = None) -> CheckpointInfo | None:
    """The complete checkpoint with the highest step, or None.

    Without ``dir``: this job's (or session's) checkpoints; when there are none yet and
    ``$TRAINHUB_RESUME_FROM`` names an earlier job's checkpoint, that one.
    """
    if dir is not None:
        return latest_checkpoint(Path(dir).resolve())  # the caller's own choice of directory
    info = latest_checkpoint(checkpoint_dir())
    resume_from = os.environ.get("TRAINHUB_RESUME_FROM")
    if info is None and resume_from:
        info = resume_checkpoint(resume_from)
        if info is None:
            raise FileNotFoundError(
                f"TRAINHUB_RESUME_FROM={resume_from} holds no complete checkpoint"
            )
    return info


def load(
    path_or_info: CheckpointInfo | int | str | os.PathLike[str] | None = None,
    *,
    into: Mapping[str, Any] | None = None,
    map_location: Any = "cpu",
    rank: int | None = None,
    weights_only: bool = True,
) -> Any:
    """Load a checkpoint's state: the latest by default, or an info, a step, or a directory.

    A sharded checkpoint (torch.distributed.checkpoint) loads ``into`` the caller's state,
    in place and resharded to this job's ranks: ``into`` is a dict like the one saved, whose
    tensors (DTensor shards included) are filled and whose modules, optimizers and schedulers
    get ``load_state_dict``; call it on every rank. It returns ``into``.
    Other checkpoints return the saved state (``into``, when given, is loaded from it the
    same way); for an older per-rank sharded checkpoint this rank's file is loaded (``rank``
    overrides which).
    """
    info = _resolve(path_or_info)
    import torch

    if info.format == DCP_FORMAT:
        if into is None:
            raise ValueError(
                f"{info.path} is sharded (torch.distributed.checkpoint): pass the state to "
                "fill, load(into={'model': model, ...})"
            )
        target = as_state(dict(into))
        group = load_group()
        sharded.load_state(info.path, target, group)
        return apply_loaded(into, target)
    file = info.file_for_rank(current_rank() if rank is None else rank)
    state = torch.load(file, map_location=map_location, weights_only=weights_only)
    if into is None:
        return state
    if not isinstance(state, Mapping):
        raise ValueError(f"{file} holds a {type(state).__name__}, not a dict to load into")
    return apply_loaded(into, state)


def _resolve(path_or_info: CheckpointInfo | int | str | os.PathLike[str] | None) -> CheckpointInfo:
    if path_or_info is None:
        info = latest()
        if info is None:
            raise FileNotFoundError(f"no checkpoint to load in {checkpoint_dir()}")
        return info
    if isinstance(path_or_info, CheckpointInfo):
        return path_or_info
    if isinstance(path_or_info, int):
        return read_manifest(checkpoint_dir(), path_or_info)
    return load_manifest(Path(path_or_info).resolve())


def resume_step() -> int:
    """The step to start from: one past the latest checkpoint, or 0."""
    info = latest()
    return info.step + 1 if info is not None else 0
