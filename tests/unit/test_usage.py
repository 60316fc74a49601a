"""Usage accounting: a job's row from its record, events and samples; the report in SQL; the
since argument; the text and CSV forms."""

from __future__ import annotations

import csv
import io
import random
import sqlite3
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trainhub.backends.local import accounting
from trainhub.backends.local.store import Store
from trainhub.jobs.directory import JobDir, append_jsonl
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.usage.compute import attempt_spans, job_usage, usage_row
from trainhub.usage.models import UsageBy, UsageQuery, since_time
from trainhub.usage.report import csv_text, table
from trainhub.usage.store import UsageStore

SPEC = parse_spec({"name": "train", "source": {"path": "train.py", "kind": "script"}})
T0 = 1_790_000_000.0  # 2026-09-21 (UTC), a round start for readable times


def record(job_id: str = "j", **fields) -> JobRecord:
    values = dict(
        id=job_id,
        name="train",
        user="ada",
        priority=1,
        state=JobState.SUCCEEDED,
        spec=SPEC,
        job_dir=f"/jobs/{job_id}",
        gpus=2,
        created_at=T0,
        admitted_at=T0 + 5,
        started_at=T0 + 6,
        finished_at=T0 + 106,
    )
    values.update(fields)
    return JobRecord(**values)


def test_an_elastic_job_is_counted_at_each_size_it_held() -> None:
    spec = parse_spec(
        {
            "name": "train",
            "source": {"path": "train.py", "kind": "script"},
            "resources": {"workers": "1:3", "gpus_per_worker": 2},
        }
    )
    # 100 s in all: 20 s at 1 worker, 50 s at 3, 30 s at 2 (2 GPUs each)
    events = [
        {"time": T0 + 6, "type": "workers", "workers": 1, "previous": None},
        {"time": T0 + 26, "type": "workers", "workers": 3, "previous": 1},
        {"time": T0 + 76, "type": "workers", "workers": 2, "previous": 3},
    ]
    row = usage_row(record(spec=spec, gpus=6), events, threshold_pct=10)
    assert row.gpu_allocated_s == pytest.approx(2 * (20 * 1 + 50 * 3 + 30 * 2))
    assert usage_row(record(), threshold_pct=10).gpu_allocated_s == pytest.approx(2 * 100)


def gpu_samples(gpu: int, start: float, end: float, utilization: float | None, step: float = 1.0):
    t, out = start, []
    while t <= end + 1e-9:
        out.append({"time": round(t, 3), "gpu": gpu, "utilization": utilization})
        t += step
    return out


# --- one job's row ----------------------------------------------------------------------------


def test_a_job_without_events_is_allocated_its_gpus_from_start_to_end():
    row = usage_row(record(), threshold_pct=10)

    assert row.gpu_allocated_s == pytest.approx(2 * 100)
    assert (row.wall_s, row.queue_wait_s, row.attempts) == (pytest.approx(100), 5, 1)
    assert (row.gpu_busy_s, row.gpu_waste_s, row.cpu_s) == (0, 0, 0)
    assert row.day == "2026-09-21"


def test_attempts_come_from_the_state_events_and_the_backoff_is_not_allocated():
    events = [
        {"time": T0 + 6, "type": "state", "state": "running", "attempt": 0},
        {"time": T0 + 36, "type": "retry", "attempt": 1},
        {"time": T0 + 36, "type": "state", "state": "retrying", "attempt": 1},
        {"time": T0 + 66, "type": "state", "state": "running", "attempt": 1},
        {"time": T0 + 106, "type": "state", "state": "succeeded"},
    ]
    rec = record(retries={"infrastructure": 1}, attempt=1)

    assert attempt_spans(events, rec.started_at, T0 + 106) == [
        (T0 + 6, T0 + 36),
        (T0 + 66, T0 + 106),
    ]
    row = usage_row(rec, events, threshold_pct=10)
    assert row.gpu_allocated_s == pytest.approx(2 * (30 + 40))
    assert (row.attempts, row.retries) == (2, 1)


def test_the_first_attempt_opens_when_the_backend_says_it_started():
    # On Kubernetes a reconcile sees the pod running (and writes the event) after it started.
    events = [
        {"time": T0 + 9.5, "type": "state", "state": "running", "attempt": 0},
        {"time": T0 + 30.2, "type": "state", "state": "succeeded"},
    ]
    assert attempt_spans(events, T0 + 8, T0 + 30) == [(T0 + 8, T0 + 30)]
    # A later start (the latest attempt's) leaves the first attempt's event alone.
    assert attempt_spans(events, T0 + 20, T0 + 30) == [(T0 + 9.5, T0 + 30)]


