"""Checkpoints from training code: save, find the latest, load, resume.

    import trainhub.checkpoint as ckpt

    start = ckpt.resume_step()
    if start:
        state = ckpt.load()
        model.load_state_dict(state["model"]); opt.load_state_dict(state["optim"])
    for step in range(start, steps):
        ...
        if step % 100 == 0:
            ckpt.save({"model": model, "optim": opt}, step, metrics={"loss": loss},
                      async_=True, keep_last=3)

Sharded state (DTensor, FSDP2) is saved by every rank with torch.distributed.checkpoint and
loaded into the caller's state, resharded to however many ranks the new job has::

    state = {"model": model, "optim": opt}   # opt's state exists once it has stepped
    if ckpt.resume_step():
        ckpt.load(into=state)                # fills tensors in place, then load_state_dict
    ...
    ckpt.save(state, step, sharded=True, async_=True)

Where: inside a job ``$TRAINHUB_JOB_DIR/checkpoints``; elsewhere ``$TRAINHUB_CHECKPOINT_DIR``
or ``./checkpoints``, so the same notebook runs interactively and as a job.

Every save is written into a hidden temp directory, fsynced, and renamed into place, so a
checkpoint is either whole or absent, also when the writer is killed. Under
torch.distributed, rank 0 alone writes replicated (DDP) state with ``torch.save``, or with
``sharded=True`` all ranks write it together with ``dcp.save`` (replicated tensors once,
each shard by its owner); all ranks agree on the outcome before any of them sees the save as
done. With ``async_=True`` training waits only for the copy to CPU memory, into buffers kept
from the previous save; writing happens on a background thread, and its errors surface on
the next ``save``/``wait``. Older per-rank sharded checkpoints (``rank-<r>.pt``) still load.

A save the job should make when it is asked to stop (preempted, suspended, cancelled) is
registered with ``on_stop(fn)`` (:mod:`trainhub.checkpoint.stopping`).

Only one process may write a checkpoints directory at a time (rank 0 of one job, or one
interactive session). torch is imported inside the functions that need it.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import hashlib
import json
import math
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from trainhub.checkpoint import sharded
from trainhub.checkpoint.layout import (
    DCP_FORMAT,
    FORMAT,
    MANIFEST,
    TEMP_PREFIX,
    CheckpointFile,
    CheckpointInfo,
    CheckpointManifest,
    check_retention,
    coerce_step,
    delete_checkpoint,
    latest_checkpoint,
    list_checkpoints,
    load_manifest,
    publish,
    read_manifest,
    remove_stale_temps,
    remove_tree,
    resume_checkpoint,
    retention_victims,
    step_name,
    temp_path,
)
from trainhub.checkpoint.stopping import on_stop, stop_requested
from trainhub.jobs.directory import JobDir

if TYPE_CHECKING:
    import torch

__all__ = [
    "CheckpointError",
    "CheckpointHandle",
    "CheckpointInfo",
    "checkpoint_dir",
    "latest",
    "load",
    "on_stop",
    "release_staging_memory",
    "resume_step",
    "save",
    "wait_all",
]

STATE_FILE = "state.pt"


class CheckpointError(RuntimeError):
    """A save failed, here or on another rank."""


def checkpoint_dir() -> Path:
    """Where saves go and ``latest()`` looks: the job's directory, or the interactive one."""
    job_dir = os.environ.get("TRAINHUB_JOB_DIR")
    if job_dir:
        return JobDir(job_dir).checkpoints.absolute()
    # Resolved: the user may point it through a link, and readers never follow links below it.
    return Path(os.environ.get("TRAINHUB_CHECKPOINT_DIR") or "checkpoints").resolve()


# --- saving --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ranks:
    rank: int
    world_size: int
    # The gloo group checkpoint writers agree on, None without torch.distributed. Weak:
    # handles users keep must not hold gloo's group past destroy_process_group() into
    # interpreter exit, where its destructor aborts the process.
    group_ref: weakref.ref[Any] | None = None

    @property
    def group(self) -> Any:
        return None if self.group_ref is None else self.group_ref()


@dataclass(frozen=True)
class _Plan:
    root: Path
    step: int
    metrics: dict[str, float]
    sharded: bool
    async_: bool
    ranks: _Ranks
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


