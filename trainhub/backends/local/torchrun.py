"""Pure builders for the torchrun command lines and rank environments of a local job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from trainhub.backends.elastic_agent import AGENT_MODULE, ELASTIC_ENV, rdzv_conf
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

# An elastic job's agents: the store is hosted by trainhub (rendezvous.py), so any agent may
# leave; the agents start together, so a round waits 1 s past MIN for more.
ELASTIC_RDZV_CONF = rdzv_conf(last_call=1, store_elsewhere=True)


def torchrun_argv(
    python: str,
    bundle: str,
    *,
    workers: int,
    node_rank: int,
    nproc_per_worker: int,
    master_port: int,
    run_id: str,
    elastic: tuple[int, int] | None = None,
    max_restarts: int = 0,
) -> list[str]:
    """One torchrun agent per worker; all workers of a local job rendezvous on loopback.
    ``elastic``: (MIN, MAX), torchrun's ``--nnodes MIN:MAX`` with a c10d rendezvous whose
    store trainhub hosts at ``master_port``; ``max_restarts``: restarts after a lost worker
    (membership changes restart the workers without counting)."""
    argv = [
        python,
        "-m",
        # An elastic agent keeps its rendezvous' account in the job directory (rank/agent.py).
        "torch.distributed.run" if elastic is None else AGENT_MODULE,
        f"--nproc-per-node={nproc_per_worker}",
        f"--max-restarts={max_restarts}",
        f"--rdzv-id={run_id}",
    ]
    if elastic is not None:
        argv += [
            f"--nnodes={elastic[0]}:{elastic[1]}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{master_port}",
            f"--rdzv-conf={ELASTIC_RDZV_CONF}",
        ]
    elif workers == 1:
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


@dataclass(frozen=True)
class Attempt:
    """One attempt of a job as its processes start: the interpreter and environment they start
    from, the job, its directory and bundle, the attempt's number, its rendezvous port and the
    checkpoint it resumes from."""

    python: str
    base_env: Mapping[str, str]
    spec: JobSpec
    job_id: str
    job_dir: str
    bundle: str
    number: int
    port: int
    resume_from: str | None

    @property
    def run_id(self) -> str:
        return f"{self.job_id}-{self.number}"

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` started with the job's read-only datasets behind read-only mounts."""
        read_only = [d.path for d in self.spec.datasets if d.path is not None and d.read_only]
        return wrap(self.python, self.job_dir, read_only, argv)


def launch_plan(
    attempt: Attempt, assigned_gpus: Sequence[int], *, workers: int | None = None
) -> LaunchPlan:
    """argv and environment of each process to start for one attempt; each starts with the
    job's read-only datasets behind read-only mounts (:mod:`~trainhub.backends.local.readonly`).
    ``workers``: how many agents an elastic job without GPUs starts (default its fewest)."""
    res = attempt.spec.resources
    plan = LaunchPlan(agents=[])
    if res.elastic:  # as many agents as granted; the supervisor adds and stops more
        per = res.gpus_per_worker
        for i in range(len(assigned_gpus) // per if per else workers or res.fewest_workers):
            plan["agents"].append(elastic_agent(attempt, assigned_gpus[i * per : (i + 1) * per]))
        return plan
    slices = gpu_slices(assigned_gpus, res.workers, res.gpus_per_worker)
    for node_rank in range(res.workers):
        env = rank_environment(attempt, slices[node_rank])
        if res.world_size == 1:
            env.update(single_process_env(attempt.port, attempt.run_id))
            argv = [attempt.python, "-m", "trainhub.rank.runner", attempt.bundle]
        else:
            argv = torchrun_argv(
                attempt.python,
                attempt.bundle,
                workers=res.workers,
                node_rank=node_rank,
                nproc_per_worker=res.ranks_per_worker,
                master_port=attempt.port,
                run_id=attempt.run_id,
            )
        plan["agents"].append({"argv": attempt.argv(argv), "env": env})
    return plan


def elastic_agent(attempt: Attempt, gpus: Sequence[int]) -> dict[str, Any]:
    """argv and environment of one agent of an elastic job (the first ones, or one that joins
    later: every agent is alike, torchrun's rendezvous gives each its ranks)."""
    spec = attempt.spec
    res = spec.resources
    env = rank_environment(attempt, gpus)
    env.update(ELASTIC_ENV)
    argv = torchrun_argv(
        attempt.python,
        attempt.bundle,
        workers=res.workers,
        node_rank=0,
        nproc_per_worker=res.ranks_per_worker,
        master_port=attempt.port,
        run_id=attempt.run_id,
        elastic=(res.fewest_workers, res.workers),
        # A lost worker restarts the others' ranks, as often as the job's retries allow.
        max_restarts=spec.retry.preempted + spec.retry.infrastructure,
    )
    return {"argv": attempt.argv(argv), "env": env}


def gpu_slices(assigned: Sequence[int], workers: int, per_worker: int) -> list[list[int]]:
    """Split the job's GPUs between its workers, in order."""
    return [list(assigned[i * per_worker : (i + 1) * per_worker]) for i in range(workers)]


def rank_environment(attempt: Attempt, gpus: Sequence[int]) -> dict[str, str]:
    """The environment of one worker's processes: what the admin lets through of the base,
    trainhub's variables, only ``gpus`` visible, and the job's own pip layer."""
    env = inherited(attempt.base_env, admin_allowed(attempt.base_env))
    env.update(
        job_environment(
            attempt.spec.env,
            job_id=attempt.job_id,
            job_dir=attempt.job_dir,
            attempt=attempt.number,
            resume_from=attempt.resume_from,
            dataset_paths={d.name: d.path for d in attempt.spec.datasets if d.path is not None},
        )
    )
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    layer = JobDir(attempt.job_dir).pip_prefix
    env.update(pip_layer(layer, env))  # what the job's %pip installed
    env.update(pip_into(layer))  # and what its ranks install themselves
    return env
