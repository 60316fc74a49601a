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
done. With ``async_=True`` training waits only for the copy to CPU memory, made by
torch.distributed.checkpoint's ``DefaultStager`` into the copies kept from the previous save;
writing happens on a background thread, and its errors surface on
the next ``save``/``wait``. Older per-rank sharded checkpoints (``rank-<r>.pt``) still load.

A save the job should make when it is asked to stop (preempted, suspended, cancelled) is
registered with ``on_stop(fn)`` (:mod:`trainhub.checkpoint.stopping`).

Only one process may write a checkpoints directory at a time (rank 0 of one job, or one
interactive session). torch is imported inside the functions that need it.

This module is the facade training code calls; the package's modules hold the parts:
saving (``save``, handles, the background save), staging (async copies), writer (one
checkpoint onto disk), retention (what keep_last/keep_best delete), loading (``latest``,
``load``, ``resume_step``), ranks (who writes, agreement), state (objects <-> state dicts),
environment (the job's directory and settings), layout (on-disk layout and browsing, no
torch), sharded (DCP) and stopping (``on_stop``).
"""

from trainhub.checkpoint.environment import checkpoint_dir
from trainhub.checkpoint.layout import CheckpointInfo
from trainhub.checkpoint.loading import latest, load, resume_step
from trainhub.checkpoint.ranks import CheckpointError
from trainhub.checkpoint.saving import CheckpointHandle, release_staging_memory, save, wait_all
from trainhub.checkpoint.stopping import on_stop

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
