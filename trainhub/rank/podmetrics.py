"""A job pod's GPU and process metrics, sampled by the pod's first process (trainhub.rank.pod).

On Kubernetes no supervisor shares a machine with the ranks: the first process of each
worker's pod runs the local supervisor's MetricsSampler, into the job directory on the shared
volume, so the same files (``metrics/gpu.jsonl``, ``metrics/system.jsonl``) feed the same
charts and usage figures. The device plugin shows a pod its own GPUs only, as NVML indices
0..n-1; worker w's are written as GPUs w·n .. w·n+n-1 so that each of the job's GPUs keeps a
series of its own (its ``uuid`` says which device it is), and each pod's host record carries
the pod's hostname. Every write is one appended line, so the pods share the files.

Worker 0's pod also reads the scalars of the job's TensorBoard event files into its training
scalars, as the local supervisor does (:mod:`trainhub.metrics.tensorboard`): the files are on
the shared volume, so one pod reads them all, and only those begun after it started: the pods
of an earlier attempt read theirs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from trainhub.metrics.sampler import MetricsSampler


class PodMetrics(NamedTuple):
    job_id: str
    job_dir: str
    worker: int
    gpus: int
    ranks: int
    attempt: int


def pod_metrics(gpus: int, ranks: int, environ: Mapping[str, str]) -> PodMetrics | None:
    """What this pod samples, from the environment the Job gives it; None outside a job."""
    job_id, job_dir = environ.get("TRAINHUB_JOB_ID"), environ.get("TRAINHUB_JOB_DIR")
    if not job_id or not job_dir:
        return None
    worker, attempt = environ.get("NODE_RANK", "0"), environ.get("TRAINHUB_ATTEMPT", "0")
    if not worker.isdigit():
        raise ValueError(f"NODE_RANK must be a worker's index, got {worker!r}")
    if not attempt.isdigit():
        raise ValueError(f"TRAINHUB_ATTEMPT must be an attempt's number, got {attempt!r}")
    return PodMetrics(job_id, job_dir, int(worker), gpus, ranks, int(attempt))


def start(gpus: int, ranks: int, environ: Mapping[str, str] = os.environ) -> MetricsSampler | None:
    """Start sampling this pod (a thread), or None when it is not a job's pod."""
    what = pod_metrics(gpus, ranks, environ)
    if what is None:
        return None
    from trainhub.jobs.directory import JobDir
    from trainhub.metrics.ranks import JobRanks
    from trainhub.metrics.sampler import MetricsSampler
    from trainhub.metrics.tensorboard import job_roots

    jobdir = JobDir(what.job_dir)
    return MetricsSampler(
        jobdir,
        range(what.gpus),
        JobRanks(what.job_id, what.ranks),
        first_gpu=what.worker * what.gpus,
        event_fields={"worker": what.worker},
        tensorboard_roots=job_roots(jobdir) if what.worker == 0 else [],
        tensorboard_from_now=True,
        attempt=lambda: what.attempt,
    ).start()
