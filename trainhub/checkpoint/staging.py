"""Staging for async saves: the copy of the state, in CPU buffers kept from one save to the
next, that a background write reads while training changes its tensors. The copy is made
side by side on a few threads. torch is imported inside the functions."""

from __future__ import annotations

import copy
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from trainhub.checkpoint import sharded
from trainhub.checkpoint.environment import env_int

if TYPE_CHECKING:
    import torch


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


buffers = _StagingBuffers()


_COPY_MAX_THREADS = 4
_copy_pool: ThreadPoolExecutor | None = None


def _copy_threads() -> int:
    """Threads for staging copies: this rank's share of the cores, at most a few."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    per_rank = (cores or 1) // max(1, env_int("LOCAL_WORLD_SIZE", 1))
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


def stage(state: Any) -> tuple[Any, list[torch.Tensor]]:
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
            buf = buffers.take(src, lease)
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
