"""Which alert an ending or a preemption raises, by what the job's ``notify`` asks for. The
backends queue it (:func:`trainhub.alerts.announce.announce_job`); this says which, once."""

from __future__ import annotations

from trainhub.jobs.specparts import NotifyOn
from trainhub.jobs.states import JobState


def end_alert_kind(notify: list[NotifyOn], state: JobState) -> str | None:
    """One alert per end: a failed job asked about failures or ends gets the failure's."""
    if state == JobState.FAILED and (NotifyOn.FAILURE in notify or NotifyOn.END in notify):
        return "failure"
    if NotifyOn.END in notify and state.terminal:
        return "end"
    return None


def preemption_alert_kind(notify: list[NotifyOn]) -> str | None:
    """A preempted job that goes again (requeued by Kueue, retried locally) raises one alert
    per preemption when asked."""
    return "preemption" if NotifyOn.PREEMPTION in notify else None
