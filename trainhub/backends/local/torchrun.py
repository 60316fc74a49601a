"""Pure builders for the torchrun command lines and rank environments of a local job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from trainhub.backends.local.readonly import wrap
from trainhub.jobs.directory import JobDir
from trainhub.jobs.environment import (
    admin_allowed,
    inherited,
    job_environment,
    pip_into,
    pip_layer,
)
from trainhub.jobs.spec import JobSpec


def torchrun_argv(
    python: str,
    bundle: str,
    *,
    workers: int,
    node_rank: int,
    nproc_per_worker: int,
    master_port: int,
    run_id: str,
) -> list[str]:
    """One torchrun agent per worker; all workers of a local job rendezvous on loopback."""
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_worker}",
        "--max-restarts=0",
        f"--rdzv-id={run_id}",
    ]
    if workers == 1:
        argv += ["--nnodes=1", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{master_port}"]
    else:
        argv += [
            f"--nnodes={workers}",
            f"--node-rank={node_rank}",
            "--rdzv-backend=static",
            "--master-addr=127.0.0.1",
            f"--master-port={master_port}",
        ]
    return [*argv, "-m", "trainhub.rank.runner", bundle]


def single_process_env(master_port: int, run_id: str) -> dict[str, str]:
    """The environment torchrun would give the only rank of a one-process job.

    Such a job is started directly: torchrun's agent would only add a second PyTorch import
    to the start-up, and the supervisor already watches, stops and classifies the process.
    """
    return {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "GROUP_RANK": "0",
        "ROLE_RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_WORLD_SIZE": "1",
        "ROLE_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": run_id,
    }


class LaunchPlan(TypedDict):
    """What to start for one attempt: the argv and env of its torchrun agents (or of the rank
    itself, for a one-process job)."""

    agents: list[dict[str, Any]]


def launch_plan(
    python: str,
    base_env: Mapping[str, str],
    spec: JobSpec,
    *,
    job_id: str,
    job_dir: str,
    bundle: str,
    attempt: int,
    assigned_gpus: Sequence[int],
    port: int,
    resume_from: str | None,
) -> LaunchPlan:
    """argv and environment of each process to start for one attempt; each starts with the
    job's read-only datasets behind read-only mounts (:mod:`~trainhub.backends.local.readonly`)."""
    res = spec.resources
    run_id = f"{job_id}-{attempt}"
    datasets = {d.name: d.path for d in spec.datasets if d.path is not None}
    read_only = [d.path for d in spec.datasets if d.path is not None and d.read_only]
    slices = gpu_slices(assigned_gpus, res.workers, res.gpus_per_worker)
    plan = LaunchPlan(agents=[])
    for node_rank in range(res.workers):
        env = rank_environment(
            base_env,
            spec,
            job_id=job_id,
            job_dir=job_dir,
            attempt=attempt,
            gpus=slices[node_rank],
            resume_from=resume_from,
            dataset_paths=datasets,
        )
        if res.world_size == 1:
            env.update(single_process_env(port, run_id))
            argv = [python, "-m", "trainhub.rank.runner", bundle]
            plan["agents"].append({"argv": wrap(python, job_dir, read_only, argv), "env": env})
            continue
        argv = torchrun_argv(
            python,
            bundle,
            workers=res.workers,
            node_rank=node_rank,
            nproc_per_worker=res.ranks_per_worker,
            master_port=port,
            run_id=run_id,
        )
        plan["agents"].append({"argv": wrap(python, job_dir, read_only, argv), "env": env})
    return plan


def gpu_slices(assigned: Sequence[int], workers: int, per_worker: int) -> list[list[int]]:
    """Split the job's GPUs between its workers, in order."""
    return [list(assigned[i * per_worker : (i + 1) * per_worker]) for i in range(workers)]


def rank_environment(
    base: Mapping[str, str],
    spec: JobSpec,
    *,
    job_id: str,
    job_dir: str,
    attempt: int,
    gpus: Sequence[int],
    resume_from: str | None,
    dataset_paths: Mapping[str, str],
) -> dict[str, str]:
    env = inherited(base, admin_allowed(base))
    env.update(
        job_environment(
            spec.env,
            job_id=job_id,
            job_dir=job_dir,
            attempt=attempt,
            resume_from=resume_from,
            dataset_paths=dataset_paths,
        )
    )
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    layer = JobDir(job_dir).pip_prefix
    env.update(pip_layer(layer, env))  # what the job's %pip installed
    env.update(pip_into(layer))  # and what its ranks install themselves
    return env
