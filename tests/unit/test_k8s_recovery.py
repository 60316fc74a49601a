"""Recovery decisions (trainhub/lifecycle/retry.py; recovery.py keeps them on a Job): which failed
attempt gets a next one, after how long, and how a failed Job marked for it reads."""

from __future__ import annotations

import time
from pathlib import Path

from trainhub.backends.kubernetes import recovery, status
from trainhub.jobs.directory import JobDir, append_jsonl, write_json_atomic
from trainhub.jobs.models import Verdict
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.specparts import RetryPolicy
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle import retry
from trainhub.lifecycle.results import Evidence
from trainhub.rank.pod import exit_status, own_exit_status
from trainhub.teams import load_teams

POLICY = RetryPolicy(infrastructure=2, backoff_seconds=4, backoff_factor=3)
GOLDEN = Path(__file__).parent / "golden"
KILLED = Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason="worker 1 was killed by SIGKILL")


def test_an_infrastructure_failure_gets_the_next_attempt_after_the_policys_backoff():
    plan = retry.plan_retry(KILLED, POLICY, {}, attempt=0, now=1000.0)
    assert plan == retry.RetryPlan(
        attempt=1,
        failure_class="infrastructure",
        reason="worker 1 was killed by SIGKILL",
        backoff_seconds=4.0,
        not_before=1004.0,
        retries={"infrastructure": 1},
    )
    assert not plan.due(1003.9) and plan.due(1004.0)
    second = retry.plan_retry(KILLED, POLICY, plan.retries, attempt=1, now=2000.0)
    assert second is not None and (second.attempt, second.backoff_seconds) == (2, 12.0)
    assert second.retries == {"infrastructure": 2}


def test_code_errors_cancels_and_used_up_retries_end_the_job():
    code = Verdict(failure_class=FailureClass.CODE, reason="ValueError in cell 3 (rank 0)")
    assert retry.plan_retry(code, POLICY, {}, attempt=0, now=0) is None
    used = {"infrastructure": 2}
    assert retry.plan_retry(KILLED, POLICY, used, attempt=2, now=0) is None
    assert retry.plan_retry(KILLED, POLICY, {}, attempt=0, now=0, cancel_requested=True) is None


def test_a_failed_job_carrying_its_plan_reads_as_retrying():
    plan = retry.plan_retry(KILLED, POLICY, {}, attempt=0, now=1000.0)
    assert plan is not None
    failed = {"metadata": {}, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert status.job_state(failed, []) == JobState.FAILED
    failed["metadata"]["annotations"] = {recovery.RETRY_ANNOTATION: plan.to_json()}
    assert recovery.pending_retry(failed) == plan
    assert status.job_state(failed, []) == JobState.RETRYING
    # An annotation that is not a plan is ignored: the Job reads as its conditions say.
    failed["metadata"]["annotations"] = {recovery.RETRY_ANNOTATION: "{not json"}
    assert recovery.pending_retry(failed) is None
    assert status.job_state(failed, []) == JobState.FAILED


def test_a_stopped_pod_exits_like_the_signal_that_stopped_it():
    assert exit_status(-15) == 143 and exit_status(-9) == 137
    assert exit_status(0) == 0 and exit_status(1) == 1
    # A pod nobody stopped never exits 143, which the Job ignores (it would run again and
    # again): its torchrun ended by a SIGTERM that was the job's own is a failure.
    assert own_exit_status(-15) == own_exit_status(143) == 1
    assert own_exit_status(-11) == 139 and own_exit_status(0) == 0 and own_exit_status(7) == 7


def test_the_pod_that_failed_the_job_is_the_cause_not_the_ones_stopped_after_it():
    """Worker 1 killed (137); the Job controller then stops worker 0 (143), whose rank reports
    the lost peer: the verdict names worker 1, as the podFailurePolicy's message does."""

    def pod(index: int, code: int) -> dict:
        return {
            "metadata": {
                "name": f"ddp-{index}-x{index}",
                "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
            },
            "status": {"containerStatuses": [{"state": {"terminated": {"exitCode": code}}}]},
        }

    message = (
        "Container trainer for pod team/ddp-1-x1 failed with exit code 137 matching FailJob "
        "rule at index 2"
    )
    job = {
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "PodFailurePolicy",
                    "message": message,
                }
            ]
        }
    }
    lost_peer = {"outcome": "error", "failure_class": "infrastructure", "message": "closed"}
    pods = [pod(0, 143), pod(1, 137)]
    verdict = status.failure_verdict(job, pods, Evidence({0: lost_peer}), attempt=0)
    assert verdict.failure_class == FailureClass.INFRASTRUCTURE
    assert verdict.reason == "worker 1 was killed by SIGKILL"


