"""The alert of a schedule's run that was refused (no job was made, so no job's own ``notify``
can tell) or whose pipeline run failed (its steps' jobs ask for no alert): the schedule's
owner and team hear it through their channels."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from trainhub.alerts.announce import announce_own
from trainhub.alerts.message import Alert, schedule_alert
from trainhub.schedules import cron
from trainhub.schedules.model import Run, ScheduleRecord


def refusal(record: ScheduleRecord, run: Run) -> tuple[Alert, str]:
    """The alert of a refused run (or a failed pipeline run), and the key that queues it
    once."""
    tz = cron.zone(record.request.timezone)
    when = "a run now" if run.at is None else datetime.fromtimestamp(run.at, tz).isoformat()
    what = "failed" if run.pipeline_run else "was refused"
    alert = schedule_alert(record.id, record.user, record.team, when, run.reason or "", what)
    key = f"{record.id}-{run.at if run.at is not None else run.claimed_at}"
    return alert, f"{key}-{'failed' if run.pipeline_run else 'refused'}"


def announcer(home: Path) -> Callable[[ScheduleRecord, Run], None]:
    """Announces a refused run through the channels of ``home``'s user (the local scheduler
    and front doors run as the schedule's owner)."""

    def announce(record: ScheduleRecord, run: Run) -> None:
        alert, key = refusal(record, run)
        announce_own(home, alert, record.team, key=key)

    return announce
