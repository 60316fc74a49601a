"""A sharded checkpoint saved by 2 real torchrun ranks loads in jobs of 1 and of 3 ranks.

The state holds a DTensor sharded along dim 0 (each rank owns a different slice), a module
replicated on every rank, and a plain value; loading fills the new job's own shards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from trainhub.checkpoint.layout import list_checkpoints
from trainhub.jobs.directory import JobDir

ROWS = 1200  # divides by 2 and by 3, so every rank of either job owns a slice
WORKER = textwrap.dedent(f"""
    import os, sys, torch, torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    import trainhub.checkpoint as ckpt

    mode = sys.argv[1]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    rows = {ROWS} // world

    def table(local):
        return DTensor.from_local(local, mesh, [Shard(0)], run_check=False)

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    if mode == "save":
        mine = torch.arange(rank * rows, (rank + 1) * rows, dtype=torch.float32)
        state = {{"table": table(mine), "model": model, "step": 41}}
        ckpt.save(state, 41, sharded=True, async_=True).wait()
    else:
        with torch.no_grad():
            model.weight.zero_()
        state = {{"table": table(torch.full((rows,), -1.0)), "model": model, "step": 0}}
        assert ckpt.resume_step() == 42
        ckpt.load(into=state)
        want = torch.arange(rank * rows, (rank + 1) * rows, dtype=torch.float32)
        assert torch.equal(state["table"].to_local(), want), state["table"].to_local()[:5]
        torch.manual_seed(0)
        assert torch.equal(model.weight, torch.nn.Linear(3, 2).weight)
        assert state["step"] == 41
    print(f"{{mode}} rank {{rank}} of {{world}} ok", flush=True)
    dist.destroy_process_group()
""")


def _torchrun(script: Path, ranks: int, mode: str, job: JobDir) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_")}
    env |= {"TRAINHUB_JOB_DIR": str(job.root), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={ranks}",
            str(script),
            mode,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(ranks):
        assert f"{mode} rank {rank} of {ranks} ok" in done.stdout, done.stdout


def test_two_rank_checkpoint_loads_in_one_and_three_ranks(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    job = JobDir(tmp_path / "job").create()
    _torchrun(script, 2, "save", job)
    (info,) = list_checkpoints(job.checkpoints)
    assert info.step == 41 and info.format == "dcp" and info.world_size == 2

    for ranks in (1, 3):
        _torchrun(script, ranks, "load", job)
    # Read back outside any job too: the whole table, from both ranks' files.
    import trainhub.checkpoint as ckpt

    state = {"table": torch.zeros(ROWS)}
    ckpt.load(info, into=state)
    assert torch.equal(state["table"], torch.arange(ROWS, dtype=torch.float32))