def test_a_suspended_job_reads_as_suspended_once_its_pods_are_gone_and_is_no_preemption():
    job = {"metadata": {"annotations": {status.SUSPEND_ANNOTATION: "lunch"}}, "spec": {}}
    running = {"metadata": {}, "status": {"phase": "Running"}}
    # Asked, not yet suspended by Kueue: it still runs.
    assert status.job_state(job, [running]) == JobState.RUNNING
    job["spec"]["suspend"] = True
    # Suspended by Kueue, its pods still saving on SIGTERM: running until they end.
    stopping = {"metadata": {"deletionTimestamp": "now"}, "status": {"phase": "Running"}}
    assert status.job_state(job, [stopping]) == JobState.RUNNING
    assert status.job_state(job, []) == JobState.SUSPENDED
    ended = {"metadata": {}, "status": {"phase": "Failed"}}
    assert status.job_state(job, [ended]) == JobState.SUSPENDED
    # Without the annotation a suspended Job is one Kueue has not admitted (yet).
    del job["metadata"]["annotations"]
    assert status.job_state(job, []) == JobState.QUEUED

    evicted = {"type": "Evicted", "status": "True", "reason": "InactiveWorkload"}
    deactivated = {"status": {"conditions": [evicted]}}
    assert status.preemptions(deactivated) == 0
    preempted = {"status": {"conditions": [{**evicted, "reason": "Preempted"}]}}
    assert status.preemptions(preempted) == 1


def test_a_job_that_ended_on_a_later_attempt_keeps_it_once_its_job_is_gone(tmp_path: Path):
    """Once its Job is gone, a job is read from its directory: the attempt it ended on and the
    retries it used there, as the Job's annotations and Workload said them."""
    from trainhub.backends.kubernetes.backend import KubernetesBackend

    teams = load_teams(GOLDEN / "teams.yaml")
    team = teams.teams[0].name
    backend = KubernetesBackend(teams, team, api_client=object(), jobs_root=tmp_path)
    spec = parse_spec({"name": "t", "source": {"path": "t.py", "kind": "script"}, "team": team})
    jobdir = JobDir(tmp_path / "t-1").create()
    write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": "t-1", "user": "ada"})
    plan = retry.plan_retry(KILLED, POLICY, {}, attempt=0, now=1004.0)
    assert plan is not None
    ended = Verdict(failure_class=FailureClass.CODE, reason="ValueError in cell 3", attempt=1)
    for event in (
        {"time": 1000.0, "type": "submitted"},
        {"time": 1001.0, "type": "state", "state": "running", "attempt": 0},
        {"time": 1002.0, "type": "preempted", "count": 1},  # Kueue requeued it itself
        {"time": 1003.0, "type": "state", "state": "queued", "attempt": 0},
        {"time": 1004.0, "type": "retry", **retry.retry_event(plan, None)},
        {"time": 1004.0, "type": "state", "state": "retrying", "attempt": 1},
        {"time": 1010.0, "type": "state", "state": "failed", "attempt": 1,
         "verdict": ended.model_dump(mode="json")},
    ):  # fmt: skip
        append_jsonl(jobdir.events, event)
        record = backend._from_jobdir(jobdir.root)
        assert record is not None
        if event["type"] == "retry" or event.get("state") == "retrying":
            # Its failed Job going, the next not made yet: still the attempt that failed.
            assert (record.attempt, record.retries) == (0, {"preempted": 1}), event

    assert record.state == JobState.FAILED
    assert record.attempt == 1 and record.verdict is not None and record.verdict.attempt == 1
    assert record.retries == {"infrastructure": 1, "preempted": 1}
    assert record.created_at == 1000.0 and record.finished_at == 1010.0


