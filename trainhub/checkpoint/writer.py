"""Writing one checkpoint: rank 0 alone with ``torch.save`` (replicated state) or every rank
with torch.distributed.checkpoint (sharded), into a fresh temp directory; the files hashed,
the manifest written, all fsynced and published by one rename (while this world of ranks is
still the job's), the ranks agreeing on the outcome at each stage. Then rank 0 applies the
retention policy and records the save in the job's events. A :class:`Plan` says what to
write; torch is imported inside the functions."""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from trainhub.checkpoint import sharded
from trainhub.checkpoint.environment import emit, job_dir
from trainhub.checkpoint.layout import (
    DCP_FORMAT,
    FORMAT,
    MANIFEST,
    TEMP_PREFIX,
    CheckpointFile,
    CheckpointInfo,
    CheckpointManifest,
    delete_checkpoint,
    list_checkpoints,
    load_manifest,
    publish,
    remove_stale_temps,
    remove_tree,
    step_name,
    temp_path,
)
from trainhub.checkpoint.ranks import CheckpointError, Ranks, gather
from trainhub.checkpoint.retention import retention_victims
from trainhub.jobs import world

STATE_FILE = "state.pt"


@dataclass(frozen=True)
class Plan:
    """What one save writes and where, fixed when ``save`` is called."""

    root: Path
    step: int
    metrics: dict[str, float]
    sharded: bool
    async_: bool
    ranks: Ranks
    job_id: str | None
    attempt: int
    keep_last: int | None
    keep_best: tuple[str, Literal["min", "max"], int] | None
    started: float

    @property
    def final(self) -> Path:
        return self.root / step_name(self.step)

    @property
    def writes(self) -> bool:
        return self.sharded or self.ranks.rank == 0


def write(plan: Plan, payload: Any, stall: float) -> CheckpointInfo | None:
    """Write the planned checkpoint; rank 0 then applies retention and records the save."""
    info = _write_sharded(plan, payload) if plan.sharded else _write_replicated(plan, payload)
    if plan.ranks.rank != 0:
        return info
    assert info is not None
    _apply_retention(plan)
    seconds = time.perf_counter() - plan.started
    emit(
        "checkpoint",
        step=plan.step,
        bytes=info.bytes,
        seconds=round(seconds, 3),
        stall_seconds=round(stall if plan.async_ else seconds, 3),  # a sync save stalls throughout
        async_=plan.async_,
        sharded=plan.sharded,
        path=str(info.path),
    )
    return info


def _write_replicated(plan: Plan, payload: Any) -> CheckpointInfo | None:
    """Rank 0 writes the whole state; the other ranks wait for its verdict."""
    error: BaseException | None = None
    info = None
    if plan.ranks.rank == 0:
        try:
            _check_world(plan)  # before the cleanup of other writers' temps, too
            tmp = _fresh_temp(plan.root, temp_path(plan.root, step_name(plan.step)))
            try:
                entry = _torch_save(payload, tmp / STATE_FILE)
                _write_manifest(tmp, plan, [entry], world_size=plan.ranks.world_size)
                _check_world(plan)
                publish(tmp, plan.final)
            except BaseException:
                remove_tree(tmp)
                raise
            info = load_manifest(plan.final)
        except Exception as e:
            error = e
    _agree(plan, error, "writing")
    return info if info is not None else _visible(plan)


def _write_sharded(plan: Plan, payload: Any) -> CheckpointInfo | None:
    """Every rank writes its part with torch.distributed.checkpoint into one shared temp dir;
    rank 0 adds the manifest and publishes."""
    ranks = plan.ranks
    # Named from step and attempt so every rank finds it without being told.
    tmp = plan.root / f"{TEMP_PREFIX}{step_name(plan.step)}-a{plan.attempt}-sharded"
    error: BaseException | None = None
    if ranks.rank == 0:
        try:
            _check_world(plan)
            _fresh_temp(plan.root, tmp)
        except Exception as e:
            error = e
    _agree(plan, error, "preparing")

    write_error: BaseException | None = None
    try:
        sharded.save_state(payload, tmp, ranks.group if ranks.group_ref is not None else None)
    except BaseException as e:  # DCP's CheckpointException derives from BaseException
        if not isinstance(e, Exception) and sharded.failed_ranks(e) is None:
            raise
        sharded.release_frames(e)
        write_error = e
    verdicts = gather(ranks, None if write_error is None else _describe(write_error))
    failures = [(r, v) for r, v in enumerate(verdicts) if v is not None]
    if failures:  # every rank saw the same list: all stop here, without another round
        if ranks.rank == 0:
            remove_tree(tmp)
        named = sharded.failed_ranks(write_error) if write_error is not None else None
        if named:  # DCP's collective names the ranks that actually failed
            failures = sorted(named.items())
        raise CheckpointError(_failure_text(plan, failures, "writing a shard")) from write_error

    error = None
    info = None
    if ranks.rank == 0:
        try:
            files = sharded.describe_files(tmp)
            _write_manifest(tmp, plan, files, world_size=ranks.world_size, format=DCP_FORMAT)
            _check_world(plan)
            publish(tmp, plan.final)
            info = load_manifest(plan.final)
        except Exception as e:
            remove_tree(tmp)
            error = e
    _agree(plan, error, "publishing")
    return info if info is not None else _visible(plan)


