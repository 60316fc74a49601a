"""Pure builders of one job's Kubernetes objects: an Indexed Job (one pod per worker, torchrun
in each, suspended until Kueue admits it) and the headless Service its workers rendezvous on."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from trainhub.backends.elastic_agent import AGENT_MODULE, ELASTIC_ENV, rdzv_conf
from trainhub.backends.kubernetes.identity import USER_LABEL, owner_label
from trainhub.backends.kubernetes.names import (
    GPU,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    ROLE_LABEL,
    TEAM_LABEL,
    WORKER_ROLE,
    priority_class_name,
)
from trainhub.jobs.environment import job_environment
from trainhub.jobs.models import JobRecord
from trainhub.jobs.ownership import RunAs
from trainhub.jobs.placement import Request
from trainhub.jobs.quantities import format_bytes, format_cpu, parse_quantity
from trainhub.rank.pod import STOPPED_EXIT
from trainhub.teams import Pool, Team, TeamDataset

JOB_ID_LABEL = "trainhub.io/job-id"
PIPELINE_RUN_LABEL = "trainhub.io/pipeline-run"  # on a pipeline run's steps
SWEEP_LABEL = "trainhub.io/sweep"  # on a sweep's trials: kubectl get jobs -l trainhub.io/sweep=<id>
ANNOTATION = "trainhub.io/"  # prefix of the record fields kept on the Job
MASTER_PORT = 29500
# Kueue's switch for an elastic batch/v1 Job (feature gate ElasticJobsViaWorkloadSlices): a
# change of its parallelism is admitted as a new Workload slice, not a new Workload.
ELASTIC_JOB = "kueue.x-k8s.io/elastic-job"
WORKERS_ANNOTATION = "trainhub.io/workers"  # an elastic job's "MIN:MAX"
# An elastic agent's restarts: each membership change that loses a peer costs one.
ELASTIC_RESTARTS = 50
CONTAINER = "trainer"
# STOPPED_EXIT: how trainhub.rank.pod ends a pod stopped from outside (128 + SIGTERM), and only
# such a pod; ignored by the Job's podFailurePolicy, which fails the Job on any other non-zero
# exit.
# Who a job's pods run as where nobody says (no controller: a team's one shared user).
# Restricted Pod Security: never root, whatever the image says.
RUN_AS = RunAs(1000, 1000)
# The curated images' home (images/base), where pods get a fresh directory of their own:
# writable whatever user they run as (the image's belongs to the image's user).
HOME = "/home/jovyan"
DEFAULT_MEMORY = "8Gi"
# Seconds from SIGTERM to SIGKILL: the ranks' stop callbacks save a checkpoint meanwhile.
STOP_GRACE_SECONDS = 30
# The pod's first process leaves this long before the kubelet's SIGKILL (trainhub.rank.pod).
STOP_MARGIN_SECONDS = 3
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]+")


def label_value(text: str) -> str:
    """Any text as a valid label value (the exact text goes into an annotation)."""
    value = _LABEL_VALUE.sub("-", text)[:63]
    return value.strip("-_.") or "none"


def torchrun_args(record: JobRecord, service: str) -> list[str]:
    res = record.spec.resources
    if res.elastic:
        return elastic_torchrun_args(record, service)
    master = "127.0.0.1" if res.workers == 1 else f"{record.id}-0.{service}"
    return [
        "torchrun",
        f"--nnodes={res.workers}",
        f"--nproc-per-node={res.ranks_per_worker}",
        "--node-rank=$(NODE_RANK)",
        "--rdzv-backend=static",
        f"--master-addr={master}",
        f"--master-port={MASTER_PORT}",
        "--max-restarts=0",
        f"--rdzv-id={record.id}-{record.attempt}",
        "-m",
        "trainhub.rank.runner",
        str(PurePosixPath(record.job_dir) / "bundle"),
    ]


def elastic_torchrun_args(record: JobRecord, service: str) -> list[str]:
    """torchrun's elastic agent: ``--nnodes MIN:MAX`` on a c10d rendezvous whose store worker
    0 hosts (torch finds its own address behind ``<job>-0.<service>``); no node rank, the
    rendezvous numbers the workers of each round. A membership change restarts the ranks from
    the latest checkpoint; a lost peer counts as a restart too, hence the budget."""
    res = record.spec.resources
    return [
        "python",
        "-m",
        AGENT_MODULE,  # torchrun, keeping its rendezvous' account in the job directory
        f"--nnodes={res.worker_range}",
        f"--nproc-per-node={res.ranks_per_worker}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={record.id}-0.{service}:{MASTER_PORT}",
        # Pods of a grown size start seconds apart: a round waits 5 s past MIN for them.
        f"--rdzv-conf={rdzv_conf(last_call=5)}",
        f"--max-restarts={ELASTIC_RESTARTS}",
        f"--rdzv-id={record.id}-{record.attempt}",
        "-m",
        "trainhub.rank.runner",
        str(PurePosixPath(record.job_dir) / "bundle"),
    ]


def elastic_annotations(record: JobRecord) -> dict[str, str]:
    """An elastic job's Job: Kueue's workload slices resize it in place (its parallelism),
    and the controller reads its range here (trainhub.backends.kubernetes.elastic)."""
    res = record.spec.resources
    if not res.elastic:
        return {}
    return {ELASTIC_JOB: "true", WORKERS_ANNOTATION: res.worker_range}


def container_command(record: JobRecord, service: str, grace: int) -> list[str]:
    """torchrun under trainhub.rank.pod, which ends a stopped pod with 143 and samples the
    pod's GPUs and ranks into the job directory (see there)."""
    res = record.spec.resources
    wait = max(grace - STOP_MARGIN_SECONDS, 1)
    return [
        "python",
        "-m",
        "trainhub.rank.pod",
        f"--grace={wait}",
        "--metrics",
        f"--gpus={res.gpus_per_worker or int(res.gpu_share is not None)}",
        f"--ranks={res.ranks_per_worker}",
        *torchrun_args(record, service),
    ]


