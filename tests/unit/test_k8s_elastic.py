"""What size an elastic Job should run at next (trainhub.backends.kubernetes.elastic), from
objects as the API server and Kueue write them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.unit.test_k8s_manifests import TEAMS, record
from trainhub.backends.kubernetes import elastic, manifests

GPU = "nvidia.com/gpu"


def job(size: int = 1, **spec: Any) -> dict[str, Any]:
    rec = record(resources={"workers": "1:3", "gpus_per_worker": 4}, **spec)
    j = manifests.job_manifest(rec, team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="i")
    j["metadata"]["uid"] = "u1"
    j["spec"].update(parallelism=size, completions=size, suspend=False)
    return j


def workload(workers: int, *, admitted: bool = True, priority: int = 10, owner: str = "x") -> dict:
    conditions = [{"type": "QuotaReserved", "status": "True" if admitted else "False"}]
    template = {"spec": {"containers": [{"resources": {"requests": {GPU: "4"}}}]}}
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        flavors = {GPU: "a100", "cpu": "a100"}
        status["admission"] = {"podSetAssignments": [{"count": workers, "flavors": flavors}]}
    return {
        "metadata": {"name": f"job-{owner}", "ownerReferences": [{"name": owner, "uid": owner}]},
        "spec": {"priority": priority, "podSets": [{"count": workers, "template": template}]},
        "status": status,
    }


def queue(nominal: int = 12) -> dict:
    resources = [{"name": GPU, "nominalQuota": str(nominal)}]
    return {"spec": {"resourceGroups": [{"flavors": [{"name": "a100", "resources": resources}]}]}}


def test_grows_by_what_the_free_quota_holds_up_to_max() -> None:
    assert elastic.next_size(job(1), [], workload(1), [], queue()).workers == 3
    blocker = workload(1, owner="blocker")  # 4 GPUs of 12
    assert elastic.next_size(job(1), [], workload(1), [blocker], queue()).workers == 2
    assert elastic.next_size(job(1), [], workload(1), [blocker], queue(10)) is None  # 2 left
    assert elastic.next_size(job(3), [], workload(3), [], queue(16)) is None  # at MAX


def test_one_resize_at_a_time_and_waiting_jobs_go_first() -> None:
    # parallelism 2 asked, 1 admitted: Kueue's replacement slice waits; no second resize
    assert elastic.next_size(job(2), [], workload(1), [], queue()) is None
    # parallelism 2, 3 still recorded: Kueue has yet to record the shrink
    high = workload(2, admitted=False, priority=100, owner="urgent")
    assert elastic.next_size(job(2), [], workload(3), [high], queue()) is None
    waiting_peer = workload(1, admitted=False, priority=10, owner="peer")
    assert elastic.next_size(job(1), [], workload(1), [waiting_peer], queue()) is None


def test_shrinks_by_what_a_waiting_higher_priority_job_lacks() -> None:
    high = workload(2, admitted=False, priority=100, owner="urgent")  # 8 GPUs, 4 free
    change = elastic.next_size(job(3), [], workload(3), [high], queue(16))
    assert change is not None and change.workers == 2 and "urgent" in change.reason
    # never below MIN, and a lower-priority waiter takes nothing
    assert elastic.next_size(job(1), [], workload(1), [high], queue(4)) is None
    low = workload(2, admitted=False, priority=1, owner="later")
    assert elastic.next_size(job(3), [], workload(3), [low], queue()) is None


def test_shrinks_by_a_worker_whose_pod_cannot_be_placed_again() -> None:
    stuck = {
        "metadata": {"annotations": {elastic.INDEX: "2"}},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }
    since = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    change = elastic.next_size(job(3), [stuck], workload(3), [], queue(), now=since + 61)
    assert change is not None and change.workers == 2 and "node lost" in change.reason
    # a moment's wait (a stopping pod's room) is no lost worker
    assert elastic.next_size(job(3), [stuck], workload(3), [], queue(), now=since + 5) is None


def test_a_queued_job_is_left_as_it_is() -> None:
    queued = job(3)
    queued["spec"]["suspend"] = True
    assert elastic.next_size(queued, [], workload(3, admitted=False), [], queue()) is None
    assert elastic.next_size(job(1), [], None, [], queue()) is None


def test_membership_events_name_each_change() -> None:
    assert elastic.membership_event(None, 1, None) == {
        "workers": 1,
        "previous": None,
        "reason": "admitted",
    }
    assert elastic.membership_event(1, 1, "x") is None
    assert elastic.membership_event(1, 3, "room")["reason"] == "room"
    assert elastic.membership_event(3, None, None) is None


def test_a_grown_job_was_admitted_when_it_first_got_its_quota() -> None:
    from trainhub.backends.kubernetes.names import SLICE_REPLACES
    from trainhub.backends.kubernetes.records import job_times

    unsuspended = {
        "type": "Suspended",
        "status": "False",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    grown = {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-01-01T00:05:00Z"}
    job = {"status": {"conditions": [unsuspended]}}
    later_slice = {
        "metadata": {"annotations": {SLICE_REPLACES: "ns/first"}},
        "status": {"conditions": [grown]},
    }
    first = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert job_times(job, later_slice)["admitted_at"] == first
    assert (
        job_times(job, {"metadata": {}, "status": {"conditions": [grown]}})["admitted_at"]
        == first + 300
    )
