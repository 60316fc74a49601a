"""Schedules' pure parts on a fake clock: cron times in a zone (DST included), validation
naming the field, and the firing decision (due, concurrency, missed runs, restarts)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from trainhub.jobs.spec import SpecError
from trainhub.schedules import cron
from trainhub.schedules.firing import Fire, Skip, Wait, decide
from trainhub.schedules.model import CreateSchedule, parse_schedule

BERLIN = ZoneInfo("Europe/Berlin")


def at(*args: int, fold: int = 0, tz: ZoneInfo = BERLIN) -> float:
    return datetime(*args, tzinfo=tz, fold=fold).timestamp()  # type: ignore[misc]


def local(t: float) -> str:
    return datetime.fromtimestamp(t, BERLIN).isoformat()


def schedule(**fields: object) -> CreateSchedule:
    data: dict[str, object] = {
        "name": "nightly",
        "target": {"kind": "notebook", "job": {"name": "nightly", "source": {"path": "t.ipynb"}}},
        "cron": "0 2 * * *",
        "timezone": "Europe/Berlin",
    }
    data.update(fields)
    return parse_schedule(data)


def fires(s: CreateSchedule, since: float, until: float) -> list[str]:
    """Every scheduled time fired between ``since`` and ``until``, the clock stepped to each
    due time exactly as a scheduler that sleeps until the next one would."""
    out: list[str] = []
    now = since
    while True:
        d = decide(s, since, now, [])
        if isinstance(d, Wait):
            if d.until is None or d.until > until:
                return out
            now = d.until
            continue
        assert isinstance(d, Fire), d
        out.append(local(d.at))
        since = d.at


# --- cron in a zone ---------------------------------------------------------------------------


def test_daily_time_follows_the_zone_across_both_changes():
    s = schedule(cron="30 2 * * *")
    spring = fires(s, at(2026, 3, 27, 12), at(2026, 3, 31, 12))
    # 02:30 does not exist on 29 March: it fires once, at the first minute after the jump.
    assert spring == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
        "2026-03-31T02:30:00+02:00",
    ]
    autumn = fires(s, at(2026, 10, 24, 12), at(2026, 10, 26, 12))
    # 02:30 happens twice on 25 October: it fires once, at the first.
    assert autumn == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]


def test_hourly_follows_real_time_through_the_repeated_hour():
    s = schedule(cron="0 * * * *")
    got = fires(s, at(2026, 10, 25, 0, 30), at(2026, 10, 25, 4, 30))
    assert got == [
        "2026-10-25T01:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
        "2026-10-25T04:00:00+01:00",
    ]
    # Starting inside the second pass of the repeated hour never goes back to the first.
    second = at(2026, 10, 25, 2, 30, fold=1)
    assert local(cron.next_after("0 * * * *", "Europe/Berlin", second)) == (
        "2026-10-25T03:00:00+01:00"
    )


def test_same_wall_time_in_another_zone_is_another_instant():
    utc = cron.next_after("0 2 * * *", "UTC", at(2026, 1, 1, 0, tz=ZoneInfo("UTC")))
    berlin = cron.next_after("0 2 * * *", "Europe/Berlin", at(2026, 1, 1, 0, tz=ZoneInfo("UTC")))
    assert utc is not None and berlin is not None and utc - berlin == 3600


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("cron", "0 2 * *", "has 4 fields"),
        ("cron", "61 2 * * *", "61 2 * * *"),
        ("cron", "0 0 30 2 *", "0 0 30 2 *"),
        ("cron", "0 2 * * * *", "has 6 fields"),
        ("timezone", "Mars/Olympus", "not an IANA time zone"),
        ("timezone", "../../etc/passwd", "not an IANA time zone"),
        ("starting_deadline", "soon", "not a duration"),
        ("concurrency", "sometimes", "forbid"),
        ("missed", "later", "run-once"),
        ("target.kind", "script", "'notebook' or 'pipeline'"),
    ],
)
def test_bad_input_is_refused_naming_the_field(field, value, words):
    if field == "target.kind":
        with pytest.raises(SpecError) as e:
            schedule(target={"kind": value, "job": {}})
    else:
        with pytest.raises(SpecError) as e:
            schedule(**{field: value})
    errors = {err.field: err.message for err in e.value.errors}
    assert field in errors, errors
    assert words in errors[field], errors


def test_a_pipeline_target_names_a_workspace_pipeline_file():
    s = schedule(target={"kind": "pipeline", "file": "flows/nightly.pipeline.yaml"})
    assert s.target.kind == "pipeline" and s.target.cache is True and s.target.parameters == {}
    given = {
        "kind": "pipeline",
        "file": "f.pipeline.yml",
        "parameters": {"lr": 0.1},
        "cache": False,
    }
    s = schedule(target=given)
    assert s.target.parameters == {"lr": 0.1} and s.target.cache is False
    for bad, field in (
        ({"kind": "pipeline", "file": "train.ipynb"}, "target.pipeline.file"),
        ({"kind": "pipeline"}, "target.pipeline.file"),
        ({"kind": "pipeline", "file": "f.pipeline.yaml", "job": {}}, "target.pipeline.job"),
    ):
        with pytest.raises(SpecError) as e:
            schedule(target=bad)
        assert field in {err.field for err in e.value.errors}, e.value.errors


def test_a_deadline_reads_as_a_duration():
    assert schedule(starting_deadline="10m").deadline_seconds == 600
    assert schedule().deadline_seconds is None


# --- the decision -------------------------------------------------------------------------------


def test_waits_until_the_next_time_then_fires_it_once():
    s = schedule()
    created = at(2026, 6, 1, 12)
    d = decide(s, created, created + 5, [])
    assert d == Wait(at(2026, 6, 2, 2))
    due = at(2026, 6, 2, 2)
    d = decide(s, created, due + 0.4, [])
    assert d == Fire(due)
    # Recorded as dealt with: the same clock reading decides nothing more.
    assert decide(s, due, due + 0.4, []) == Wait(at(2026, 6, 3, 2))


def test_paused_waits_for_nothing():
    assert decide(schedule(paused=True), 0, at(2026, 6, 2, 3), []) == Wait(None)


def test_concurrency_forbid_skips_allow_fires_replace_cancels():
    due = at(2026, 6, 2, 2)
    since, now = at(2026, 6, 1, 12), due + 1
    forbid = decide(schedule(concurrency="forbid"), since, now, ["j1"])
    assert isinstance(forbid, Skip) and forbid.at == due and "j1" in forbid.reason
    assert decide(schedule(concurrency="allow"), since, now, ["j1"]) == Fire(due)
    assert decide(schedule(concurrency="replace"), since, now, ["j1", "j2"]) == Fire(
        due, replace=("j1", "j2")
    )
    # A pipeline schedule's active pipeline run counts as a job does.
    flow = {"kind": "pipeline", "file": "f.pipeline.yaml"}
    skipped = decide(schedule(target=flow), since, now, ["flow-ab12cd"])
    assert isinstance(skipped, Skip) and "flow-ab12cd" in skipped.reason
    replaced = decide(schedule(target=flow, concurrency="replace"), since, now, ["flow-ab12cd"])
    assert replaced == Fire(due, replace=("flow-ab12cd",))
    # Nothing active: every policy fires.
    for policy in ("forbid", "allow", "replace"):
        assert decide(schedule(concurrency=policy), since, now, []) == Fire(due)


def test_after_downtime_run_once_fires_only_the_latest_missed_time():
    s = schedule(cron="0 * * * *")
    down, back = at(2026, 6, 1, 9, 30), at(2026, 6, 1, 14, 20)
    d = decide(s, down, back, [])
    assert d == Fire(at(2026, 6, 1, 14), missed_since=at(2026, 6, 1, 10))
    # It is recorded; the next decision waits for 15:00 — the missed hours never fire.
    assert decide(s, d.at, back, []) == Wait(at(2026, 6, 1, 15))


def test_after_downtime_skip_fires_nothing_until_the_next_time():
    s = schedule(cron="0 * * * *", missed="skip")
    down, back = at(2026, 6, 1, 9, 30), at(2026, 6, 1, 14, 20)
    d = decide(s, down, back, [])
    assert isinstance(d, Skip) and d.at == at(2026, 6, 1, 14)
    assert "skips missed times" in d.reason and "since 2026-06-01 08:00 UTC" in d.reason
    assert decide(s, d.at, back, []) == Wait(at(2026, 6, 1, 15))
    # One time only a little late is no missed time: it fires.
    assert decide(s, down, at(2026, 6, 1, 10, 0) + 20, []) == Fire(at(2026, 6, 1, 10))


def test_starting_deadline_skips_a_time_reached_too_late():
    s = schedule(starting_deadline="10m")
    due = at(2026, 6, 2, 2)
    since = at(2026, 6, 1, 12)
    assert decide(s, since, due + 599, []) == Fire(due)
    late = decide(s, since, due + 601, [])
    assert isinstance(late, Skip) and "starting deadline of 10 min" in late.reason
    # A deadline longer than the on-time grace lets run-once fire a late time of a skip schedule.
    lenient = schedule(starting_deadline="2h", missed="skip")
    assert decide(lenient, since, due + 3000, []) == Fire(due)


def test_restart_resumes_where_the_record_left_off():
    """A scheduler that stopped after recording 02:00 and comes back at 02:00 the next day
    minus a second fires nothing; one that comes back after it fires that one time."""
    s = schedule()
    recorded = at(2026, 6, 2, 2)
    assert decide(s, recorded, at(2026, 6, 3, 1, 59, 59), []) == Wait(at(2026, 6, 3, 2))
    assert decide(s, recorded, at(2026, 6, 3, 2, 0, 3), []) == Fire(at(2026, 6, 3, 2))
