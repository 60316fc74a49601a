"""Logs while pods live: JobService.log reads a rank's pod log until the rank opens its own log
in the job directory, and the job directory alone once the pods are gone.

kwok plays the pods and has no container output: for a pod bound to a kwok node the apiserver
answers 404 for ``pods/log``, and for a pod not yet bound to a node it answers an empty log.
These tests assert exactly that behaviour through the backend and the service.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.test_backend import Team, applied_team, wait_for
from trainhub.jobs.directory import JobDir
from trainhub.jobs.states import JobState


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    yield from applied_team(k8s_namespace, tmp_path)


def _pod_of_worker(t: Team, job_id: str, worker: int) -> Any:
    return next(
        p
        for p in t.pods(job_id)
        if p.metadata.annotations["batch.kubernetes.io/job-completion-index"] == str(worker)
    )


@pytest.fixture
def a100_with_room_for_one_worker(k8s_namespace: Any) -> Iterator[None]:
    """Pods outside any team take all of one A100 node and 6 of the other's 8 GPUs."""
    core = client.CoreV1Api(k8s_namespace.api)
    ns = f"{k8s_namespace.name}-blk"
    core.create_namespace({"metadata": {"name": ns}})
    wait_for(
        "default account",
        lambda: (
            core.list_namespaced_service_account(ns, field_selector="metadata.name=default").items
        ),
    )
    for node, gpus in (("kwok-a100-0", 8), ("kwok-a100-1", 6)):
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": f"hold-{node}"},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.invalid/hold:1",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                },
            },
        )
    wait_for(
        "holders running",
        lambda: all(p.status.phase == "Running" for p in core.list_namespaced_pod(ns).items),
    )
    yield
    core.delete_namespace(ns, propagation_policy="Background")
    wait_for("holders gone", lambda: not core.list_namespaced_pod(ns).items)


def test_running_kwok_pod_has_no_log_and_the_job_directory_wins(team: Team) -> None:
    job_id = team.submit("live", workers=1, gpus=1)
    team.wait_state(job_id, JobState.RUNNING)
    pod = _pod_of_worker(team, job_id, 0)
    # What the apiserver says for a kwok pod's log: its node serves none.
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(team.api).read_namespaced_pod_log(pod.metadata.name, team.ns)
    assert info.value.status == 404
    # Mapped to "nothing live": the service reads the (still empty) job directory, no error.
    assert team.backend.live_log(job_id, 0, 0, 4096) is None
    assert team.service.log(job_id, user="ada", rank=0) == (b"", 0)
    # Once the rank has its own log file, that is what the service serves.
    jobdir = JobDir(team.service.describe(job_id, user="ada").job_dir)
    jobdir.rank_log(0).parent.mkdir(parents=True, exist_ok=True)
    jobdir.rank_log(0).write_bytes(b"step 1 loss 0.5\nstep 2 loss 0.4\n")
    assert team.service.log(job_id, user="ada", rank=0) == (
        b"step 1 loss 0.5\nstep 2 loss 0.4\n",
        32,
    )
    assert team.service.log(job_id, user="ada", rank=0, offset=16) == (b"step 2 loss 0.4\n", 32)


def test_each_rank_reads_the_pod_of_its_worker(
    team: Team,
    a100_with_room_for_one_worker: None,
) -> None:
    # 2 workers x 2 GPUs: ranks 0-1 run in worker 0's pod, ranks 2-3 in worker 1's.
    job_id = team.submit("split", workers=2, gpus=2)
    team.wait_state(job_id, JobState.RUNNING)
    pods = wait_for(
        "one pod bound, one waiting for a node",
        lambda: (
            (ps := team.pods(job_id))
            and len(ps) == 2
            and sorted(bool(p.spec.node_name) for p in ps) == [False, True]
            and ps
        ),
    )
    bound = next(
        int(p.metadata.annotations["batch.kubernetes.io/job-completion-index"])
        for p in pods
        if p.spec.node_name
    )
    waiting = 1 - bound
    for rank in (2 * bound, 2 * bound + 1):  # on a kwok node: 404, nothing live
        assert team.backend.live_log(job_id, rank, 0, 4096) is None
    for rank in (2 * waiting, 2 * waiting + 1):  # not on a node yet: the apiserver's empty log
        assert team.backend.live_log(job_id, rank, 0, 4096) == (b"", 0)
        assert team.backend.live_log(job_id, rank, 7, 4096) == (b"", 7)
        assert team.service.log(job_id, user="ada", rank=rank, offset=7) == (b"", 7)
    assert team.backend.live_log(job_id, 4, 0, 4096) is None  # no worker 2
    team.service.cancel(job_id, user="ada")


def test_log_falls_back_to_the_job_directory_after_the_job_is_deleted(team: Team) -> None:
    job_id = team.submit("gone", workers=1, gpus=2)
    team.wait_state(job_id, JobState.RUNNING)
    jobdir = JobDir(team.service.describe(job_id, user="ada").job_dir)
    jobdir.rank_log(1).parent.mkdir(parents=True, exist_ok=True)
    jobdir.rank_log(1).write_bytes(b"rank 1 says hello\n")
    team.delete_job(job_id, wait=False)
    wait_for("pods gone", lambda: not team.pods(job_id))
    assert team.backend.live_log(job_id, 0, 0, 4096) is None
    assert team.backend.live_log(job_id, 1, 0, 4096) is None
    assert team.service.log(job_id, user="ada", rank=1) == (b"rank 1 says hello\n", 18)
    assert team.service.log(job_id, user="ada", rank=0) == (b"", 0)  # rank 0 never wrote
    assert team.service.describe(job_id, user="ada").state == JobState.FAILED  # the Job vanished