def test_a_retrying_job_whose_failed_job_is_gone_reads_as_retrying_while_it_is_replaced(
    tmp_path: Path,
):
    """Between the failed Job's deletion and the next attempt's Job, the job is retrying, not
    failed; a retrying job left with no Job long past its backoff did lose its Job."""
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.backends.kubernetes.records import REPLACING_S

    teams = load_teams(GOLDEN / "teams.yaml")
    team = teams.teams[0].name
    backend = KubernetesBackend(teams, team, api_client=object(), jobs_root=tmp_path)
    spec = parse_spec({"name": "t", "source": {"path": "t.py", "kind": "script"}, "team": team})

    def left_retrying(job_id: str, since: float):
        jobdir = JobDir(tmp_path / job_id).create()
        write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": job_id, "user": "a"})
        plan = retry.plan_retry(KILLED, POLICY, {}, attempt=0, now=time.time() - since)
        assert plan is not None
        for event in (
            {"time": time.time() - since - 5, "type": "submitted"},
            {"time": time.time() - since, "type": "retry", **retry.retry_event(plan, None)},
            {"time": time.time() - since, "type": "state", "state": "retrying", "attempt": 1},
        ):
            append_jsonl(jobdir.events, event)
        return backend._from_jobdir(jobdir.root)

    being_replaced = left_retrying("t-1", since=1.0)
    assert being_replaced.state == JobState.RETRYING and being_replaced.verdict is None
    lost = left_retrying("t-2", since=POLICY.backoff_seconds + REPLACING_S + 60)
    assert lost.state == JobState.FAILED
    assert lost.verdict.reason == "its Job object disappeared"


def test_a_job_whose_job_is_not_seen_yet_reads_as_being_made_until_its_word_is_old(
    tmp_path: Path,
):
    """Between a submitter's "submitted" word and its Job, or a state word and the Job a
    watch-fed cache has not seen yet, the job is queued, not cancelled or lost; a word long
    past with no Job is: the submitter stopped before handing it over, or the Job was removed."""
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.backends.kubernetes.records import SETTLING_S

    teams = load_teams(GOLDEN / "teams.yaml")
    team = teams.teams[0].name
    backend = KubernetesBackend(teams, team, api_client=object(), jobs_root=tmp_path)
    spec = parse_spec({"name": "t", "source": {"path": "t.py", "kind": "script"}, "team": team})

    def left(job_id: str, ago: float, *words: dict):
        jobdir = JobDir(tmp_path / job_id).create()
        write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": job_id, "user": "a"})
        for word in ({"type": "submitted"}, *words):
            append_jsonl(jobdir.events, {"time": time.time() - ago, **word})
        return backend._from_jobdir(jobdir.root)

    queued = {"type": "state", "state": "queued", "attempt": 0}
    being_made = left("t-1", 1.0)
    assert being_made.state == JobState.QUEUED and being_made.verdict is None
    unseen = left("t-2", 1.0, queued)
    assert unseen.state == JobState.QUEUED and unseen.verdict is None
    never_handed_over = left("t-3", SETTLING_S + 5)
    assert never_handed_over.state == JobState.CANCELLED
    lost = left("t-4", SETTLING_S + 5, queued)
    assert lost.state == JobState.FAILED
    assert lost.verdict.reason == "its Job object disappeared"
    # Once it ran, its Job was seen: gone now, it was removed.
    removed = left("t-5", 1.0, queued, {"type": "state", "state": "running", "attempt": 0})
    assert removed.state == JobState.FAILED
