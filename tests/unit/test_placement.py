"""Placements checked before anything is created: a pool that can never host a job is refused,
naming the field to change (trainhub.jobs.placement, trainhub.backends.kubernetes.nodes)."""

from __future__ import annotations

import pytest

from trainhub.backends.kubernetes import nodes
from trainhub.backends.local.admitter import this_machine
from trainhub.jobs import placement
from trainhub.jobs.models import JobRecord
from trainhub.jobs.placement import Node, Request, Taint
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState
from trainhub.teams import Pool

GI = 2**30
GPU_TAINT = Taint("nvidia.com/gpu", "", "NoSchedule")
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def node(name="n1", cpu=32.0, memory=256 * GI, gpus=8, taints=()) -> Node:
    return Node(name, cpu=cpu, memory=memory, gpus=gpus, taints=tuple(taints))


def refused(request: Request, found: list[Node], tolerations=()) -> tuple[str, str] | None:
    problem = placement.refusal(request, found, where="pool a100", tolerations=tolerations)
    return None if problem is None else (problem.field, problem.message)


def test_a_job_the_pool_can_host_passes() -> None:
    two = [node("n1"), node("n2")]
    assert refused(Request(workers=2, cpu=16, memory=64 * GI, gpus=8), two) is None
    assert refused(Request(workers=8, cpu=4, memory=GI, gpus=2), two) is None
    # Nodes not known (none listed, or not readable): nothing to refuse on.
    assert refused(Request(workers=99, cpu=999, memory=999 * GI, gpus=8), []) is None


def test_more_workers_than_the_pools_nodes_hold_is_refused_naming_workers() -> None:
    field, message = refused(Request(workers=3, cpu=1, memory=GI, gpus=8), [node(), node("n2")])
    assert field == "resources.workers"
    assert "3 workers (3 x 8 GPUs) cannot all run at once" in message
    assert "hold at most 2" in message
    # Fragmentation counts: two 8-GPU nodes hold two 6-GPU workers, not three (18 <= 16 fails
    # anyway, but 3 x 5 = 15 fits the GPUs in sum and still not the nodes).
    field, _ = refused(Request(workers=3, cpu=1, memory=GI, gpus=5), [node(), node("n2")])
    assert field == "resources.workers"


@pytest.mark.parametrize(
    ("request_", "field", "words"),
    [
        (Request(1, cpu=64, memory=GI, gpus=0), "resources.cpu", "64 per worker"),
        (Request(1, cpu=1, memory=2**40, gpus=0), "resources.memory", "1Ti per worker"),
        (Request(1, cpu=1, memory=2**130, gpus=0), "resources.memory", "at most 256Gi"),
        (Request(1, cpu=1, memory=GI, gpus=16), "resources.gpus_per_worker", "16 per worker"),
    ],
)
def test_a_worker_larger_than_any_node_is_refused_naming_the_field(
    request_: Request, field: str, words: str
) -> None:
    got = refused(request_, [node(), node("small", cpu=4, memory=8 * GI, gpus=1)])
    assert got is not None and got[0] == field and words in got[1]