class CheckpointHandle:
    """A save in progress or done. ``wait()`` returns its :class:`CheckpointInfo`."""

    def __init__(self, plan: _Plan):
        self._plan = plan
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._info: CheckpointInfo | None = None
        self.stall_seconds = 0.0

    @property
    def path(self) -> Path:
        return self._plan.final

    @property
    def step(self) -> int:
        return self._plan.step

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CheckpointInfo | None:
        """Block until the checkpoint is visible; re-raise the error if the save failed.

        Returns None only on a rank that cannot see the checkpoints directory.
        """
        if not self._done.wait(timeout):
            raise TimeoutError(f"checkpoint step {self.step} still being written after {timeout} s")
        if self._error is not None:
            raise self._error
        return self._info

    def _run(self, payload: Any, lease: list[Any] | None = None) -> None:
        try:
            self._info = _write(self._plan, payload, self.stall_seconds)
        except BaseException as e:
            self._error = e
        finally:
            if lease:
                _staging.give_back(lease)  # before done: the next save may reuse them at once
            self._done.set()

    def __repr__(self) -> str:
        state = "done" if self.done() else "writing"
        return f"<CheckpointHandle step={self.step} {state} path={str(self.path)!r}>"


_lock = threading.Lock()
_pending: CheckpointHandle | None = None
_atexit_registered = False


def save(
    state: Any,
    step: int,
    *,
    metrics: Mapping[str, float] | None = None,
    async_: bool = False,
    sharded: bool = False,
    keep_last: int | None = None,
    keep_best: tuple[str, Literal["min", "max"], int] | None = None,
) -> CheckpointHandle:
    """Save ``state`` as the checkpoint of ``step`` and return its handle.

    ``state`` is anything ``torch.save`` takes; values with a ``state_dict()`` (modules,
    optimizers, schedulers) are saved as their state dict. Call it on every rank.
    ``keep_last``/``keep_best`` delete older checkpoints after a successful save; the newest
    and the one just saved always stay.
    """
    step = coerce_step(step)
    clean_metrics = _check_metrics(metrics)
    check_retention(keep_last, keep_best)
    wait_all()  # one save at a time; an earlier background failure is raised here
    started = time.perf_counter()
    plan = _Plan(
        root=checkpoint_dir(),
        step=step,
        metrics=clean_metrics,
        sharded=sharded,
        async_=async_,
        ranks=_ranks(sharded),
        job_id=os.environ.get("TRAINHUB_JOB_ID") or None,
        attempt=_env_int("TRAINHUB_ATTEMPT", 0),
        keep_last=keep_last,
        keep_best=tuple(keep_best) if keep_best is not None else None,  # type: ignore[arg-type]
        started=started,
    )
    handle = CheckpointHandle(plan)
    payload = _as_state(state) if plan.writes else None
    if not async_:
        handle.stall_seconds = time.perf_counter() - started
        handle._run(payload)
        handle.wait()
        return handle

    staged, lease = _stage(payload) if plan.writes else (None, [])
    handle.stall_seconds = time.perf_counter() - started
    _start_background(handle, staged, lease)
    return handle


def wait_all() -> None:
    """Wait for the pending background save, if any; raise its error once."""
    global _pending
    with _lock:
        pending, _pending = _pending, None
    if pending is not None:
        pending.wait()


def _start_background(handle: CheckpointHandle, staged: Any, lease: list[Any]) -> None:
    global _pending, _atexit_registered
    thread = threading.Thread(
        target=_run_in_background,
        args=(handle, staged, lease),
        name=f"trainhub-checkpoint-{handle.step}",
    )
    with _lock:
        _pending = handle
        if not _atexit_registered:
            atexit.register(_flush_at_exit)
            _atexit_registered = True
    thread.start()


_BACKGROUND_NICENESS = 10


def _run_in_background(handle: CheckpointHandle, staged: Any, lease: list[Any]) -> None:
    # Writing competes with training for cores on a busy machine: training goes first; the
    # write only has to end before the next save.
    # Not Linux, or not allowed: the write runs at training's priority.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICENESS)
    handle._run(staged, lease)


def _flush_at_exit() -> None:
    try:
        wait_all()
    except BaseException as e:  # nothing above us can catch it any more: say so loudly
        print(f"trainhub: a background checkpoint save failed: {e!r}", file=sys.stderr)
        _emit("checkpoint_failed", error=repr(e))


