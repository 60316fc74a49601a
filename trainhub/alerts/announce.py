"""Announcing a job: its alert (which one: :mod:`trainhub.lifecycle.notify`), to which channels,
into the outbox. Never raises: an alert that cannot be queued is a sentence for the job's events."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from trainhub.alerts.channels import Channels, TeamAlerts, user_alerts_file, user_channels
from trainhub.alerts.message import Alert, job_alert, secret_values, team_alert
from trainhub.alerts.outbox import enqueue
from trainhub.jobs.models import JobRecord
from trainhub.teams.loading import env_team

# Queues a job's alert of a kind once per key; returns why it could not be, else None.
Announcer = Callable[[JobRecord, str, str], str | None]


def team_alerts(team: str | None) -> TeamAlerts | None:
    """The team's ``alerts:`` in TRAINHUB_TEAMS_FILE, when there is such a file and team."""
    found = env_team(team)
    return found.alerts if found is not None else None


def outbox_dir(home: Path) -> Path:
    return Path(os.environ.get("TRAINHUB_ALERTS_OUTBOX") or home / "alerts" / "outbox")


def with_team(owner: Channels, team: str | None) -> Channels:
    """The owner's channels and the team's."""
    alerts = team_alerts(team)
    return owner + Channels(webhooks=alerts.webhooks, email=alerts.email) if alerts else owner


def job_channels(owner: Channels, record: JobRecord) -> Channels:
    """The owner's channels and the job's team's."""
    return with_team(owner, record.team or record.spec.team)


def announce_job(
    home: Path,
    record: JobRecord,
    kind: str,
    *,
    owner: Callable[[], Channels] | None = None,
    outbox: Path | None = None,
    key: str | None = None,
    start_sender: bool = True,
) -> str | None:
    """Queue the job's alert of ``kind`` to the owner's channels (``owner()``, else the
    home's alerts file) into ``outbox`` (else the home's); returns why it could not be, else
    None. A ``key`` makes a second announcement of the same thing a no-op (outbox.enqueue)."""
    try:
        mine = owner() if owner is not None else user_channels(user_alerts_file(home))
        channels = job_channels(mine, record)
        if channels.empty:
            return None
        secrets = secret_values(os.environ, job_env=record.spec.env)
        enqueue(
            outbox or outbox_dir(home),
            job_alert(record, kind, secrets),
            channels,
            start_sender=start_sender,
            key=key,
        )
    except Exception as error:  # an alert never stands in the way of a job
        return f"The {kind} alert could not be queued: {error}"
    return None


def announce_team(home: Path, team: str, kind: str, sentence: str) -> str | None:
    """Queue a team event (idle GPU session, saturated quota) for a team that asks for it."""
    try:
        alerts = team_alerts(team)
        if alerts is None or kind not in alerts.events or alerts.empty:
            return None
        enqueue(outbox_dir(home), team_alert(kind, team, sentence), alerts)
    except Exception as error:
        return f"The {kind} alert of team {team} could not be queued: {error}"
    return None


def announce_own(
    home: Path,
    alert: Alert,
    team: str | None,
    *,
    key: str,
    owner: Callable[[], Channels] | None = None,
    outbox: Path | None = None,
    start_sender: bool = True,
) -> str | None:
    """Queue an alert about something of a user's that is not a job (a schedule's refused
    run) to their channels (``owner()``, else the home's alerts file) and their team's, once
    per ``key``; returns why it could not be, else None."""
    try:
        mine = owner() if owner is not None else user_channels(user_alerts_file(home))
        channels = with_team(mine, team)
        enqueue(outbox or outbox_dir(home), alert, channels, start_sender=start_sender, key=key)
    except Exception as error:  # an alert never stands in the way
        return f"The {alert.kind} alert could not be queued: {error}"
    return None
