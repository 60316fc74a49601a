"""Which of a user's jobs changed since the last look (for the jobs/stream websocket)."""

from __future__ import annotations

from typing import Any

from trainhub.errors import NotFound
from trainhub.jobs.models import JobSummary, ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.states import TERMINAL_STATES, JobState

ACTIVE_STATES = [s for s in JobState if s not in TERMINAL_STATES]
RECENT = 50
MAX_ACTIVE = 500


def snapshot(service: JobService, user: str, watched: set[str]) -> dict[str, JobSummary]:
    """The user's newest jobs, every unfinished one, and any ``watched`` job (which may just
    have finished and dropped out of both lists)."""
    jobs: dict[str, JobSummary] = {}
    for query in (
        ListJobsQuery(limit=RECENT),
        ListJobsQuery(states=ACTIVE_STATES, limit=MAX_ACTIVE),
    ):
        jobs.update((j.id, j) for j in service.list_jobs(query, user=user).jobs)
    for job_id in watched - jobs.keys():
        try:
            described = service.describe(job_id, user=user)
        except NotFound:  # removed meanwhile: nothing more to report about it
            continue
        jobs[job_id] = JobSummary.model_validate(
            described.model_dump(include=set(JobSummary.model_fields))
        )
    return jobs


def changed(before: dict[str, dict[str, Any]], now: dict[str, JobSummary]) -> list[JobSummary]:
    """Jobs whose summary differs from what was last sent, oldest submission first."""
    out = [job for job_id, job in now.items() if before.get(job_id) != job.model_dump(mode="json")]
    return sorted(out, key=lambda j: (j.seq or 0, j.created_at))


def still_watched(now: dict[str, JobSummary]) -> set[str]:
    return {job_id for job_id, job in now.items() if not job.state.terminal}
