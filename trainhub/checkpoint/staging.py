"""Staging for async saves: the copy of the state, in CPU memory, that a background write
reads while training changes its tensors. torch.distributed.checkpoint's ``DefaultStager``
makes it: it keeps each tensor's CPU copy from one save to the next (fresh memory costs page
faults, and pinning for GPU tensors, that would lengthen every stall), keeps views of one
storage (tied weights) one storage, and copies DTensors with their placement. Saves run one
at a time (``saving.wait_all`` before staging), so a copy is never refilled while a write
still reads it. torch is imported inside the functions."""

from __future__ import annotations

import os
from typing import Any

# One stager per kind of state: with GPU tensors or without (see ``_options``).
_stagers: dict[bool, Any] = {}


def stage(state: Any) -> Any:
    """Copy ``state`` so training may change its tensors while the copy is written."""
    import torch

    on_gpu = _has_gpu_tensor(state)
    stager = _stagers.get(on_gpu)
    if stager is None:
        from torch.distributed.checkpoint.staging import DefaultStager

        stager = _stagers[on_gpu] = DefaultStager(_options(on_gpu))
    # Staging copies are memory-bound. Each copy_ splits across OpenMP threads that wait for
    # one another at a barrier; when the cores are shared (DDP ranks, data loaders, other
    # jobs) a descheduled thread holds the whole copy up: 200 MB took 190-640 ms on a busy
    # 2-core machine where one thread took 50-170 ms. On idle cores the threads add memory
    # bandwidth (33 ms on two where one took 48). So the copy takes the cores idle right now.
    threads = torch.get_num_threads()
    # With one thread of torch's own (torchrun's ranks run so) there is nothing to ask /proc.
    copying = copy_threads(threads, _runnable_elsewhere(), _cores()) if threads > 1 else 1
    torch.set_num_threads(copying)
    try:
        return stager.stage(state)
    finally:
        torch.set_num_threads(threads)


def copy_threads(most: int, elsewhere: int | None, cores: int) -> int:
    """Intra-op threads for a staging copy: torch's own number (``most``) at the most, and no
    more than the cores that no runnable thread of another process wants (``elsewhere``).
    One when that is not known."""
    if elsewhere is None:
        return 1
    return max(1, min(most, cores - elsewhere))


def _runnable_elsewhere() -> int | None:
    """Threads of other processes runnable at this instant (Linux; None elsewhere). This
    process's own are left out: the caller, and OpenMP's threads, which spin for a while
    after each parallel region, are the ones the copy runs on."""
    try:
        # The fourth field ("3/121") counts the threads runnable now, where the load
        # average is a mean over the last minute.
        with open("/proc/loadavg") as f:
            runnable = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/stat") as f:
                own += f.read().rpartition(")")[2].split()[0] == "R"
    except (OSError, ValueError, IndexError):
        return None
    return max(0, runnable - own)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _options(on_gpu: bool) -> Any:
    from torch.distributed.checkpoint.staging import StagingOptions

    return StagingOptions(
        # Pinned memory and non-blocking copies speed up copies from a GPU; pinning CPU
        # tensors' copies would only start CUDA in a job that trains on the CPU.
        use_pinned_memory=on_gpu,
        use_non_blocking_copy=on_gpu,
        # The write runs on a thread of this process: shared memory is for a writer process.
        use_shared_memory=False,
        # Staged before save returns: training may change its tensors as soon as it does.
        use_async_staging=False,
    )


def _has_gpu_tensor(state: Any) -> bool:
    import torch

    if isinstance(state, torch.Tensor):
        return state.device.type not in ("cpu", "meta")
    if isinstance(state, dict):
        return any(_has_gpu_tensor(v) for v in state.values())
    if isinstance(state, list | tuple):
        return any(_has_gpu_tensor(v) for v in state)
    return False


def release() -> None:
    """Free the CPU copies kept for the next save (no save may be pending)."""
    while _stagers:
        _stagers.popitem()[1].close()
