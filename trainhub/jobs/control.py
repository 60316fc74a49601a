"""Changing a job after submission, for :class:`trainhub.jobs.service.JobService`: its tags,
note and sharing (:func:`edit`), and the control verbs (cancel, suspend, resume what was
suspended). Each is its owner's alone; the answer is what the job reads as after the change."""

from __future__ import annotations

import getpass
from typing import Any

from pydantic import ValidationError

from trainhub.backends.base import Feature
from trainhub.errors import Conflict
from trainhub.jobs import confined, sharing, views
from trainhub.jobs.access import JobAccess
from trainhub.jobs.models import DescribeJob, JobEdit, JobSummary
from trainhub.jobs.spec import explain


def parse_edit(data: dict[str, Any]) -> JobEdit:
    try:
        return JobEdit.model_validate(data)
    except ValidationError as e:
        raise explain(e) from None


def edit(
    access: JobAccess, job_id: str, change: JobEdit | dict[str, Any], *, user: str | None
) -> JobSummary:
    """Tags and note as asked; sharing only where the backend has teams (private is kept)."""
    backend = access.backend
    change = change if isinstance(change, JobEdit) else parse_edit(change)
    user = user or getpass.getuser()
    record = access.owned(job_id, user, "change")
    teams = Feature.TEAM_SHARING in backend.features and record.team is not None
    if change.shared is None or (change.shared == sharing.Sharing.PRIVATE and not teams):
        # nothing to share with: private it stays
        return views.summary(backend, backend.edit(job_id, tags=change.tags, note=change.note))
    if not teams:
        raise Conflict(
            f"Job {job_id} cannot be shared: sharing with a team needs a hub with teams "
            f"(this server's {backend.name} backend keeps each user's jobs apart)."
        )
    edited = backend.edit(job_id, tags=change.tags, note=change.note, shared=change.shared)
    return views.summary(backend, edited)


def cancel(access: JobAccess, job_id: str, *, user: str | None, reason: str | None) -> DescribeJob:
    user = user or getpass.getuser()
    access.owned(job_id, user, "cancel")
    record = access.backend.cancel(job_id, reason or f"cancelled by {user}")
    try:
        return views.describe(access.backend, record)
    except confined.NotAJobFile:
        # Stopping a job that swapped its files for links must always work: the answer
        # then leaves out what the job directory would have told.
        return views.describe(access.backend, record, files=False)


def suspend(access: JobAccess, job_id: str, *, user: str | None, reason: str | None) -> DescribeJob:
    user = user or getpass.getuser()
    access.record(job_id, user)
    suspended = access.backend.suspend(job_id, reason or f"suspended by {user}")
    return views.describe(access.backend, suspended)


def resume(access: JobAccess, job_id: str, *, user: str | None) -> DescribeJob:
    user = user or getpass.getuser()
    access.record(job_id, user)
    return views.describe(access.backend, access.backend.resume(job_id))
