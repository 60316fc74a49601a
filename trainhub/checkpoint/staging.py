"""Staging for async saves: the copy of the state, in CPU memory, that a background write
reads while training changes its tensors. torch.distributed.checkpoint's ``DefaultStager``
makes it: it keeps each tensor's CPU copy from one save to the next (fresh memory costs page
faults, and pinning for GPU tensors, that would lengthen every stall), keeps views of one
storage (tied weights) one storage, and copies DTensors with their placement. Saves run one
at a time (``saving.wait_all`` before staging), so a copy is never refilled while a write
still reads it. torch is imported inside the functions."""

from __future__ import annotations

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
    # Staging copies are memory-bound. With torch's default of one intra-op thread per core,
    # each copy_ splits across OpenMP threads that wait for one another at a barrier; when
    # the cores are shared (DDP ranks, data loaders, other jobs) a descheduled thread holds
    # the whole copy up: 200 MB took 190-640 ms on a busy 2-core machine where one thread
    # took 50-170 ms (about 25 ms idle either way). So the copy runs on one thread.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return stager.stage(state)
    finally:
        torch.set_num_threads(threads)


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