def test_a_pool_whose_every_node_has_an_untolerated_taint_is_refused() -> None:
    tainted = [node(taints=[GPU_TAINT]), node("n2", taints=[Taint("real", "", "NoExecute")])]
    field, message = refused(Request(1, 1, GI, 0), tainted)
    assert field == "queue"
    assert "nvidia.com/gpu:NoSchedule" in message and "real:NoExecute" in message
    # A node it tolerates is enough; PreferNoSchedule never keeps a pod off.
    assert refused(Request(1, 1, GI, 0), tainted, TOLERATE_GPU) is None
    soft = [node(taints=[Taint("x", "", "PreferNoSchedule")])]
    assert refused(Request(1, 1, GI, 0), soft) is None
    # A condition's taint heals (a node not ready for a moment): the job waits, not refused.
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        passing = [node(taints=[Taint(key, "", "NoSchedule"), Taint(key, "", "NoExecute")])]
        assert refused(Request(1, 1, GI, 0), passing) is None
    cordoned = [node(taints=[Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")])]
    assert refused(Request(1, 1, GI, 0), cordoned) is not None  # the admin's, for good
    # Only the nodes it may use count for the figures.
    field, _ = refused(Request(1, 1, GI, 8), [node(gpus=8, taints=[GPU_TAINT]), node(gpus=1)])
    assert field == "resources.gpus_per_worker"


@pytest.mark.parametrize(
    ("toleration", "taint", "matches"),
    [
        ({"key": "k", "operator": "Exists"}, Taint("k", "v", "NoSchedule"), True),
        ({"operator": "Exists"}, Taint("anything", "v", "NoExecute"), True),
        ({"key": "k", "operator": "Equal", "value": "v"}, Taint("k", "v", "NoSchedule"), True),
        ({"key": "k", "value": "w"}, Taint("k", "v", "NoSchedule"), False),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, Taint("k"), False),
        ({"key": "other", "operator": "Exists"}, Taint("k"), False),
    ],
)
def test_tolerations_match_taints_as_kubernetes_does(toleration, taint, matches) -> None:
    assert placement.tolerates(toleration, taint) is matches


def test_admin_is_warned_of_pool_nodes_its_tolerations_do_not_match() -> None:
    found = [node("gpu-1", taints=[GPU_TAINT, Taint("real", "yes", "NoSchedule")]), node("gpu-2")]
    warnings = placement.pool_warnings("a100", found, TOLERATE_GPU)
    assert warnings == [
        "pool a100: node gpu-1 is tainted real=yes:NoSchedule, which the pool's tolerations do "
        "not match; its jobs' pods will never be scheduled there (add a toleration to the pool)"
    ]
    # A pool whose labels select no node: its pods wait for one (an autoscaler's, or none).
    assert placement.pool_warnings("a100", [], TOLERATE_GPU) == [
        "pool a100: no node carries its node_labels; its jobs' pods wait until one comes up "
        "(an autoscaler may add it), and for ever if none will"
    ]
    # Unless its nodes come with demand: none now is what the admin expects.
    assert placement.pool_warnings("a100", [], TOLERATE_GPU, autoscaled=True) == []
    assert placement.pool_warnings("a100", found, TOLERATE_GPU, autoscaled=True) == warnings


def test_kubernetes_nodes_read_as_allocatable_figures_and_taints() -> None:
    obj = {
        "metadata": {"name": "gpu-1"},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "3500m", "memory": "16318480Ki", "nvidia.com/gpu": "8"}},
    }
    assert nodes.node_of(obj) == Node("gpu-1", 3.5, 16318480 * 1024, 8, (GPU_TAINT,))
    cordoned = nodes.node_of({"metadata": {"name": "c"}, "spec": {"unschedulable": True}})
    assert cordoned.taints == (Taint("node.kubernetes.io/unschedulable"),)
    assert (cordoned.cpu, cordoned.memory, cordoned.gpus) == (0, 0, 0)


def record(resources: dict) -> JobRecord:
    spec = parse_spec({"name": "t", "source": {"path": "t.ipynb"}, "resources": resources})
    return JobRecord(
        id="t-1",
        name="t",
        user="ada",
        state=JobState.QUEUED,
        spec=spec,
        job_dir="/s/jobs/t-1",
        gpus=spec.resources.total_gpus,
        priority=spec.priority.rank,
        created_at=0.0,
    )


def test_a_gpu_only_pool_refuses_a_cpu_only_job_and_defaults_fill_the_request() -> None:
    pool = Pool(
        name="a100",
        node_labels={"pool": "a100"},
        gpus_per_node=8,
        gpu_only=True,
        tolerations=TOLERATE_GPU,
    )
    problem = nodes.pool_refusal(record({"workers": 1}), pool, [node(taints=[GPU_TAINT])])
    assert problem is not None and problem.field == "resources.gpus_per_worker"
    assert "pool a100 runs only jobs that ask for GPUs" in problem.message
    gpu_job = record({"workers": 1, "gpus_per_worker": 8})
    assert nodes.pool_refusal(gpu_job, pool, [node(taints=[GPU_TAINT])]) is None
    # The manifests' defaults count: one CPU per rank, 8Gi of memory.
    small = node(cpu=0.5, memory=4 * GI)
    problem = nodes.pool_refusal(
        record({"processes_per_worker": 2}), pool.model_copy(update={"gpu_only": False}), [small]
    )
    assert problem is not None and problem.field == "resources.cpu"
    assert nodes.selector(pool) == "pool=a100"


def test_the_local_machine_bounds_memory_by_its_own() -> None:
    machine = this_machine()
    assert machine.memory > 2**20
    problem = placement.refusal(
        Request(workers=1, cpu=0, memory=int(1e30 * 2**40), gpus=0), [machine], where="this machine"
    )
    assert problem is not None and problem.field == "resources.memory"
    assert "more than this machine offers one worker" in problem.message