def _write(plan: _Plan, payload: Any, stall: float) -> CheckpointInfo | None:
    info = _write_sharded(plan, payload) if plan.sharded else _write_replicated(plan, payload)
    if plan.ranks.rank != 0:
        return info
    assert info is not None
    _apply_retention(plan)
    seconds = time.perf_counter() - plan.started
    _emit(
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


def _write_replicated(plan: _Plan, payload: Any) -> CheckpointInfo | None:
    """Rank 0 writes the whole state; the other ranks wait for its verdict."""
    error: BaseException | None = None
    info = None
    if plan.ranks.rank == 0:
        try:
            tmp = _fresh_temp(plan.root, temp_path(plan.root, step_name(plan.step)))
            try:
                entry = _torch_save(payload, tmp / STATE_FILE)
                _write_manifest(tmp, plan, [entry], world_size=plan.ranks.world_size)
                publish(tmp, plan.final)
            except BaseException:
                remove_tree(tmp)
                raise
            info = load_manifest(plan.final)
        except Exception as e:
            error = e
    _agree(plan, error, "writing")
    return info if info is not None else _visible(plan)


def _write_sharded(plan: _Plan, payload: Any) -> CheckpointInfo | None:
    """Every rank writes its part with torch.distributed.checkpoint into one shared temp dir;
    rank 0 adds the manifest and publishes."""
    ranks = plan.ranks
    # Named from step and attempt so every rank finds it without being told.
    tmp = plan.root / f"{TEMP_PREFIX}{step_name(plan.step)}-a{plan.attempt}-sharded"
    error: BaseException | None = None
    if ranks.rank == 0:
        try:
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
        write_error = e
    verdicts = _gather(ranks, None if write_error is None else _describe(write_error))
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
            publish(tmp, plan.final)
            info = load_manifest(plan.final)
        except Exception as e:
            remove_tree(tmp)
            error = e
    _agree(plan, error, "publishing")
    return info if info is not None else _visible(plan)


def _fresh_temp(root: Path, tmp: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(root)
    remove_tree(tmp)
    tmp.mkdir()
    return tmp


def _visible(plan: _Plan) -> CheckpointInfo | None:
    try:
        return load_manifest(plan.final)
    except (OSError, ValueError):
        return None  # a rank on a node that does not share the directory


def _agree(plan: _Plan, error: BaseException | None, what: str) -> None:
    """All ranks learn whether any rank failed; each raises if so."""
    verdicts = _gather(plan.ranks, None if error is None else _describe(error))
    if error is not None:
        raise error
    failures = [(r, v) for r, v in enumerate(verdicts) if v is not None]
    if failures:
        raise CheckpointError(_failure_text(plan, failures, what))


def _describe(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}"


def _failure_text(plan: _Plan, failures: list[tuple[int, Any]], what: str) -> str:
    detail = "; ".join(f"rank {r}: {msg}" for r, msg in failures)
    return f"checkpoint step {plan.step} failed {what}: {detail}"


def _gather(ranks: _Ranks, payload: Any) -> list[Any]:
    if ranks.group_ref is None:
        return [payload]
    group = ranks.group
    if group is None:
        raise CheckpointError("the process group was destroyed while a checkpoint was saved")
    import torch.distributed as dist

    out: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(out, payload, group=group)
    return out


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
    tmp: Path, plan: _Plan, files: list[CheckpointFile], world_size: int, format: str = FORMAT
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


def _apply_retention(plan: _Plan) -> None:
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
            _emit("checkpoint_retention_failed", step=victim.step, error=str(e))


def _emit(type: str, **fields: Any) -> None:
    job_dir = os.environ.get("TRAINHUB_JOB_DIR")
    if job_dir:
        JobDir(job_dir).emit(type, **fields)


# --- ranks ---------------------------------------------------------------------------------

# (default group, checkpoint group), weakly held like _Ranks.group_ref.
_group_cache: tuple[weakref.ref[Any], weakref.ref[Any]] | None = None


def _ranks(sharded: bool) -> _Ranks:
    """This process's rank, and the group writers agree on when torch.distributed runs."""
    dist = _distributed()
    if dist is not None and dist.get_world_size() > 1:
        if stop_requested() and not sharded:
            # Asked to stop: the other ranks may never join an agreement; rank 0 writes alone.
            return _Ranks(dist.get_rank(), dist.get_world_size())
        group = weakref.ref(_checkpoint_group(dist))
        return _Ranks(dist.get_rank(), dist.get_world_size(), group)
    env_world = _env_int("WORLD_SIZE", 1)
    if sharded and env_world > 1:
        raise CheckpointError(
            "sharded=True needs torch.distributed initialized (init_process_group) so ranks "
            "can agree on the checkpoint"
        )
    # Ranks started by torchrun without a process group: rank 0 alone writes.
    return _Ranks(_env_int("RANK", 0), env_world)


def _checkpoint_group(dist: Any) -> Any:
    """A gloo group of all ranks, apart from training's, so background saves can coordinate."""
    global _group_cache
    world = dist.group.WORLD
    group = None
    if _group_cache is not None and _group_cache[0]() is world:
        group = _group_cache[1]()
    if group is None:
        group = dist.new_group(backend="gloo")
        _group_cache = (weakref.ref(world), weakref.ref(group))
    return group


def _distributed() -> Any:
    if "torch" not in sys.modules:
        return None  # torch never imported: no process group can exist
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def _current_rank() -> int:
    dist = _distributed()
    return dist.get_rank() if dist is not None else _env_int("RANK", 0)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def _check_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a dict of name -> number, got {type(metrics).__name__}")
    clean = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"metric names must be non-empty strings, got {name!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"metrics[{name!r}] must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"metrics[{name!r}] is {number}; checkpoint metrics must be finite")
        clean[name] = number
    return clean


# --- staging for async saves ---------------------------------------------------------------


def _as_state(state: Any) -> Any:
    """Modules, optimizers and schedulers become their state dicts (at the top two levels)."""
    if _has_state_dict(state):
        return state.state_dict()
    if isinstance(state, Mapping):
        return {k: v.state_dict() if _has_state_dict(v) else v for k, v in state.items()}
    return state


def _has_state_dict(obj: Any) -> bool:
    return callable(getattr(obj, "state_dict", None)) and not _is_tensor(obj)


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


class _StagingBuffers:
    """CPU buffers that hold the copy an async save writes.

    The buffers of one save are reused by the next when shapes match: fresh memory costs
    page faults (and pinning, for GPU tensors) that would lengthen every training stall.
    Saves run one at a time, so a buffer is never handed out while still being written.
    """

    def __init__(self) -> None:
        self._free: dict[tuple[Any, ...], list[torch.Tensor]] = {}
        self._lock = threading.Lock()

    def take(self, like: torch.Tensor, lease: list[torch.Tensor]) -> torch.Tensor:
        """A CPU buffer shaped like ``like``, recorded in ``lease`` until given back."""
        import torch

        pin = like.is_cuda
        with self._lock:
            free = self._free.get(_buffer_key(like.shape, like.dtype, pin))
            buf = free.pop() if free else None
        if buf is None:
            buf = torch.empty(like.shape, dtype=like.dtype, device="cpu", pin_memory=pin)
        lease.append(buf)
        return buf

    def give_back(self, lease: list[torch.Tensor]) -> None:
        with self._lock:
            for buf in lease:
                key = _buffer_key(buf.shape, buf.dtype, buf.is_pinned())
                self._free.setdefault(key, []).append(buf)

    def release(self) -> None:
        with self._lock:
            self._free.clear()


def _buffer_key(shape: Any, dtype: Any, pinned: bool) -> tuple[Any, ...]:
    return (tuple(shape), dtype, pinned)


_staging = _StagingBuffers()


def release_staging_memory() -> None:
    """Free the CPU copies kept between async saves (after waiting for the pending one)."""
    wait_all()
    _staging.release()


_COPY_MAX_THREADS = 4
_copy_pool: ThreadPoolExecutor | None = None


def _copy_threads() -> int:
    """Threads for staging copies: this rank's share of the cores, at most a few."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    per_rank = (cores or 1) // max(1, _env_int("LOCAL_WORLD_SIZE", 1))
    return max(1, min(_COPY_MAX_THREADS, per_rank))


def _copy_side_by_side(copies: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """``dst.copy_(src)`` for each pair, split by bytes across a kept pool of threads."""
    global _copy_pool
    workers = _copy_threads()
    if workers == 1 or len(copies) < 2:
        _copy_chunk(copies)
        return
    if _copy_pool is None or _copy_pool._max_workers != workers:
        _copy_pool = ThreadPoolExecutor(
            workers, thread_name_prefix="trainhub-staging", initializer=_one_intra_op_thread
        )
    chunks: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for pair in sorted(copies, key=lambda p: -p[1].nbytes):  # largest first, to the lightest
        i = loads.index(min(loads))
        chunks[i].append(pair)
        loads[i] += pair[1].nbytes
    futures = [_copy_pool.submit(_copy_chunk, chunk) for chunk in chunks[1:] if chunk]
    _copy_chunk(chunks[0])  # this thread takes a share too
    for f in futures:
        f.result()


def _one_intra_op_thread() -> None:
    import torch

    torch.set_num_threads(1)  # OpenMP's thread count is per calling thread


def _copy_chunk(copies: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for dst, src in copies:
        dst.copy_(src, non_blocking=src.is_cuda)


def _stage(state: Any) -> tuple[Any, list[torch.Tensor]]:
    """Copy ``state`` so training may change its tensors while the copy is written.

    Returns the copy and the staging buffers it lives in, to give back once written.
    """
    import torch

    lease: list[torch.Tensor] = []
    memo: dict[tuple[Any, ...], torch.Tensor] = {}
    cuda_devices: set[torch.device] = set()
    copies: list[tuple[torch.Tensor, torch.Tensor]] = []

    def copy_tensor(t: torch.Tensor) -> torch.Tensor:
        src = t.detach()
        if src.layout != torch.strided or src.is_quantized or src.device.type == "meta":
            return src.to("cpu", copy=True)
        # Views of one storage (tied weights) stay one tensor, as torch.save would keep them.
        key = (
            src.untyped_storage().data_ptr(),
            src.storage_offset(),
            tuple(src.shape),
            src.stride(),
            src.dtype,
            src.device,
        )
        if key not in memo:
            buf = _staging.take(src, lease)
            copies.append((buf, src))
            if src.is_cuda:
                cuda_devices.add(src.device)
            memo[key] = buf
        return memo[key]

    def visit(x: Any) -> Any:
        if sharded.is_dtensor(x):
            return sharded.stage_dtensor(x, copy_tensor)
        if isinstance(x, torch.Tensor):
            return copy_tensor(x)
        if isinstance(x, dict):
            out = copy.copy(x)  # keeps the type and attributes such as state_dict's _metadata
            for k, v in x.items():
                out[k] = visit(v)
            return out
        if isinstance(x, list):
            return [visit(v) for v in x]
        if isinstance(x, tuple):
            items = [visit(v) for v in x]
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        if isinstance(x, int | float | str | bytes | bool | type(None)):
            return x
        return copy.deepcopy(x)

    staged = visit(state)
    # Staging copies are memory-bound. OpenMP's threads within one copy_ stall at barriers
    # when cores are shared (DDP ranks, other jobs), so copy_ runs single-threaded and a few
    # Python threads copy different tensors side by side instead (copy_ releases the GIL).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _copy_side_by_side(copies)
    finally:
        torch.set_num_threads(threads)
    for device in cuda_devices:
        torch.cuda.synchronize(device)
    return staged, lease


# --- finding and loading -------------------------------------------------------------------


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
        target = _as_state(dict(into))
        group = _load_group()
        sharded.load_state(info.path, target, group)
        return _apply_loaded(into, target)
    file = info.file_for_rank(_current_rank() if rank is None else rank)
    state = torch.load(file, map_location=map_location, weights_only=weights_only)
    if into is None:
        return state
    if not isinstance(state, Mapping):
        raise ValueError(f"{file} holds a {type(state).__name__}, not a dict to load into")
    return _apply_loaded(into, state)


def _apply_loaded(into: Mapping[str, Any], loaded: Mapping[str, Any]) -> Mapping[str, Any]:
    """Hand loaded state dicts to the objects that own them; tensors were filled in place."""
    import torch

    for key, target in into.items():
        if key not in loaded:
            raise KeyError(f"the checkpoint holds no {key!r} (it has {sorted(loaded)})")
        value = loaded[key]
        if _has_state_dict(target) and callable(getattr(target, "load_state_dict", None)):
            target.load_state_dict(value)
        elif isinstance(target, torch.Tensor) and value is not target:
            with torch.no_grad():
                target.copy_(value)
        elif isinstance(target, dict) and value is not target:
            target.update(value)
        elif not isinstance(target, torch.Tensor | dict) and isinstance(into, MutableMapping):
            into[key] = value  # plain values (a step count, a seed) are replaced
    return into


def _load_group() -> Any:
    dist = _distributed()
    if dist is None or dist.get_world_size() == 1:
        return None
    return _checkpoint_group(dist)


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
