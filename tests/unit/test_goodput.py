"""Goodput from hand-built records: attempts, steps and checkpoint events in, the share of
allocated GPU time that made kept progress and what was lost, each part, out."""

from __future__ import annotations

import pytest

from trainhub.usage.compute import attempt_spans
from trainhub.usage.goodput import goodput, step_points


def steps(attempt: int, start: float, first: int, last: int, every: float = 1.0) -> list[dict]:
    """Rank 0's scalars (two names a step) for steps first..last, one each ``every`` s."""
    return [
        {
            "time": start + i * every,
            "step": s,
            "name": n,
            "value": 0.5,
            "rank": 0,
            "attempt": attempt,
        }
        for i, s in enumerate(range(first, last + 1))
        for n in ("loss", "lr")
    ]


def state(t: float, state: str, attempt: int = 0) -> dict:
    return {"time": t, "type": "state", "state": state, "attempt": attempt}


def test_a_clean_job_is_productive_but_for_its_start_up_and_stalls():
    # Running 100..200; steps 0..89 from 110 to 199; two saves stalled 1.5 s each.
    events = [
        state(100, "running"),
        {"time": 130, "type": "checkpoint", "step": 30, "stall_seconds": 1.5},
        {"time": 160, "type": "checkpoint", "step": 60, "stall_seconds": 1.5},
        state(200, "succeeded"),
    ]
    spans = attempt_spans(events, 100, 200)
    g = goodput(spans, events, steps(0, 110, 0, 89), gpus=2)
    assert g.gpu_startup_s == pytest.approx(2 * 10)
    assert g.gpu_checkpoint_s == pytest.approx(2 * 3)
    assert g.gpu_redone_s == 0 and g.gpu_interrupted_s == 0 and g.redone_steps == 0
    assert g.gpu_productive_s == pytest.approx(2 * (100 - 13))
    assert g.goodput == pytest.approx(0.87)
    assert g.steps == 90 and g.requeue_s == 0


def test_a_restart_from_an_older_checkpoint_redoes_steps():
    # Attempt 0: running at 0, steps 0..27 at 5..32, saved at step 20, killed at 34.
    # Backoff and queueing 34..40; attempt 1 resumes at step 21 (first step at 45) and
    # passes step 27 at 52, then runs on to step 50 at 74, ending at 75.
    events = [
        state(0, "running"),
        {"time": 25.5, "type": "checkpoint", "step": 20, "stall_seconds": 0.5},
        state(34, "retrying", 1),
        {"time": 34, "type": "retry", "attempt": 1, "resume_step": 20},
        state(36, "queued", 1),
        state(40, "running", 1),
        state(75, "succeeded", 1),
    ]
    scalars = steps(0, 5, 0, 27) + steps(1, 45, 21, 50)
    spans = attempt_spans(events, 0, 75)
    assert spans == [(0, 34), (40, 75)]
    g = goodput(spans, events, scalars, gpus=4)
    assert g.redone_steps == 7  # 21..27 again
    assert g.gpu_redone_s == pytest.approx(4 * (52 - 45))  # until step 28, the first new one
    assert g.gpu_startup_s == pytest.approx(4 * (5 + 5))
    assert g.gpu_interrupted_s == pytest.approx(4 * (34 - 32))
    assert g.gpu_checkpoint_s == pytest.approx(4 * 0.5)
    assert g.requeue_s == pytest.approx(6)  # waiting between attempts holds no GPU
    allocated = 34 + 35
    productive = allocated - 10 - 7 - 2 - 0.5
    assert g.gpu_productive_s == pytest.approx(4 * productive)
    assert g.goodput == pytest.approx(productive / allocated)
    assert g.goodput < 1
    assert g.steps == 51


def test_an_attempt_without_steps_is_all_start_up():
    events = [state(0, "running"), state(20, "retrying", 1), state(30, "running", 1)]
    scalars = steps(1, 40, 0, 9)
    spans = attempt_spans(events, 0, 50)
    g = goodput(spans, events, scalars, gpus=1)
    assert g.gpu_startup_s == pytest.approx(20 + 10)
    assert g.redone_steps == 0  # no earlier attempt reached any step
    assert g.goodput == pytest.approx(10 / 40)  # steps from 40 to the end at 50


def test_no_step_no_goodput_and_a_job_without_gpus_still_has_a_share():
    events = [state(0, "running"), state(10, "succeeded")]
    spans = attempt_spans(events, 0, 10)
    assert goodput(spans, events, [], gpus=1).goodput is None
    g = goodput(spans, events, steps(0, 2, 0, 7), gpus=0)
    assert g.goodput == pytest.approx(0.8) and g.gpu_productive_s == 0


