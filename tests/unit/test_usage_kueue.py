"""Kueue's Workload status conditions → the admitted and finished times of a usage row."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from trainhub.jobs.directory import JobDir, append_jsonl, write_json_atomic
from trainhub.jobs.spec import parse_spec
from trainhub.teams import load_teams
from trainhub.usage.kueue import WorkloadTimes, timestamp, workload_times
from trainhub.usage.models import UsageBy


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def workload(*conditions: tuple[str, str, str], created: str = "2026-11-03T10:00:00Z"):
    return {
        "metadata": {"name": "job-x-1a2b3", "creationTimestamp": created},
        "status": {
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": when, "reason": "Any"}
                for t, s, when in conditions
            ]
        },
    }


def test_a_pending_workload_has_no_admission():
    w = workload(("QuotaReserved", "False", "2026-11-03T10:00:01Z"))

    assert workload_times(w) == WorkloadTimes(created_at=at("2026-11-03T10:00:00"))


def test_an_admitted_and_finished_workload():
    w = workload(
        ("QuotaReserved", "True", "2026-11-03T10:05:00Z"),
        ("Admitted", "True", "2026-11-03T10:05:01Z"),
        ("PodsReady", "True", "2026-11-03T10:05:30Z"),
        ("Finished", "True", "2026-11-03T11:05:01Z"),
    )

    assert workload_times(w) == WorkloadTimes(
        created_at=at("2026-11-03T10:00:00"),
        admitted_at=at("2026-11-03T10:05:01"),
        finished_at=at("2026-11-03T11:05:01"),
    )


def test_after_an_eviction_the_latest_admission_counts():
    w = workload(
        ("QuotaReserved", "True", "2026-11-03T12:00:00Z"),
        ("Admitted", "True", "2026-11-03T12:00:00Z"),
        ("Evicted", "False", "2026-11-03T12:00:00Z"),
        ("Requeued", "True", "2026-11-03T11:00:00Z"),
    )

    assert workload_times(w).admitted_at == at("2026-11-03T12:00:00")


def test_an_evicted_workload_waiting_again_is_not_admitted():
    w = workload(
        ("QuotaReserved", "False", "2026-11-03T11:00:00Z"),
        ("Admitted", "False", "2026-11-03T11:00:00Z"),
        ("Evicted", "True", "2026-11-03T11:00:00Z"),
    )

    assert workload_times(w).admitted_at is None


def test_quota_reserved_stands_in_when_admitted_was_reset_as_it_finished():
    w = workload(
        ("QuotaReserved", "True", "2026-11-03T10:05:00Z"),
        ("Admitted", "False", "2026-11-03T11:05:01Z"),
        ("Finished", "True", "2026-11-03T11:05:01Z"),
    )

    times = workload_times(w)
    assert (times.admitted_at, times.finished_at) == (
        at("2026-11-03T10:05:00"),
        at("2026-11-03T11:05:01"),
    )


def test_finished_without_ever_running():
    w = workload(("Finished", "True", "2026-11-03T10:01:00Z"))

    assert workload_times(w) == WorkloadTimes(
        created_at=at("2026-11-03T10:00:00"), finished_at=at("2026-11-03T10:01:00")
    )


def test_odd_input_reads_as_unknown():
    assert workload_times(None) == WorkloadTimes()
    assert workload_times({}) == WorkloadTimes()
    assert workload_times({"status": {"conditions": None}}) == WorkloadTimes()
    broken = workload(("Admitted", "True", "not a time"), created="")
    assert workload_times(broken) == WorkloadTimes()
    assert timestamp("2026-11-03T10:00:00.250+01:00") == at("2026-11-03T09:00:00.250")
    assert timestamp(17) is None


# --- the Kubernetes backend -------------------------------------------------------------------

GOLDEN = Path(__file__).parent / "golden"


def test_the_job_times_prefer_kueues_admission() -> None:
    from trainhub.backends.kubernetes.records import job_times

    job = {
        "status": {
            "startTime": "2026-11-03T10:06:00Z",
            "conditions": [
                {
                    "type": "Suspended",
                    "status": "False",
                    "lastTransitionTime": "2026-11-03T10:05:30Z",
                }
            ],
        }
    }
    w = workload(
        ("Admitted", "True", "2026-11-03T10:05:01Z"), ("Finished", "True", "2026-11-03T11:00:00Z")
    )

    assert job_times(job, w) == {
        "admitted_at": at("2026-11-03T10:05:01"),
        "started_at": at("2026-11-03T10:06:00"),
        "finished_at": at("2026-11-03T11:00:00"),
    }
    assert job_times(job)["admitted_at"] == at("2026-11-03T10:05:30")  # the Job's unsuspension
    assert job_times(job)["finished_at"] is None
    # Succeeded while its pods still stop: no completionTime yet, the criteria's time instead.
    met = {
        "type": "SuccessCriteriaMet",
        "status": "True",
        "lastTransitionTime": "2026-11-03T10:59:58Z",
    }
    ending = {"status": {**job["status"], "conditions": [*job["status"]["conditions"], met]}}
    assert job_times(ending)["finished_at"] == at("2026-11-03T10:59:58")


def test_a_cluster_jobs_usage_comes_from_its_directory_after_the_job_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainhub.backends.kubernetes.backend import KubernetesBackend

    teams = load_teams(GOLDEN / "teams.yaml")
    team = teams.teams[0].name
    backend = KubernetesBackend(teams, team, api_client=object(), jobs_root=tmp_path)
    spec = parse_spec(
        {
            "name": "t",
            "source": {"path": "t.py", "kind": "script"},
            "resources": {"gpus_per_worker": 2},
            "team": team,
        }
    )
    jobdir = JobDir(tmp_path / "t-1").create()
    write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": "t-1", "user": "ada"})
    created, admitted = at("2026-11-03T10:00:00"), at("2026-11-03T10:05:00")
    started, finished = at("2026-11-03T10:06:00"), at("2026-11-03T11:06:00")
    for event in (
        {"time": created, "type": "submitted"},
        {"time": started + 5, "type": "state", "state": "running", "attempt": 0},
        # As the backend writes it when it sees the job end (Kueue's times kept in it).
        {"time": finished + 30, "type": "state", "state": "succeeded", "attempt": 0,
         "admitted_at": admitted, "started_at": started, "finished_at": finished},
    ):  # fmt: skip
        append_jsonl(jobdir.events, event)
    monkeypatch.setattr(
        backend, "_all", lambda user: [backend._from_jobdir(p) for p in tmp_path.iterdir()]
    )

    record = backend._from_jobdir(jobdir.root)
    assert (record.admitted_at, record.started_at, record.finished_at) == (
        admitted,
        started,
        finished,
    )
    (group,) = backend.usage(UsageBy.TEAM, 0.0)
    assert (group.key, group.jobs, group.succeeded) == (team, 1, 1)
    assert group.queue_wait_s == pytest.approx(admitted - created)
    # From the pods' start, not from the reconcile that saw them running 5 s later.
    assert group.gpu_allocated_s == pytest.approx(2 * (finished - started))
    assert group.wall_s == pytest.approx(finished - started)
    assert backend.usage(UsageBy.TEAM, 0.0, team="another-team") == []
    assert backend.usage(UsageBy.USER, 0.0, user="bob") == []
