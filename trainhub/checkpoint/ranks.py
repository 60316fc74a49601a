"""The ranks of a checkpoint: which rank this process is, the gloo group that checkpoint
writers and readers share apart from training's, and how the ranks exchange verdicts so all
of them agree on a save's outcome. Without torch.distributed a process is a rank alone; torch
is looked for only once something imported it."""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from typing import Any

from trainhub.checkpoint.environment import env_int
from trainhub.checkpoint.stopping import stop_requested


class CheckpointError(RuntimeError):
    """A save failed, here or on another rank."""

    # Its public name: a rank's failure names the exception's type by module and name.
    __module__ = "trainhub.checkpoint"


@dataclass(frozen=True)
class Ranks:
    rank: int
    world_size: int
    # The gloo group checkpoint writers agree on, None without torch.distributed. Weak:
    # handles users keep must not hold gloo's group past destroy_process_group() into
    # interpreter exit, where its destructor aborts the process.
    group_ref: weakref.ref[Any] | None = None

    @property
    def group(self) -> Any:
        return None if self.group_ref is None else self.group_ref()


# (default group, checkpoint group), weakly held like Ranks.group_ref.
_group_cache: tuple[weakref.ref[Any], weakref.ref[Any]] | None = None


def save_ranks(sharded: bool) -> Ranks:
    """This process's rank, and the group writers agree on when torch.distributed runs."""
    dist = _distributed()
    if dist is not None and dist.get_world_size() > 1:
        if stop_requested() and not sharded:
            # Asked to stop: the other ranks may never join an agreement; rank 0 writes alone.
            return Ranks(dist.get_rank(), dist.get_world_size())
        group = weakref.ref(_checkpoint_group(dist))
        return Ranks(dist.get_rank(), dist.get_world_size(), group)
    env_world = env_int("WORLD_SIZE", 1)
    if sharded and env_world > 1:
        raise CheckpointError(
            "sharded=True needs torch.distributed initialized (init_process_group) so ranks "
            "can agree on the checkpoint"
        )
    # Ranks started by torchrun without a process group: rank 0 alone writes.
    return Ranks(env_int("RANK", 0), env_world)


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


def current_rank() -> int:
    dist = _distributed()
    return dist.get_rank() if dist is not None else env_int("RANK", 0)


def load_group() -> Any:
    """The group a sharded load reads with; None for a process alone."""
    dist = _distributed()
    if dist is None or dist.get_world_size() == 1:
        return None
    return _checkpoint_group(dist)


def gather(ranks: Ranks, payload: Any) -> list[Any]:
    """Every rank's ``payload`` in rank order; only this one's without a group."""
    if ranks.group_ref is None:
        return [payload]
    group = ranks.group
    if group is None:
        raise CheckpointError("the process group was destroyed while a checkpoint was saved")
    import torch.distributed as dist

    out: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(out, payload, group=group)
    return out