def test_only_the_lowest_rank_counts_and_bad_records_are_skipped():
    records = [
        {"time": 1, "step": 0, "rank": 1},
        {"time": 2, "step": 0, "rank": 0},
        {"time": 3, "step": 1, "rank": 0},
        {"time": 3, "step": 1, "rank": 0},
        {"time": "x", "step": 2, "rank": 0},
        {"time": 4, "step": True, "rank": 0},
        {"time": 5, "rank": 0},
    ]
    assert step_points(records) == [(2.0, 0), (3.0, 1)]


def test_overlapping_losses_never_exceed_the_allocation():
    # A sync save that stalls longer than the attempt: clipped, the share stays in [0, 1].
    events = [
        state(0, "running"),
        {"time": 9, "type": "checkpoint", "step": 1, "stall_seconds": 50},
        state(10, "succeeded"),
    ]
    spans = attempt_spans(events, 0, 10)
    g = goodput(spans, events, steps(0, 5, 0, 1), gpus=1)
    lost = g.gpu_startup_s + g.gpu_checkpoint_s + g.gpu_redone_s + g.gpu_interrupted_s
    assert lost == pytest.approx(10)
    assert g.goodput == pytest.approx(0)


# --- in the usage row and the report --------------------------------------------------------


def test_the_report_sums_goodput_per_team_over_the_jobs_that_logged_steps(tmp_path):
    import sqlite3

    from tests.unit.test_usage import T0, record
    from trainhub.usage.compute import usage_row
    from trainhub.usage.models import UsageBy
    from trainhub.usage.report import csv_text, table
    from trainhub.usage.store import UsageStore

    def row(job_id: str, team: str, scalars: list[dict]):
        events = [state(T0 + 6, "running"), state(T0 + 106, "succeeded")]
        return usage_row(record(job_id, team=team), events, [], [], scalars, threshold_pct=10)

    clean = row("clean", "vision", steps(0, T0 + 16, 0, 89))  # 10 s of start-up in 100
    late = row("late", "vision", steps(0, T0 + 56, 0, 49))  # 50 s
    silent = row("silent", "vision", [])  # no step: in the GPU-hours, not in the goodput
    other = row("other", "nlp", steps(0, T0 + 6, 0, 99))
    assert (clean.goodput, late.goodput, silent.goodput) == (pytest.approx(0.9), 0.5, None)

    conn = sqlite3.connect(tmp_path / "u.db")
    usage = UsageStore(lambda: conn)
    usage.record([clean, late, silent, other])
    groups = {g.key: g for g in usage.report(UsageBy.TEAM, 0)}
    vision = groups["vision"]
    assert vision.gpu_allocated_s == pytest.approx(3 * 200)
    assert vision.goodput_allocated_s == pytest.approx(2 * 200)
    assert vision.goodput == pytest.approx((0.9 * 200 + 0.5 * 200) / 400)
    assert groups["nlp"].goodput == pytest.approx(1.0)
    assert usage.row("silent")["goodput"] is None

    text = table(usage_report(usage))
    head, *lines = text.splitlines()
    assert head.split()[-2:] == ["GOODPUT", "REDONE-H"]
    assert next(line for line in lines if line.startswith("vision")).split()[-2] == "70%"
    assert "goodput" in csv_text(usage_report(usage)).splitlines()[0]


def usage_report(usage):
    from trainhub.usage.models import UsageBy, UsageReport

    return UsageReport(
        by=UsageBy.TEAM, since=0, waste_utilization_pct=10, groups=usage.report(UsageBy.TEAM, 0)
    )


def test_a_table_from_before_goodput_is_derived_again(tmp_path):
    import sqlite3

    from trainhub.usage.store import UsageStore

    conn = sqlite3.connect(tmp_path / "u.db")
    conn.execute("CREATE TABLE usage (job_id TEXT PRIMARY KEY, user TEXT)")
    conn.execute("INSERT INTO usage VALUES ('old', 'ada')")
    conn.commit()
    usage = UsageStore(lambda: conn)
    assert usage.count() == 0  # dropped: the next report backfills every ended job
    columns = {r[1] for r in conn.execute("PRAGMA table_info(usage)")}
    assert {"goodput", "gpu_redone_s", "redone_steps"} <= columns


def test_the_parts_in_time_are_the_gpu_parts_per_gpu():
    events = [state(0, "running"), state(100, "succeeded")]
    spans = attempt_spans(events, 0, 100)
    g = goodput(spans, events, steps(0, 20, 0, 79), gpus=4)
    assert (g.startup_s, g.productive_s) == (pytest.approx(20), pytest.approx(80))
    assert g.gpu_startup_s == pytest.approx(4 * g.startup_s)
    none = goodput(spans, events, steps(0, 20, 0, 79), gpus=0)
    assert (none.startup_s, none.gpu_startup_s, none.goodput) == (pytest.approx(20), 0, 0.8)
