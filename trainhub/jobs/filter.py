"""Which jobs a list or a count holds, said once for every backend and every caller."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainhub.jobs.search import found
from trainhub.jobs.states import JobState

if TYPE_CHECKING:
    from trainhub.jobs.models import JobRecord


@dataclass(frozen=True)
class JobFilter:
    """``user``'s jobs (everyone's for None; with ``with_shared``, on a backend with
    ``Feature.TEAM_SHARING``, also those other members shared with the team) in ``states``
    (any for None); only the trials of sweep ``sweep_id``, the steps of pipeline run
    ``pipeline_run`` and the jobs ``search`` finds (:mod:`trainhub.jobs.search`), when given.
    Paging (``before_seq``, a limit) is the list's, not the filter's: a page and its total
    share one filter."""

    user: str | None = None
    states: Sequence[JobState] | None = None
    sweep_id: str | None = None
    pipeline_run: str | None = None
    search: str | None = None
    with_shared: bool = False

    @property
    def by_record(self) -> bool:
        """Whether only a job's whole record can tell (a sweep, a pipeline run, a search)."""
        return self.sweep_id is not None or self.pipeline_run is not None or bool(self.search)

    def finds(self, record: JobRecord) -> bool:
        """Whether ``record`` passes what only a record can tell; whose job it is and its
        state are for the listing to check, from what it indexes."""
        return (
            (self.sweep_id is None or record.sweep_id == self.sweep_id)
            and (self.pipeline_run is None or record.pipeline_run == self.pipeline_run)
            and (not self.search or found(record, self.search))
        )


EVERY_JOB = JobFilter()
