"""What a job reads as in an answer: its summary (a row of the Jobs panel and ``trainhub list``,
with why it waits), its description (the summary, the record's details, lineage and timeline)
and a page of a user's jobs. Built from the records the backend keeps and the job directory."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from trainhub.backends.base import Backend
from trainhub.jobs.access import JobAccess
from trainhub.jobs.directory import JobDir
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import (
    DataWait,
    DescribeJob,
    JobBase,
    JobDetails,
    JobPage,
    JobRecord,
    JobSummary,
    LatestScalar,
    ListJobsQuery,
    fields_of,
)
from trainhub.metrics.datawait import data_wait, read_wait_records

TIMELINE_EVENTS = frozenset(
    {
        "submitted",
        "state",
        "retry",
        "resize",  # an elastic job's membership change, with its reason
        "verdict",
        "cancel_requested",
        "pip_install",
        "suspend_requested",
        "suspended",
    }
)


def origin_of(record: JobRecord) -> str | None:
    """What a job runs again, in words: 'fork of X at step 74', 'resubmit of X'."""
    ref = record.spec.fork_from
    if ref is not None:
        at = f"at step {ref.step}" if ref.step is not None else "from its latest checkpoint"
        return f"fork of {ref.job_id} {at}"
    if record.resubmitted_from:
        return f"resubmit of {record.resubmitted_from}"
    return None


def _latest_scalar(record: dict[str, Any] | None) -> LatestScalar | None:
    try:
        return None if record is None else LatestScalar.model_validate(record)
    except ValueError:  # a line the job wrote that is not a scalar record
        return None


def summary(
    backend: Backend,
    record: JobRecord,
    wait: tuple[str | None, int | None] | None = None,
    *,
    scalar: str | None = None,
) -> JobSummary:
    """The job's summary; ``wait`` (why it waits, how many are ahead) is asked of the backend
    when not given; ``scalar``: the latest value of that training scalar."""
    reason, ahead = wait if wait is not None else backend.wait_reason(record)
    latest = JobDir(record.job_dir).last_scalar(scalar) if scalar else None
    return JobSummary(
        **fields_of(record, JobBase),
        priority=record.spec.priority.value,
        world_size=record.spec.resources.world_size,
        wait_reason=reason,
        position=ahead,
        failure_class=record.verdict.failure_class
        if record.verdict and record.state.terminal
        else None,
        source=record.spec.source.path,
        parameters=record.spec.parameters,
        origin=origin_of(record),
        scalar=_latest_scalar(latest),
    )


def describe(backend: Backend, record: JobRecord, *, files: bool = True) -> DescribeJob:
    """The job's description; without ``files`` nothing of its job directory (no lineage, no
    timeline)."""
    # Read without following links: a job that swapped its files for links or FIFOs is
    # refused with an error naming the file, never read through.
    jobdir = JobDir(record.job_dir)
    lineage = jobdir.read_lineage() if files else None
    if lineage is not None and (used := jobdir.read_model_inputs()):
        lineage = {**lineage, "models": used}  # the inputs it loaded by name (trainhub.models)
    events = jobdir.iter_events() if files else []
    timeline = [e for e in events if e.get("type") in TIMELINE_EVENTS]
    return DescribeJob(
        **fields_of(summary(backend, record), JobSummary),
        **fields_of(record, JobDetails),
        lineage=lineage,
        timeline=timeline,
        data_wait=data_wait_of(jobdir) if files else None,
    )


def data_wait_of(jobdir: JobDir) -> DataWait | None:
    """How much of the job's step time its ranks waited for data, and the advice; None when
    no rank iterated a DataLoader."""
    waited = data_wait(read_wait_records(jobdir))
    return DataWait(**asdict(waited)) if waited is not None else None


class Row:
    """A job's summary as a page shows it, and its JSON as the page's answer writes it: written
    once, when first sent."""

    __slots__ = ("_json", "summary")

    def __init__(self, summary: JobSummary) -> None:
        self.summary = summary
        self._json: str | None = None

    @property
    def json(self) -> str:
        if self._json is None:
            self._json = self.summary.model_dump_json()
        return self._json


class Summaries:
    """The summaries made lately, each kept (with its JSON) while its record is the very same
    object (a backend that keeps records built, as the Kubernetes one does, hands back the same
    one until its job changed) and why it waits is too: a page of unchanged jobs makes none and
    writes none."""

    KEPT = 10_000

    def __init__(self) -> None:
        self._held: dict[str, tuple[JobRecord, Any, Row]] = {}
        self.bodies = Bodies()  # the pages made of them, as sent

    def of(
        self, backend: Backend, record: JobRecord, wait: tuple[str | None, int | None] | None
    ) -> Row:
        held = self._held.get(record.id)
        if held is not None and held[0] is record and held[1] == wait:
            return held[2]
        made = Row(summary(backend, record, wait))
        if len(self._held) >= self.KEPT:
            self._held.clear()
        self._held[record.id] = (record, wait, made)
        return made


@dataclass(frozen=True)
class Body:
    """A page's answer as sent: its JSON's bytes, and their ETag as the web server would hash
    them (so a client's If-None-Match still finds it unchanged)."""

    data: bytes
    etag: str

    @classmethod
    def of(cls, text: str) -> Body:
        data = text.encode()
        return cls(data, f'"{hashlib.sha1(data).hexdigest()}"')


class Bodies:
    """The pages answered lately, each kept as its :class:`Body` while it is made of the very
    same rows (:class:`Summaries` keeps a row while its job is unchanged), the same total and
    the same next page: a page of unchanged jobs is neither written nor hashed again."""

    KEPT = 256

    def __init__(self) -> None:
        # the rows' ids, total and next page -> the rows (their ids stay theirs), the body
        self._held: dict[tuple[Any, ...], tuple[tuple[Row, ...], Body]] = {}

    def of(self, page: PageRows) -> Body:
        key = (page.total, page.next_before, *map(id, page.rows))
        held = self._held.get(key)
        if held is not None:
            return held[1]
        made = Body.of(page.json())
        if len(self._held) >= self.KEPT:
            self._held.clear()
        self._held[key] = (tuple(page.rows), made)
        return made


@dataclass(frozen=True)
class PageRows:
    """A page of jobs as its rows, to answer as a :class:`JobPage`, as its JSON or as the
    bytes sent (:meth:`body`, kept by ``bodies`` where its rows are kept summaries)."""

    rows: list[Row]
    next_before: int | None
    total: int
    bodies: Bodies | None = None

    def model(self) -> JobPage:
        return JobPage(
            jobs=[r.summary for r in self.rows], next_before=self.next_before, total=self.total
        )

    def json(self) -> str:
        """The page's JSON, as ``self.model().model_dump_json()`` writes it, made of its rows'
        JSON: a page of unchanged jobs serializes no summary again."""
        empty = JobPage(jobs=[], next_before=self.next_before, total=self.total)
        jobs = ",".join(r.json for r in self.rows)
        return empty.model_dump_json().replace(_NO_JOBS, f'{{"jobs":[{jobs}]', 1)

    def body(self) -> Body:
        """The page as sent: :meth:`json`'s bytes and their ETag."""
        return Body.of(self.json()) if self.bodies is None else self.bodies.of(self)


_NO_JOBS = '{"jobs":[]'  # how JobPage's JSON begins without jobs


def job_page(
    access: JobAccess,
    query: ListJobsQuery,
    user: str | None,
    summaries: Summaries | None = None,
) -> PageRows:
    """One page of the jobs ``user`` may read (every job without ``user``); ``summaries``
    keeps the summaries made for the pages before (not those with a scalar: its value is read
    each time) and the pages made of them as sent."""
    backend = access.backend
    wanted = JobFilter(
        user=user,
        states=query.states,
        sweep_id=query.sweep,
        pipeline_run=query.pipeline_run,
        search=query.search,
        # A user's list holds what their team shared with them, where the backend has teams.
        with_shared=access.shares(user),
    )
    with backend.reading():  # the page, its total and its wait reasons agree
        records = backend.list_jobs(wanted, limit=query.limit, before_seq=query.before)
        total = backend.count(wanted)
        waits = backend.wait_reasons(records)
    next_before = records[-1].seq if len(records) == query.limit else None
    bodies = None  # rows made for this page alone: no page of them is seen again
    if summaries is None or query.scalar:
        made = [Row(summary(backend, r, waits.get(r.id), scalar=query.scalar)) for r in records]
    else:
        made = [summaries.of(backend, r, waits.get(r.id)) for r in records]
        bodies = summaries.bodies
    return PageRows(
        rows=[s for r, s in zip(records, made, strict=True) if access.visible(r, user)],
        next_before=next_before,
        total=total,
        bodies=bodies,
    )