def test_busy_and_waste_follow_the_samples_inside_the_attempt():
    # GPU 0 at 80 % and GPU 1 at 4 % for the whole run, sampled every second; samples
    # outside the attempt (before it started, during a backoff) do not count.
    samples = gpu_samples(0, T0, T0 + 120, 80) + gpu_samples(1, T0, T0 + 120, 4)
    row = usage_row(record(), [], samples, threshold_pct=10)

    assert row.gpu_sampled_s == pytest.approx(200)
    assert row.gpu_busy_s == pytest.approx(100 * 0.80 + 100 * 0.04)
    assert row.gpu_waste_s == pytest.approx(100)  # GPU 1's whole time, none of GPU 0's
    assert usage_row(record(), [], samples, threshold_pct=3).gpu_waste_s == 0
    assert usage_row(record(), [], samples, threshold_pct=81).gpu_waste_s == pytest.approx(200)


def test_a_reading_nvml_refused_counts_neither_busy_nor_waste():
    samples = gpu_samples(0, T0 + 6, T0 + 56, 50) + gpu_samples(0, T0 + 57, T0 + 106, None)
    row = usage_row(record(gpus=1), [], samples, threshold_pct=60)

    assert row.gpu_sampled_s == pytest.approx(50)
    assert row.gpu_busy_s == pytest.approx(25)
    assert row.gpu_waste_s == pytest.approx(50)


def test_the_interval_is_read_from_the_samples():
    # A sampler at 0.5 s: each sample stands for half a second.
    samples = gpu_samples(0, T0 + 6, T0 + 106, 100, step=0.5)
    row = usage_row(record(gpus=1), [], samples, threshold_pct=10)

    assert row.gpu_busy_s == pytest.approx(100, abs=0.5)


def test_cpu_seconds_sum_the_ranks_and_leave_the_machine_out():
    system = []
    for t in range(7, 107):
        system.append({"time": T0 + t, "rank": 0, "cpu_percent": 150.0})
        system.append({"time": T0 + t, "rank": 1, "cpu_percent": None if t == 7 else 50.0})
        system.append({"time": T0 + t, "rank": None, "cpu_percent": 99.0})
    row = usage_row(record(), [], [], system, threshold_pct=10)

    assert row.cpu_s == pytest.approx(100 * 1.5 + 99 * 0.5)


def test_a_delayed_cpu_reading_counts_the_whole_interval_it_measured():
    # A busy machine held the sampler back: psutil's 100 % at t=20 measured the 10 s since t=10.
    times = [*range(7, 11), 20, *range(21, 30)]
    system = [{"time": T0 + t, "rank": 0, "cpu_percent": 100.0} for t in times]
    row = usage_row(record(), [], [], system, threshold_pct=10)

    assert row.cpu_s == pytest.approx(29 - 7 + 1)  # the first reading stands for one median step


def test_a_job_cancelled_in_the_queue_waited_and_was_allocated_nothing():
    rec = record(
        state=JobState.CANCELLED,
        admitted_at=None,
        started_at=None,
        verdict=Verdict(failure_class=FailureClass.CANCELLED, reason="no longer needed"),
    )
    row = usage_row(rec, threshold_pct=10)

    assert (row.gpu_allocated_s, row.wall_s, row.attempts) == (0, 0, 0)
    assert row.queue_wait_s == pytest.approx(106)
    assert (row.state, row.failure_class) == ("cancelled", "cancelled")


def test_job_usage_reads_the_job_directory(tmp_path: Path):
    jobdir = JobDir(tmp_path / "j").create()
    for sample in gpu_samples(0, T0 + 7, T0 + 106, 30) + gpu_samples(1, T0 + 7, T0 + 106, 0):
        append_jsonl(jobdir.metrics / "gpu.jsonl", sample)
    append_jsonl(jobdir.events, {"time": T0 + 6, "type": "state", "state": "running"})
    append_jsonl(jobdir.events, {"time": T0 + 106, "type": "state", "state": "succeeded"})
    row = job_usage(record(job_dir=str(jobdir.root)), threshold_pct=10)

    assert row.gpu_busy_s == pytest.approx(100 * 0.3)
    assert row.gpu_waste_s == pytest.approx(100)


