"""Every wait of an admitted job explained (trainhub.backends.kubernetes.waits): from pods and
their events as the API gives them, one sentence naming the worker and the cause, Kubernetes'
message kept; a cause that cannot heal ends the job after the grace period, or at once."""

from __future__ import annotations

from typing import Any

import pytest

from trainhub.backends.kubernetes import waits
from trainhub.jobs.placement import Node, Taint
from trainhub.jobs.states import FailureClass

NOW = 1_700_000_600.0  # 2023-11-14T22:23:20Z
T0 = "2023-11-14T22:13:20Z"  # NOW - 600
T1 = "2023-11-14T22:22:20Z"  # NOW - 60
GI = 2**30


def pod(
    index: int = 0,
    *,
    phase: str = "Pending",
    scheduled: dict[str, Any] | None = None,
    waiting: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": []}
    if scheduled is not None:
        status["conditions"].append({"type": "PodScheduled", **scheduled})
    if waiting is not None:
        status["containerStatuses"] = [
            {"name": "trainer", "image": "registry.invalid/x:1", "state": {"waiting": waiting}}
        ]
    return {
        "metadata": {
            "uid": f"uid-{index}",
            "creationTimestamp": T0,
            "annotations": {waits.INDEX: str(index)},
        },
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": "registry.invalid/x:1",
                    "resources": {"requests": requests or {"cpu": "4", "memory": "16Gi"}},
                }
            ]
        },
        "status": status,
    }


def unschedulable(message: str, since: str = T1, **kw: Any) -> dict[str, Any]:
    return pod(
        scheduled={
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": since,
        },
        **kw,
    )


def event(reason: str, message: str, first: str = T1) -> dict[str, Any]:
    return {"reason": reason, "message": message, "firstTimestamp": first, "lastTimestamp": first}


TAINT = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {trainhub.io/real-node: }, "
    "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: "
    "3 Preemption is not helpful for scheduling."
)
# Kubernetes 1.35's wording: the taint unnamed, a claims note before preemption's part.
TAINT_135 = (
    "0/6 nodes are available: 1 node(s) had untolerated taint(s), 5 node(s) didn't match Pod's "
    "node affinity/selector. no new claims to deallocate, preemption: 0/6 nodes are available: "
    "6 Preemption is not helpful for scheduling."
)
SELECTOR = "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
SHORT = (
    "0/4 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 2 node(s) didn't "
    "match Pod's node affinity/selector. preemption: 0/4 nodes are available: 2 No preemption "
    "victims found for incoming pod, 2 Preemption is not helpful for scheduling."
)


def test_an_untolerated_taint_is_named_and_cannot_heal() -> None:
    only = "0/1 nodes are available: 1 node(s) had untolerated taint {trainhub.io/real-node: }."
    wait = waits.pod_wait(unschedulable(only), [], NOW)
    assert wait is not None and wait.cause == "taint" and not wait.heals and not wait.certain
    assert wait.sentence.startswith(
        "worker 0 cannot be scheduled: the nodes its pool selects are tainted "
        "trainhub.io/real-node (or cordoned), and the pool has no toleration for that"
    )
    assert wait.text().endswith(f"(Kubernetes: {only})")
    assert wait.failure_class == FailureClass.INFRASTRUCTURE
    assert wait.since == NOW - 60
    assert not waits.overdue(wait, 600, NOW) and waits.overdue(wait, 60, NOW)


REAL = Node("real", cpu=16, memory=64 * GI, gpus=2, taints=(Taint("trainhub.io/real-node"),))


def test_a_taint_beside_unlabelled_nodes_is_told_apart_by_the_pools_nodes() -> None:
    # The scheduler counts every node: which reason is this pod's, only its pool's nodes say.
    for message in (TAINT, TAINT_135):
        pending = unschedulable(message)
        unknown = waits.pod_wait(pending, [], NOW)  # nodes not readable
        assert unknown is not None and unknown.cause == "unplaceable" and not unknown.heals
        assert "no node of the cluster both carries the labels its pool selects" in (
            unknown.sentence
        )
        tainted = waits.pod_wait(pending, [], NOW, [REAL])
        assert tainted is not None and tainted.cause == "taint"
        assert "tainted trainhub.io/real-node:NoSchedule (or cordoned)" in tainted.sentence
        none = waits.pod_wait(pending, [], NOW, [])  # the pool's labels select no node
        assert none is not None and none.cause == "selector"
        # The pod tolerates its pool's taint: the taint was another node's (a control
        # plane's); nothing here says it cannot heal.
        tolerated = unschedulable(message)
        tolerated["spec"]["tolerations"] = [{"key": "trainhub.io/real-node", "operator": "Exists"}]
        other = waits.pod_wait(tolerated, [], NOW, [REAL])
        assert other is not None and other.cause == "unschedulable" and other.heals