def _check_world(plan: Plan) -> None:
    """Write only while this world of ranks is the job's: one the rendezvous left behind would
    write the same steps as the world that replaced it, and clear away its temps
    (trainhub.jobs.world). Checked again just before publishing."""
    job = job_dir()
    if job is not None:
        world.check(job, f"writing checkpoint step {plan.step}")


def _fresh_temp(root: Path, tmp: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(root)
    remove_tree(tmp)
    tmp.mkdir()
    return tmp


def _visible(plan: Plan) -> CheckpointInfo | None:
    try:
        return load_manifest(plan.final)
    except (OSError, ValueError):
        return None  # a rank on a node that does not share the directory


def _agree(plan: Plan, error: BaseException | None, what: str) -> None:
    """All ranks learn whether any rank failed; each raises if so."""
    verdicts = gather(plan.ranks, None if error is None else _describe(error))
    if error is not None:
        raise error
    failures = [(r, v) for r, v in enumerate(verdicts) if v is not None]
    if failures:
        raise CheckpointError(_failure_text(plan, failures, what))


def _describe(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}"


def _failure_text(plan: Plan, failures: list[tuple[int, Any]], what: str) -> str:
    detail = "; ".join(f"rank {r}: {msg}" for r, msg in failures)
    return f"checkpoint step {plan.step} failed {what}: {detail}"


class _HashingWriter:
    """A file wrapper that hashes and counts the bytes torch.save streams through it."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self._sha = hashlib.sha256()
        self.bytes = 0

    def write(self, data: Any) -> int:
        self._sha.update(data)
        self.bytes += memoryview(data).nbytes
        return self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def _torch_save(obj: Any, path: Path) -> CheckpointFile:
    import torch

    with open(path, "wb") as f:
        writer = _HashingWriter(f)
        torch.save(obj, writer)  # type: ignore[arg-type]
        f.flush()
        os.fsync(f.fileno())
    return CheckpointFile(name=path.name, bytes=writer.bytes, sha256=writer.hexdigest())


def _write_manifest(
    tmp: Path, plan: Plan, files: list[CheckpointFile], world_size: int, format: str = FORMAT
) -> None:
    manifest = CheckpointManifest(
        step=plan.step,
        time=round(time.time(), 3),
        metrics=plan.metrics,
        files=files,
        world_size=world_size,
        job_id=plan.job_id,
        attempt=plan.attempt,
        format=format,
        sharded=plan.sharded,
    )
    with open(tmp / MANIFEST, "w") as f:
        json.dump(manifest.model_dump(), f, indent=2)
        f.flush()
        os.fsync(f.fileno())


def _apply_retention(plan: Plan) -> None:
    if plan.keep_last is None and plan.keep_best is None:
        return
    infos = list_checkpoints(plan.root)
    for victim in retention_victims(infos, keep_last=plan.keep_last, keep_best=plan.keep_best):
        if victim.step == plan.step:
            continue  # just saved, even if an older run left higher steps behind
        try:
            delete_checkpoint(plan.root, victim.step)
        except FileNotFoundError:
            pass  # someone deleted it meanwhile
        except OSError as e:  # the save itself succeeded: tell, do not fail training
            warnings.warn(f"checkpoint retention could not delete {victim.path}: {e}", stacklevel=1)
            emit("checkpoint_retention_failed", step=victim.step, error=str(e))
