"""Suspend and resume on the real node: a 2-pod job of the example notebook is suspended
through Kueue (its Workload deactivated: Kueue evicts it and suspends the Job, the kubelet
sends the pods SIGTERM and the ranks' ``checkpoint.on_stop`` save runs), its quota is free
while it waits, and a resume replaces the Job by the next attempt's, which continues from that
save and succeeds. Fixtures and the team as in test_real_jobs.py (the real node is exclusive:
its fixture waits for another cluster to let go of it).
"""

from __future__ import annotations

import pytest

from tests.k8s.test_backend import Team, team  # noqa: F401 - the kwok team's fixture
from tests.k8s.test_real_jobs import (  # noqa: F401 - fixtures
    QUICK,
    SLOW,
    RealTeam,
    open_umask,
    pytorch_image,
    real_team,
    running_pods,
)
from trainhub.backends.kubernetes.status import SUSPEND_ANNOTATION
from trainhub.errors import Conflict, NotFound
from trainhub.jobs.states import JobState

# The example's on-stop save keeps the steps trained since its last save (every 20 steps), so
# the test suspends once step 20 is trained: a stop at "step 19", printed right after that
# save, found nothing new to keep. At 0.5 s a step the next save is 10 s away, far more than a
# suspension takes to reach the pods, even on a busy machine. One epoch: 40 steps, the resumed
# attempt trains the last ~19.
BETWEEN_SAVES = {**SLOW, "epochs": 1, "step_delay": 0.5}


def test_a_suspended_two_pod_job_frees_its_quota_and_resumes_from_its_save(
    real_team: RealTeam,  # noqa: F811 - the fixture, imported above
) -> None:
    t = real_team
    job_id = t.submit_spec(t.spec(BETWEEN_SAVES, gpus_per_worker=1, name="long"))
    running_pods(t, job_id, 2)
    t.until(job_id, "step 20 trained", lambda d: 20 in t.scalar_steps(job_id, "loss"), 240)

    t.service.suspend(job_id, user=t.user, reason="the node is needed")
    # Once a reconcile has recorded it too (a read may say "suspended" just before).
    suspended = t.until(
        job_id,
        "suspended, and recorded",
        lambda d: (
            d.state == JobState.SUSPENDED
            and any(e["type"] == "suspended" for e in t.events(job_id))
        ),
        180,
    )
    # No pod runs on: what is left are ended pods, which hold no GPU.
    assert {p.status.phase for p in t.pods(job_id)} <= {"Succeeded", "Failed"}
    job = t.backend.batch.read_namespaced_job(job_id, t.ns)
    assert job.spec.suspend and job.metadata.annotations[SUSPEND_ANNOTATION]
    saves = [e for e in t.checkpoints_made(job_id) if not e["async_"]]  # the on_stop save
    assert saves and suspended.suspended_step == saves[-1]["step"], (
        saves,
        suspended.suspended_step,
        [(e["type"], e.get("step"), e.get("rank")) for e in t.events(job_id)],
        t.rank_log(job_id, 0)[-2000:],
        t.rank_log(job_id, 1)[-2000:],
    )
    types = [e["type"] for e in t.events(job_id)]
    assert "suspend_requested" in types and "suspended" in types and "preempted" not in types

    # Its 2 GPUs of quota are free: another job of the team is admitted and runs to its end.
    other = t.submit_spec(t.spec(QUICK, gpus_per_worker=1, name="other"))
    assert t.ended(other).state == JobState.SUCCEEDED

    resumed = t.service.resume(job_id, user=t.user)
    assert resumed.id == job_id and resumed.attempt == 1
    t.hand_over(job_id)
    done = t.ended(job_id)
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(job_id, 0)[-3000:])
    assert done.attempt == 1 and done.suspended_step is None
    log = t.rank_log(job_id, 0)
    assert f"resumed from step {suspended.suspended_step}" in log
    assert "rank 0/2, attempt 1" in log


def test_suspend_deactivates_the_workload_frees_the_quota_and_resume_makes_the_next_attempt(
    team: Team,  # noqa: F811 - the fixture, imported above
) -> None:
    """The same on kwok nodes, where pods end at once: Kueue's side of it alone."""
    first = team.submit("first")  # all 8 GPUs of the team's quota
    team.wait_state(first, JobState.RUNNING)
    second = team.submit("second")
    assert team.state(second) == JobState.QUEUED

    asked = team.service.suspend(first, user="ada", reason="for the second")
    assert asked.state in (JobState.RUNNING, JobState.SUSPENDED)
    suspended = team.wait_state(first, JobState.SUSPENDED)
    assert suspended.suspended_step is None  # kwok pods save nothing
    (workload,) = [
        w for w in team.backend._workloads() if w["metadata"]["ownerReferences"][0]["name"] == first
    ]
    assert workload["spec"]["active"] is False
    team.wait_state(second, JobState.RUNNING)  # its quota went to the queued job
    with pytest.raises(Conflict, match="already suspended"):
        team.service.suspend(first, user="ada")
    with pytest.raises(NotFound):
        team.service.resume(first, user="bob")
    team.end_pods(second, result="Succeeded")
    team.wait_state(second, JobState.SUCCEEDED)

    resumed = team.service.resume(first, user="ada")
    assert resumed.id == first and resumed.attempt == 1
    team.wait_state(first, JobState.RUNNING)
    job = team.backend.batch.read_namespaced_job(first, team.ns)
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert env["TRAINHUB_ATTEMPT"] == "1" and not job.spec.suspend
    states = [e["state"] for e in team.events(first) if e["type"] == "state"]
    assert states[-3:] == ["suspended", "queued", "running"], states
    assert not any(e["type"] == "preempted" for e in team.events(first))