def test_no_node_with_the_pools_labels_waits_for_one_to_come_up() -> None:
    # A pool an autoscaler grows from zero has no node until a job asks for one.
    wait = waits.pod_wait(unschedulable(SELECTOR), [], NOW)
    assert wait is not None and wait.cause == "selector" and wait.heals
    assert wait.sentence.startswith(
        "worker 0 waits for a node: none of the cluster's 4 node(s) carries the labels its "
        "pool selects yet (one must come up, e.g. by an autoscaler"
    )
    assert not waits.overdue(wait, 0, NOW)


def test_not_enough_room_heals_unless_no_node_could_ever_hold_it() -> None:
    busy = unschedulable(SHORT)
    wait = waits.pod_wait(busy, [], NOW)
    assert wait is not None and wait.cause == "insufficient" and wait.heals
    assert "no node of its pool has enough CPU and memory free for it (4 CPU, 16Gi memory)" in (
        wait.sentence
    )
    big = Node("a", cpu=96, memory=1024 * GI, gpus=8)
    later = waits.pod_wait(busy, [], NOW, [big])
    assert later is not None and later.heals  # it fits an empty node: room later
    assert "(4 CPU, 16Gi memory; its pool's nodes have at most 96 CPU, 1Ti memory allocatable)" in (
        later.sentence
    )
    # The figures are the most of each that one node it may go to has (a tainted one not).
    small = [
        Node("a", cpu=2, memory=8 * GI, gpus=0),
        Node("b", cpu=8, memory=4 * GI, gpus=0),
        Node("c", cpu=64, memory=512 * GI, gpus=0, taints=(Taint("gpu"),)),
    ]
    never = waits.pod_wait(busy, [], NOW, small)
    assert never is not None and never.cause == "too-large" and never.certain
    assert never.sentence == (
        "worker 0 asks for more CPU and memory (4 CPU, 16Gi memory; its pool's nodes have at "
        "most 8 CPU, 8Gi memory allocatable) than any node of its pool has; it can never be "
        "scheduled: ask for less"
    )
    assert waits.overdue(never, 600, NOW)


def test_no_nodes_at_all_may_heal_as_an_autoscaler_brings_one() -> None:
    wait = waits.pod_wait(unschedulable("no nodes available to schedule pods"), [], NOW)
    assert wait is not None and wait.cause == "no-nodes" and wait.heals
    assert not waits.overdue(wait, 0, NOW)


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (
            '0/1 nodes are available: persistentvolumeclaim "imagenet" not found. preemption: '
            "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            "the volume claim imagenet does not exist",
        ),
        (
            "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
            "a volume claim it mounts is not bound to any volume",
        ),
    ],
)
def test_a_missing_or_unbound_claim(message: str, words: str) -> None:
    wait = waits.pod_wait(unschedulable(message), [], NOW)
    assert wait is not None and wait.cause == "claim" and words in wait.sentence
    assert wait.failure_class == FailureClass.ENVIRONMENT and not wait.heals


def test_an_image_that_may_not_be_pulled_ends_at_once() -> None:
    message = 'Container image "registry.invalid/x:1" is not present with pull policy of Never'
    never = pod(waiting={"reason": "ErrImageNeverPull", "message": message})
    wait = waits.pod_wait(never, [], NOW)
    assert wait is not None and wait.certain and waits.overdue(wait, 600, NOW)
    assert wait.sentence == (
        "worker 0 cannot start: its image registry.invalid/x:1 is not on the node, and its pull "
        "policy forbids pulling it"
    )
    assert wait.message == message and wait.failure_class == FailureClass.ENVIRONMENT
    verdict = waits.verdict(wait, 10, attempt=0)
    assert verdict.reason == f"{wait.sentence}; ended, as waiting cannot mend it"
    assert verdict.failure_class == FailureClass.ENVIRONMENT and verdict.message == message


