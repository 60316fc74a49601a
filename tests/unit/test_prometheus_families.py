"""The metric families of a snapshot (pure): labels, histogram buckets, counters' names, the
sessions only where the exporter sees them; and the text a registry of its own renders."""

from __future__ import annotations

from tests.promql import samples
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.usage.models import UsageGroup
from trainhub.usage.prometheus import IdleSession, Snapshot, exposition


def record(
    n: int, state: JobState, team: str, wait: float | None, gpus: int = 1, share: str = ""
) -> JobRecord:
    resources = {"gpu_share": share} if share else {}
    return JobRecord(
        id=f"job-{n}",
        name="job",
        user="ada",
        team=team,
        priority=1,
        state=state,
        spec=parse_spec({"name": "job", "source": {"path": "x.ipynb"}, "resources": resources}),
        job_dir="/nowhere",
        gpus=0 if share else gpus,
        created_at=100.0,
        admitted_at=None if wait is None else 100.0 + wait,
        verdict=Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason="node lost")
        if state == JobState.FAILED
        else None,
    )


def test_a_snapshot_renders_every_family_with_its_labels() -> None:
    snap = Snapshot(
        records=[
            record(1, JobState.RUNNING, "vision", 5, gpus=4),
            record(2, JobState.FAILED, "vision", 45),
            record(3, JobState.QUEUED, "nlp", None),
            record(4, JobState.SUCCEEDED, "nlp", 7200),
            record(5, JobState.RUNNING, "vision", None, share="1/4"),
        ],
        usage_by_team=[UsageGroup(key="vision", jobs=1, gpu_allocated_s=3600, gpu_busy_s=900)],
        sessions=[
            IdleSession("ada", "vision", 2, True),
            IdleSession("bo", "nlp", 1, False),
            IdleSession("cy", "vision", 0.25, True),  # a session on a share of a GPU
        ],
        per_job=True,
    )
    text = exposition(lambda: snap).decode()
    jobs = samples(text, "trainhub_jobs")
    assert len(jobs) == len(JobState) * 2  # every state of every team, zeros included
    assert jobs[(("state", "queued"), ("team", "nlp"))] == 1
    assert samples(text, "trainhub_job_gpus_in_use") == {
        (("team", "nlp"),): 0,
        (("team", "vision"),): 4.25,  # a job on a 1/4 share counts a quarter
    }
    buckets = samples(text, "trainhub_queue_wait_seconds_bucket")
    assert buckets[(("le", "10.0"), ("team", "vision"))] == 1
    assert buckets[(("le", "60.0"), ("team", "vision"))] == 2
    assert buckets[(("le", "3600.0"), ("team", "nlp"))] == 0
    assert buckets[(("le", "+Inf"), ("team", "nlp"))] == 1  # the queued job has no wait yet
    assert samples(text, "trainhub_queue_wait_seconds_sum")[(("team", "nlp"),)] == 7200
    assert samples(text, "trainhub_job_failures_total") == {
        (("failure_class", "infrastructure"), ("team", "vision")): 1
    }
    assert samples(text, "trainhub_gpu_allocated_seconds_total") == {(("team", "vision"),): 3600}
    assert samples(text, "trainhub_idle_gpu_sessions") == {
        (("team", "nlp"),): 0,
        (("team", "vision"),): 2,  # sessions are counted as sessions, shared or not
    }
    assert samples(text, "trainhub_idle_gpus")[(("team", "vision"),)] == 2.25
    assert samples(text, "trainhub_active_job_gpus") == {
        (("job_id", "job-1"), ("name", "job"), ("state", "running"), ("team", "vision")): 4,
        (("job_id", "job-5"), ("name", "job"), ("state", "running"), ("team", "vision")): 0.25,
    }


def test_without_sessions_or_per_job_series_those_families_are_absent() -> None:
    text = exposition(lambda: Snapshot(records=[record(1, JobState.QUEUED, "", None)])).decode()
    assert "trainhub_idle_gpu_sessions" not in text and "trainhub_active_job_gpus" not in text
    assert samples(text, "trainhub_exporter_source_errors") == {(): 0}
