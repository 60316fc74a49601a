"""Small helpers so the same notebook runs interactively (one process) and as a job (torchrun).

rank, world = trainhub.rank.distributed.init()      # nccl on GPUs, gloo on CPU
model = trainhub.rank.distributed.wrap(model)       # DDP only when there is a process group
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any


def in_job() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def rank() -> int:
    return int(os.environ.get("RANK", 0))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", 1))


def is_main() -> bool:
    return rank() == 0


def device() -> Any:
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device("cpu")


def init(backend: str | None = None, timeout_seconds: float = 600) -> tuple[int, int]:
    """Join the job's process group; returns (rank, world size). A no-op outside a job."""
    import torch
    import torch.distributed as dist

    if not in_job() or not dist.is_available():
        return 0, 1
    if not dist.is_initialized():
        if backend is None:
            backend = os.environ.get("TRAINHUB_DIST_BACKEND") or (
                "nccl" if torch.cuda.is_available() else "gloo"
            )
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend=backend, timeout=timedelta(seconds=timeout_seconds))
    return dist.get_rank(), dist.get_world_size()


def wrap(model: Any, **ddp_kwargs: Any) -> Any:
    """DistributedDataParallel around ``model`` when a process group exists, else ``model``."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return model
    if torch.cuda.is_available():
        ddp_kwargs.setdefault("device_ids", [int(os.environ.get("LOCAL_RANK", 0))])
    return torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)


def barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def all_reduce_mean(value: float) -> float:
    """The mean of a Python number over all ranks (the number itself outside a job)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return float(value)
    t = torch.tensor([float(value)], device=device())
    dist.all_reduce(t)
    return float(t.item()) / dist.get_world_size()


def shutdown() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