def _dataset_mounts(
    record: JobRecord, team: Team, readable: Mapping[str, TeamDataset]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """(volumes, mounts, paths) for the job's datasets: one asked for by name is mounted
    read-only (the volume and the mount) at /datasets/<name>; a path of the user's own must
    already be on the shared volume."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    paths: dict[str, str] = {}
    shared = PurePosixPath(team.shared_volume.mount_path)
    for ds in record.spec.datasets:
        known = readable.get(ds.name) if ds.catalog else None
        if known is None:
            if ds.catalog:
                raise ValueError(f"dataset {ds.name} is not one team {team.name} may read")
            assert ds.path is not None
            paths[ds.name] = ds.path  # checked by the backend to lie on the shared volume
            continue
        target = team.dataset_mount(ds.name)
        if known.claim is not None:
            volume = f"dataset-{ds.name}".replace("_", "-")
            volumes.append(
                {
                    "name": volume,
                    "persistentVolumeClaim": {"claimName": known.claim, "readOnly": True},
                }
            )
            mount = {"name": volume, "mountPath": target, "readOnly": True}
            if known.sub_path:
                mount["subPath"] = known.sub_path
        else:
            assert known.path is not None
            mount = {
                "name": "shared",
                "mountPath": target,
                "readOnly": True,
                "subPath": str(PurePosixPath(known.path).relative_to(shared)),
            }
        mounts.append(mount)
        paths[ds.name] = target
    return volumes, mounts, paths


def worker_request(record: JobRecord) -> Request:
    """What each worker's pod asks the scheduler for (the defaults filled in)."""
    res = record.spec.resources
    return Request(
        workers=res.workers,
        cpu=res.cpu if res.cpu is not None else float(res.ranks_per_worker),
        memory=res.memory_bytes if res.memory_bytes is not None else parse_quantity(DEFAULT_MEMORY),
        gpus=res.gpus_per_worker,
    )


def _resources(record: JobRecord, pool: Pool) -> dict[str, Any]:
    res = record.spec.resources
    request = worker_request(record)
    cpu, memory = format_cpu(request.cpu), format_bytes(request.memory)
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    limits: dict[str, str] = {"memory": memory}
    if res.gpus_per_worker:
        requests[GPU] = limits[GPU] = str(res.gpus_per_worker)
    if res.gpu_share is not None:
        # Only a job that asks for a share requests the pool's shared resource (submit placed
        # it on the pool whose share it is): no other job's manifest ever names it.
        if pool.shared_resource is None:
            raise ValueError(f"pool {pool.name} does not share its GPUs ({res.gpu_share} asked)")
        requests[pool.shared_resource] = limits[pool.shared_resource] = "1"
    return {"requests": requests, "limits": limits}


def _annotations(record: JobRecord) -> dict[str, str]:
    """What the JobRecord holds and a Job does not: kept on the Job itself."""
    values: dict[str, Any] = {
        "user": record.user,
        "job-dir": record.job_dir,
        "created-at": repr(record.created_at),
        "attempt": str(record.attempt),
        "priority": record.spec.priority.value,
        "retries": json.dumps(record.retries, sort_keys=True),
    }
    if record.resubmitted_from:
        values["resubmitted-from"] = record.resubmitted_from
    return {ANNOTATION + k: v for k, v in values.items()}


def service_manifest(record: JobRecord, team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": record.id,
            "namespace": team.namespace,
            # the owner: a session may delete or change only its own user's (policies.py)
            "labels": {
                JOB_ID_LABEL: record.id,
                TEAM_LABEL: team.name,
                USER_LABEL: owner_label(record.user),
            },
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # workers find each other before any is Ready
            "selector": {JOB_ID_LABEL: record.id},
            "ports": [{"name": "rendezvous", "port": MASTER_PORT, "targetPort": MASTER_PORT}],
        },
    }