def test_a_samples_file_the_job_replaced_by_a_link_counts_as_absent(tmp_path: Path):
    jobdir = JobDir(tmp_path / "j").create()
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"time": %s, "gpu": 0, "utilization": 100}\n' % (T0 + 50))
    jobdir.metrics.mkdir(exist_ok=True)
    (jobdir.metrics / "gpu.jsonl").symlink_to(secret)

    row = job_usage(record(job_dir=str(jobdir.root)), threshold_pct=10)

    assert (row.gpu_busy_s, row.gpu_allocated_s) == (0, pytest.approx(200))


# --- the report ---------------------------------------------------------------------------------


def synthetic_rows(n: int, seed: int = 7):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        start = T0 + rng.uniform(0, 40 * 86400)
        gpus = rng.choice([0, 1, 2, 4, 8])
        rec = record(
            f"job-{i}",
            user=rng.choice(["ada", "grace", "alan", "edsger"]),
            team=rng.choice(["vision", "nlp", None]),
            queue=rng.choice(["a100", "h100"]),
            gpus=gpus,
            state=rng.choice([JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED]),
            created_at=start - rng.uniform(0, 600),
            admitted_at=start - 1,
            started_at=start,
            finished_at=start + rng.uniform(10, 7200),
            retries={"infrastructure": rng.randint(0, 2)},
        )
        util = rng.uniform(0, 100)
        samples = [
            s
            for g in range(gpus)
            for s in gpu_samples(g, start, start + 60, util if g % 2 else util / 20, step=10)
        ]
        rows.append(usage_row(rec, [], samples, threshold_pct=10))
    return rows


def memory_store() -> UsageStore:
    conn = sqlite3.connect(":memory:")
    return UsageStore(lambda: conn)


@pytest.mark.parametrize("by", list(UsageBy))
def test_the_report_sums_each_group_as_a_loop_over_the_rows_does(by: UsageBy):
    rows = synthetic_rows(500)
    usage = memory_store()
    usage.record(rows)
    since = T0 + 10 * 86400
    attribute = {"user": "user", "team": "team", "pool": "pool", "day": "day"}[by.value]

    expected: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        if row.finished_at < since:
            continue
        group = expected[getattr(row, attribute) or "-"]
        group["jobs"] += 1
        group[row.state] += 1
        for name in ("gpu_allocated_s", "gpu_busy_s", "gpu_waste_s", "cpu_s", "wall_s"):
            group[name] += getattr(row, name)
        group["retries"] += row.retries

    report = usage.report(by, since)
    assert {g.key for g in report} == set(expected)
    for g in report:
        want = expected[g.key]
        assert (g.jobs, g.succeeded, g.failed, g.cancelled, g.retries) == (
            want["jobs"],
            want["succeeded"],
            want["failed"],
            want["cancelled"],
            want["retries"],
        )
        for name in ("gpu_allocated_s", "gpu_busy_s", "gpu_waste_s", "cpu_s", "wall_s"):
            assert getattr(g, name) == pytest.approx(want[name])
    if by == UsageBy.DAY:
        assert [g.key for g in report] == sorted(expected)
    else:
        allocated = [g.gpu_allocated_s for g in report]
        assert allocated == sorted(allocated, reverse=True)


def test_the_report_keeps_to_a_user_or_a_team():
    rows = synthetic_rows(300)
    usage = memory_store()
    usage.record(rows)

    mine = usage.report(UsageBy.POOL, 0, user="ada")
    assert sum(g.jobs for g in mine) == sum(r.user == "ada" for r in rows)
    team = usage.report(UsageBy.TEAM, 0, team="nlp")
    assert [(g.key, g.jobs) for g in team] == [("nlp", sum(r.team == "nlp" for r in rows))]


def test_the_report_reads_its_indexes():
    usage = memory_store()
    usage.record(synthetic_rows(50))
    conn = usage._connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)

    def plan(**scope: str) -> str:
        statements.clear()
        usage.report(UsageBy.USER, T0, **scope)
        (sql,) = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        return " ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))

    # Every user: the covering index alone, never the table; one user or team: their index.
    assert "USING COVERING INDEX usage_report" in plan()
    assert "USING INDEX usage_by_user" in plan(user="ada")
    assert "USING INDEX usage_by_team" in plan(team="nlp")


