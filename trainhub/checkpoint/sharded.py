"""Sharded checkpoints on torch.distributed.checkpoint (DCP).

Every rank writes what it owns with ``dcp.save`` and a ``FileSystemWriter`` into the
checkpoint's temp directory; DCP saves replicated tensors once and each shard of a DTensor
by the rank that holds it. Loading is ``dcp.load`` into the caller's state, so a checkpoint
saved by N ranks loads in a job of any size: DCP reads the pieces each rank's tensors need.
trainhub's own part (manifest, atomic publish, retention, events) stays in
:mod:`trainhub.checkpoint.writer`; torch is imported inside the functions.
"""

from __future__ import annotations

import hashlib
import traceback
from pathlib import Path
from typing import Any

from trainhub.checkpoint.layout import CheckpointFile

METADATA = ".metadata"
_HASH_CHUNK = 1 << 20


def save_state(state: Any, directory: Path, group: Any) -> None:
    """Write ``state`` (a dict) into ``directory`` as this rank's part of a DCP checkpoint."""
    import torch.distributed.checkpoint as dcp

    if not isinstance(state, dict):
        raise TypeError(f"sharded=True saves a dict of name -> state, got {type(state).__name__}")
    writer = dcp.FileSystemWriter(directory, sync_files=True)
    dcp.save(state, storage_writer=writer, process_group=group, no_dist=group is None)


def load_state(directory: Path, state: dict[str, Any], group: Any) -> None:
    """Fill ``state``'s tensors in place from the DCP checkpoint in ``directory``."""
    import torch.distributed.checkpoint as dcp

    reader = dcp.FileSystemReader(directory)
    dcp.load(state, storage_reader=reader, process_group=group, no_dist=group is None)


def failed_ranks(error: BaseException) -> dict[int, str] | None:
    """The ranks a DCP collective failure names, with their errors; None for other errors."""
    from torch.distributed.checkpoint.api import CheckpointException

    if not isinstance(error, CheckpointException):
        return None
    return {int(r): f"{type(e).__name__}: {e}" for r, e in error.failures.items()}


def release_frames(error: BaseException) -> None:
    """Clear the locals of the finished frames ``error`` holds, through its chain and the
    per-rank failures of DCP's exception: DCP's frames hold the checkpoint's process group in
    reference cycles, so a failed save kept the group alive past ``destroy_process_group()``
    until a garbage collection, or into interpreter exit, where gloo's destructor aborts the
    rank ("terminate called without an active exception"). What is printed of the error
    stays whole."""
    from torch.distributed.checkpoint.api import CheckpointException

    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        e = pending.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)
        pending += [e.__cause__, e.__context__]
        if isinstance(e, CheckpointException):
            pending += [wrapped[0] for wrapped in e.failures.values()]


def describe_files(directory: Path) -> list[CheckpointFile]:
    """The manifest entries of a finished DCP directory, checked against DCP's own metadata.

    A rank's file missing here means the ranks did not share the checkpoints directory.
    """
    import torch.distributed.checkpoint as dcp

    metadata = dcp.FileSystemReader(directory).read_metadata()
    wanted = {info.relative_path for info in (metadata.storage_data or {}).values()}
    present = {p.name for p in directory.iterdir() if p.is_file()}
    missing = sorted(wanted - present)
    if missing:
        raise FileNotFoundError(
            f"{', '.join(missing)} missing from {directory}: sharded checkpoints need a "
            "checkpoints directory on storage shared by all ranks"
        )
    return [_describe(directory / name) for name in sorted(present)]


def _describe(path: Path) -> CheckpointFile:
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(_HASH_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return CheckpointFile(name=path.name, bytes=size, sha256=sha.hexdigest())
