"""Who may read or change a job, the one check every read and change of
:class:`trainhub.jobs.service.JobService` goes through: a user reads their own jobs and those a
teammate shared with their team (:mod:`trainhub.jobs.sharing`), and changes their own only.
Anything else is reported as not found, alike for a job that does not exist and one of another
user or team."""

from __future__ import annotations

from pathlib import Path

from trainhub.backends.base import Backend, Feature
from trainhub.errors import NotFound, ReadOnly
from trainhub.jobs import sharing
from trainhub.jobs.models import JobRecord


class JobAccess:
    """The jobs of one backend as one user may see them."""

    def __init__(self, backend: Backend, jobs_root: Path):
        self.backend = backend
        self.jobs_root = jobs_root

    @property
    def team(self) -> str | None:
        """The team of this session, whose members' shared jobs it may read."""
        return self.backend.team_name()

    def record(self, job_id: str, user: str | None = None) -> JobRecord:
        record = self.backend.get(job_id)
        if record is None or (user is not None and record.user != user):
            raise NotFound(f"No job {job_id}.")
        return record

    def readable(self, job_id: str, user: str | None = None) -> JobRecord:
        """A job ``user`` may read: their own, or a teammate's shared with their team
        (:mod:`trainhub.jobs.sharing`); anything else is not found, alike for a job that does
        not exist and one of another user or team."""
        # Ids are names with a suffix: anything else ("..", a path) is no job, asked of nobody.
        record = self.backend.get(job_id) if sharing.JOB_ID.match(job_id) else None
        if record is not None and self.visible(record, user):
            return record
        raise NotFound(f"No job {job_id}.")

    def owned(self, job_id: str, user: str | None, verb: str) -> JobRecord:
        """A job ``user`` may change (``verb`` it): their own. A teammate's shared job is
        refused as read-only (they see it already); any other as not found."""
        record = self.readable(job_id, user)
        if not sharing.is_owner(record, user):
            raise ReadOnly(sharing.read_only_sentence(record, verb))
        return record

    def shares(self, user: str | None) -> bool:
        """Whether ``user``'s lists hold what their team shared with them: where the backend
        has teams."""
        return (
            user is not None
            and Feature.TEAM_SHARING in self.backend.features
            and self.team is not None
        )

    def visible(self, record: JobRecord, user: str | None) -> bool:
        """A listed job of another member counts only when it passes the teammate's check."""
        return sharing.is_owner(record, user) or sharing.teammate_may_read(
            record, str(user), self.team, self.jobs_root
        )