def test_writing_a_row_again_replaces_it():
    usage = memory_store()
    first = usage_row(record(), threshold_pct=10)
    usage.record([first])
    usage.record([usage_row(record(gpus=4), threshold_pct=10)])

    assert usage.row("j")["gpu_allocated_s"] == pytest.approx(400)
    assert [g.jobs for g in usage.report(UsageBy.USER, 0)] == [1]


def test_backfill_fills_in_the_ended_jobs_without_a_row(tmp_path: Path):
    store = Store(tmp_path / "trainhub.db")
    with store.transaction() as conn:
        store.insert(conn, record("done", job_dir=str(tmp_path / "done")))
        store.insert(conn, record("running", state=JobState.RUNNING, finished_at=None))
    usage = accounting.usage_store(store)

    assert accounting.backfill(store, threshold_pct=10) == 1
    assert usage.recorded(["done", "running"]) == {"done"}
    assert accounting.backfill(store, threshold_pct=10) == 0  # nothing left to fill in
    assert accounting.backfill(store, threshold_pct=50, recompute=True) == 1
    assert usage.row("done")["waste_utilization_pct"] == 50


# --- arguments and output -------------------------------------------------------------------------


def test_since_takes_a_span_or_a_date():
    now = T0
    assert since_time("30d", now) == now - 30 * 86400
    assert since_time("12h", now) == now - 12 * 3600
    assert since_time("90m", now) == now - 90 * 60
    assert since_time("2w", now) == now - 14 * 86400
    assert since_time("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    for bad in ("30", "yesterday", "-3d", "2026-13-01"):
        with pytest.raises(ValueError, match="span back from now"):
            since_time(bad, now)


def test_a_bad_query_names_the_field():
    with pytest.raises(ValueError, match="since"):
        UsageQuery(since="soon")
    with pytest.raises(ValueError, match="by"):
        UsageQuery(by="month")


def test_table_and_csv_show_every_group():
    usage = memory_store()
    usage.record(synthetic_rows(50))
    from trainhub.usage.models import UsageReport

    report = UsageReport(
        by=UsageBy.TEAM, since=T0, waste_utilization_pct=10, groups=usage.report(UsageBy.TEAM, T0)
    )
    text = table(report)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["TEAM", "JOBS", "OK/FAIL/CANC"]
    assert [line.split()[0] for line in lines[1:-2]] == [g.key for g in report.groups]
    assert lines[-2].split()[:2] == ["total", "50"]
    assert "under 10% utilization" in lines[-1]

    parsed = list(csv.DictReader(io.StringIO(csv_text(report))))
    assert [(r["key"], int(r["jobs"])) for r in parsed] == [(g.key, g.jobs) for g in report.groups]
    assert float(parsed[0]["gpu_waste_s"]) == pytest.approx(report.groups[0].gpu_waste_s)


def test_rows_kept_for_the_team_are_read_back_by_period_user_and_what_is_read_afresh(
    tmp_path: Path,
) -> None:
    from trainhub.usage import kept

    old = usage_row(record("old", user="ada", finished_at=1000.0), threshold_pct=10)
    ada = usage_row(record("a", user="ada", finished_at=5000.0), threshold_pct=10)
    bo = usage_row(record("b", user="bo", finished_at=6000.0), threshold_pct=10)
    for row in (old, ada, bo):
        kept.keep(tmp_path, row)
    (tmp_path / kept.USAGE_DIR / "broken.json").write_text("{not a row")
    (tmp_path / kept.USAGE_DIR / "link.json").symlink_to(tmp_path / kept.USAGE_DIR / "a.json")

    def ids(**asked: object) -> list[str]:
        return sorted(r.job_id for r in kept.kept_rows(tmp_path, **asked))  # type: ignore[arg-type]

    assert ids(since=2000.0, user=None, excluding=set()) == ["a", "b"]
    assert ids(since=0.0, user="ada", excluding=set()) == ["a", "old"]
    assert ids(since=0.0, user=None, excluding={"a"}) == ["b", "old"]
    assert kept.kept_rows(tmp_path, since=0.0, user="bo", excluding=set()) == [bo]
    assert kept.kept_rows(tmp_path / "nowhere", since=0.0, user=None, excluding=set()) == []
