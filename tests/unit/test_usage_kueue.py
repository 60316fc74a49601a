"""Kueue's Workload status conditions → the admitted and finished times of a usage row."""

from __future__ import annotations

from datetime import UTC, datetime

from trainhub.usage.kueue import WorkloadTimes, timestamp, workload_times


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