def test_an_image_not_found_waits_the_grace_period_from_its_first_failure() -> None:
    backoff = pod(waiting={"reason": "ImagePullBackOff", "message": "Back-off pulling image"})
    failed = event("Failed", 'Failed to pull image "registry.invalid/x:1": not found', T1)
    wait = waits.pod_wait(backoff, [failed], NOW)
    assert wait is not None and wait.cause == "image" and not wait.heals
    assert "cannot pull its image registry.invalid/x:1" in wait.sentence
    assert wait.since == NOW - 60
    assert waits.verdict(wait, 10, 1).reason.endswith(
        "; ended after 10 min, as waiting cannot mend it"
    )


def test_a_container_config_error() -> None:
    bad = pod(
        waiting={"reason": "CreateContainerConfigError", "message": 'secret "token" not found'}
    )
    wait = waits.pod_wait(bad, [], NOW)
    assert wait is not None and wait.cause == "config" and not wait.heals
    assert wait.text().endswith('(Kubernetes: secret "token" not found)')


def test_what_the_kubelet_reports_of_a_scheduled_pod() -> None:
    creating = pod(waiting={"reason": "ContainerCreating"})
    pulling = event("Pulling", 'Pulling image "registry.invalid/x:1"', T1)
    wait = waits.pod_wait(creating, [pulling], NOW)
    assert wait is not None and wait.cause == "pulling" and wait.heals
    assert wait.sentence == "worker 0 is pulling its image registry.invalid/x:1 for 60 s"
    mount = event("FailedMount", 'MountVolume.SetUp failed for volume "shared"', T0)
    wait = waits.pod_wait(creating, [pulling, mount, event("Scheduled", "ok", T0)], NOW)
    assert wait is not None and wait.cause == "pulling"  # the latest event speaks
    wait = waits.pod_wait(creating, [mount], NOW)
    assert wait is not None and wait.cause == "volume" and waits.overdue(wait, 600, NOW)
    sandbox = event("FailedCreatePodSandBox", "failed to setup network for sandbox", T1)
    wait = waits.pod_wait(creating, [sandbox], NOW)
    assert wait is not None and wait.cause == "sandbox" and not wait.heals


def test_a_pod_on_its_way_says_so() -> None:
    # Nothing holds it up, yet the researcher is told what happens: never a silent start.
    unplaced = pod()
    wait = waits.pod_wait(unplaced, [], NOW)
    assert wait is not None and (wait.cause, wait.sentence) == (
        "scheduling",
        "worker 0 is being scheduled",
    )
    assert wait.heals and wait.routine and wait.text() == wait.sentence
    creating = pod(waiting={"reason": "ContainerCreating"})
    creating["spec"]["nodeName"] = "gpu-7"
    pulled = event("Pulled", 'Successfully pulled image "registry.invalid/x:1"', T1)
    for events in ([], [event("Scheduled", "ok", T0)], [pulled]):
        wait = waits.pod_wait(creating, events, NOW)
        assert (
            wait is not None and wait.sentence == "worker 0's container is starting on node gpu-7"
        )
        assert wait.since == NOW - 600  # since the pod was made
    # A cause of another worker comes first; a job with no pod yet says they are being made.
    pulling = pod(1, waiting={"reason": "ContainerCreating"})
    pulling_event = event("Pulling", 'Pulling image "registry.invalid/x:1"', T1)
    wait = waits.job_wait([creating, pulling], {"uid-1": [pulling_event]}, NOW)
    assert wait is not None and wait.worker == 1 and wait.cause == "pulling"
    assert waits.job_wait([], {}, NOW) == waits.CREATING
    assert waits.CREATING.sentence == "its pods are being created"
    going = pod(phase="Running")
    going["metadata"]["deletionTimestamp"] = T1
    assert waits.job_wait([going], {}, NOW) == waits.CREATING  # its replacement is next


def test_a_running_or_ended_pod_waits_for_nothing() -> None:
    assert waits.pod_wait(pod(phase="Running"), [], NOW) is None
    assert waits.pod_wait(pod(phase="Failed"), [], NOW) is None


def test_the_job_is_explained_by_its_worst_cause_lowest_worker_first() -> None:
    room = unschedulable(SHORT)
    room["metadata"]["annotations"][waits.INDEX] = "0"
    taint = unschedulable("0/2 nodes are available: 2 node(s) had untolerated taint(s).")
    taint["metadata"]["annotations"][waits.INDEX] = "2"
    taint["metadata"]["uid"] = "uid-2"
    wait = waits.job_wait([room, taint, pod(1, phase="Running")], {}, NOW)
    assert wait is not None and wait.worker == 2 and wait.cause == "taint"
    assert waits.job_wait([pod(phase="Running")], {}, NOW) is None
