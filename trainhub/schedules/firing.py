"""When a schedule fires: one pure decision from the schedule, the last time it dealt with,
the clock and its active runs.

The caller applies a decision under the record's lock and asks again until it says wait:
after a restart the record's last time is where it left off, so every due time is either
fired, skipped with a reason, or still ahead — never fired twice (the claim is written before
the submit, trainhub.schedules.service).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from trainhub.schedules import cron
from trainhub.schedules.model import ON_TIME_SECONDS, Concurrency, CreateSchedule, Missed


@dataclass(frozen=True)
class Fire:
    """Submit the run of scheduled time ``at``, after cancelling the runs ``replace``."""

    at: float
    replace: tuple[str, ...] = ()
    missed_since: float | None = None  # earlier due times from this one on were not run


@dataclass(frozen=True)
class Skip:
    """Do not run scheduled time ``at`` (and the due times before it): ``reason`` says why."""

    at: float
    reason: str


@dataclass(frozen=True)
class Wait:
    """Nothing is due before ``until`` (None: nothing ever, or paused)."""

    until: float | None


Decision = Fire | Skip | Wait


def decide(schedule: CreateSchedule, since: float, now: float, active: Sequence[str]) -> Decision:
    """What to do about the due times after ``since`` at ``now``; ``active`` are the job ids of
    the schedule's runs that have not ended. Pure."""
    if schedule.paused:
        return Wait(None)
    due = cron.next_after(schedule.cron, schedule.timezone, since)
    if due is None or due > now:
        return Wait(due)
    latest = cron.last_at_or_before(schedule.cron, schedule.timezone, now)
    assert latest is not None and latest >= due
    late = now - latest
    missed_since = due if latest > due else None
    deadline = schedule.deadline_seconds
    if deadline is not None and late > deadline:
        return Skip(
            latest,
            f"missed: reached {_seconds(late)} after its time, past the starting deadline of "
            f"{_seconds(deadline)}" + _earlier(missed_since),
        )
    missed = missed_since is not None or late > max(ON_TIME_SECONDS, deadline or 0)
    if missed and schedule.missed == Missed.SKIP:
        return Skip(
            latest,
            f"missed: reached {_seconds(late)} after its time while no scheduler ran, and the "
            "schedule skips missed times" + _earlier(missed_since),
        )
    if active and schedule.concurrency == Concurrency.FORBID:
        return Skip(
            latest,
            f"an earlier run is still active ({', '.join(active)}) and the schedule's "
            "concurrency is forbid",
        )
    replace = tuple(active) if schedule.concurrency == Concurrency.REPLACE else ()
    return Fire(latest, replace=replace, missed_since=missed_since)


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _earlier(since: float | None) -> str:
    if since is None:
        return ""
    when = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"; the times due since {when} were missed too"