def job_manifest(
    record: JobRecord,
    *,
    team: Team,
    pool: Pool,
    image: str,
    resume_from: str | None = None,
    datasets: Mapping[str, TeamDataset] | None = None,
    stop_grace: int = STOP_GRACE_SECONDS,
    run_as: RunAs = RUN_AS,
) -> dict[str, Any]:
    """``datasets``: those the team may read by name (default: its own); ``stop_grace``: the
    pods' terminationGracePeriodSeconds; ``run_as``: the job's owner's ids (where a controller
    runs each member has their own, and the admission policy holds a session to its own)."""
    spec = record.spec
    res = spec.resources
    shared = PurePosixPath(team.shared_volume.mount_path)
    job_dir = PurePosixPath(record.job_dir)
    if not job_dir.is_relative_to(shared):
        raise ValueError(
            f"job directory {record.job_dir} is not on team {team.name}'s shared volume {shared}"
        )
    labels = {
        JOB_ID_LABEL: record.id,
        USER_LABEL: owner_label(record.user),
        TEAM_LABEL: team.name,
        QUEUE_LABEL: team.local_queue,
        PRIORITY_LABEL: priority_class_name(spec.priority.value),
    }
    if record.sweep_id is not None:  # a sweep id is a valid label value (spec.SweepRef)
        labels[SWEEP_LABEL] = record.sweep_id
    if record.pipeline_run is not None:  # a valid label value too (spec.PipelineRef)
        labels[PIPELINE_RUN_LABEL] = record.pipeline_run
    readable = team.datasets if datasets is None else datasets
    ds_volumes, ds_mounts, ds_paths = _dataset_mounts(record, team, readable)
    env = job_environment(
        spec.env,
        job_id=record.id,
        job_dir=record.job_dir,
        attempt=record.attempt,
        resume_from=resume_from,
        dataset_paths=ds_paths,
    )
    container_env: list[dict[str, Any]] = [
        {
            "name": "NODE_RANK",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }
            },
        },
        *({"name": k, "value": v} for k, v in env.items()),
        *({"name": k, "value": v} for k, v in (ELASTIC_ENV if res.elastic else {}).items()),
    ]
    container = {
        "name": CONTAINER,
        "image": image,
        "command": container_command(record, record.id, stop_grace),
        "workingDir": str(job_dir / "bundle"),
        "env": container_env,
        "resources": _resources(record, pool),
        "ports": [{"name": "rendezvous", "containerPort": MASTER_PORT}],
        "volumeMounts": [
            {"name": "shared", "mountPath": str(shared)},
            {"name": "dshm", "mountPath": "/dev/shm"},  # NCCL's shared-memory transport
            {"name": "home", "mountPath": HOME},
            *ds_mounts,
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": stop_grace,
        "subdomain": record.id,  # with the Job's hostnames: <job>-<index>.<service> resolves
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        # No fsGroup and no supplementary group: the kubelet would hand the team volume's files
        # to that group, and a member's files are theirs alone.
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": run_as.user,
            "runAsGroup": run_as.group,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "nodeSelector": dict(pool.node_labels),
        "containers": [container],
        "volumes": [
            {"name": "shared", "persistentVolumeClaim": {"claimName": team.shared_volume.claim}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            {"name": "home", "emptyDir": {}},
            *ds_volumes,
        ],
    }
    if pool.tolerations:  # every job the pool takes, CPU-only ones too: its nodes are tainted
        pod_spec["tolerations"] = [t.manifest() for t in pool.tolerations]
    job_spec: dict[str, Any] = {
        "suspend": True,  # Kueue unsuspends it once the team's quota admits it
        "completionMode": "Indexed",
        # An elastic job starts at MIN: Kueue admits MIN workers' quota, the controller grows it
        # (completions and parallelism together: an Indexed Job resizes so).
        "completions": res.fewest_workers,
        "parallelism": res.fewest_workers,
        "backoffLimit": 0,  # retries are trainhub's (per failure class) and Kueue's (preemption)
        "podFailurePolicy": {
            "rules": [
                # Preemption, eviction, node drain: not the code's fault; told apart from exit
                # codes.
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                # SIGTERM (128 + 15) from outside: the kubelet stopping a pod of a Job that Kueue
                # suspended to preempt it carries no DisruptionTarget condition. trainhub.rank.pod
                # ends a stopped pod with 143 (torchrun alone would exit 1) and no other pod
                # (a rank's own SIGTERM ends torchrun with 1), so a 143 is never the code's own.
                {
                    "action": "Ignore",
                    "onExitCodes": {
                        "containerName": CONTAINER,
                        "operator": "In",
                        "values": [STOPPED_EXIT],
                    },
                },
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": CONTAINER, "operator": "NotIn", "values": [0]},
                },
            ]
        },
        "template": {
            "metadata": {
                "labels": {JOB_ID_LABEL: record.id, TEAM_LABEL: team.name, ROLE_LABEL: WORKER_ROLE}
            },
            "spec": pod_spec,
        },
    }
    if res.elastic:
        # Done once worker 0 is: a torchrun group ends together, and a worker still gated
        # for a larger size Kueue has yet to admit must not keep the Job (or join a finished
        # rendezvous); the Job controller stops the rest.
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    if spec.max_runtime is not None:
        job_spec["activeDeadlineSeconds"] = max(1, int(spec.max_runtime.total_seconds()))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": record.id,
            "namespace": team.namespace,
            "labels": labels,
            "annotations": {**_annotations(record), **elastic_annotations(record)},
        },
        "spec": job_spec,
    }


def owned_by(obj: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with an owner reference to the created ``job`` (deleting the Job removes it)."""
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": False,
    }
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [ref]}}
