"""A page of the team's jobs and their count, newest first: those with a Job object ordered and
filtered from an index of the namespace (kept by a watch-fed cache until a Job or pod changes,
so a page costs what it shows), those whose objects are gone from their directories; each
record built only for the jobs a page holds."""

from __future__ import annotations

import bisect
import functools
import heapq
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from trainhub.backends.kubernetes import status
from trainhub.backends.kubernetes.cluster import Namespace, Obj, by_owner
from trainhub.backends.kubernetes.records import (
    RECORDS_KEPT,
    Records,
    created_seq,
    record_notes,
    refusals_logged,
)
from trainhub.jobs import ownership
from trainhub.jobs.directory import EVENTS, JobDir
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState

RACY_NS = 2 * 10**9  # a directory changed this recently is listed again (_job_dirs)
SHARED = object()  # reading()'s key, with a job id, for whether the job is shared (_shared)


class Listing(Records):
    """The backend's lists: a page of jobs, their count, every job (for usage)."""

    _dirs_listed: tuple[tuple[int, int], frozenset[str]] | None = None  # (_job_dirs)
    _without_job: tuple[frozenset[str], _JobIndex, frozenset[str]] | None = None  # (_gone_names)
    _sharing: dict[str, tuple[tuple[int, int], bool]]  # job id -> (its directory's, _shared)
    _gone_read: dict[str, tuple[tuple[int, ...], JobRecord | None]]  # (_gone_record)

    def list_jobs(
        self, wanted: JobFilter, *, limit: int, before_seq: int | None = None
    ) -> list[JobRecord]:
        page: list[tuple[_Indexed | _Gone, JobRecord]] = []
        for entry in self._listed(_Asked(wanted, before_seq)):
            if len(page) == limit:
                break
            record = self._record(entry)
            if record is not None and wanted.finds(record):
                page.append((entry, record))
        # Kueue's side of the page alone: its Workloads, in one request by their Jobs' uids.
        workloads = self._workloads_of([e.job for e, _ in page if e.job is not None])
        return [
            self._with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
            for e, r in page
        ]

    def count(self, wanted: JobFilter) -> int:
        asked = _Asked(wanted)
        if not wanted.by_record:
            # state, user and order come from the objects and the directories: no record built
            index = self._index(asked.owner)
            return self._counted(index, asked) + len(self._gone(index, asked))
        return sum(
            1 for e in self._listed(asked) if (r := self._record(e)) is not None and wanted.finds(r)
        )

    def _all(self, user: str | None) -> list[JobRecord]:
        entries = list(self._listed(_Asked(JobFilter(user=user))))
        workloads = by_owner(self._workloads()) if any(e.job for e in entries) else {}
        return [
            self._with_workload(r, e.job, workloads.get(e.job["metadata"]["uid"])) if e.job else r
            for e in entries
            if (r := self._record(e)) is not None
        ]

    def _listed(self, asked: _Asked) -> Iterator[_Indexed | _Gone]:
        """The team's jobs ``asked`` for, newest first: those with a Job object from the
        namespace's index, each record built only when asked for (:meth:`_record`); those whose
        objects are gone (cancelled, cleaned up) from their directories."""
        index = self._index(asked.owner)
        with_objects = self._matching(index, asked)
        gone = self._gone(index, asked)
        return heapq.merge(with_objects, gone, key=lambda e: -e.seq) if gone else with_objects

    def _record(self, entry: _Indexed | _Gone) -> JobRecord | None:
        """A listed job's record, built now for one with a Job object, without what its
        Workload adds (:meth:`_with_workload`); None when its files are refused: one job that
        swapped its files for links or FIFOs is left out of the list (asking for it names the
        refusal), never taking the list of every other job down with it."""
        if isinstance(entry, _Gone):
            return entry.record
        with refusals_logged(entry.id):
            return self._readable(entry.job, entry.pods)
        return None

    def _readable(self, job: Obj, pods: list[Obj]) -> JobRecord | None:
        """The record of a live Job, or None where its directory is a teammate's that this
        process may not read (a member's job is private until shared)."""
        try:
            return self._observed(job, pods)
        except PermissionError:
            return None

    def _index(self, user: str | None) -> _JobIndex:
        """``user``'s Jobs (all the team's for None) newest first, with what filtering and
        ordering need: built from one read of the namespace, and kept by a watch-fed cache
        until a Job or pod changes, so a page reads what it shows, not the whole namespace."""

        def build() -> _JobIndex:
            seen = self._read_namespace(user)
            present = [j for j in seen.jobs if not going(j)]  # going: read from its directory
            entries = [_indexed(job, seen) for job in present]
            entries.sort(key=lambda e: e.seq, reverse=True)
            return _JobIndex.of(seen, entries)

        index = self._derived(("jobs", "pods"), ("jobs by seq", user), build)
        shared = getattr(self._reading, "seen", None)
        if shared is not None:  # the reads that follow in this request see the same namespace
            shared.setdefault(user, index.seen)
        return index

    def _matching(self, index: _JobIndex, asked: _Asked) -> Iterator[_Indexed]:
        return self._held(index.before(asked.before_seq), asked)

    def _held(self, entries: Iterable[_Indexed], asked: _Asked) -> Iterator[_Indexed]:
        for e in entries:
            if asked.holds(e.owner, e.state, e.seq, functools.partial(self._shared, e.id)):
                yield e

    def _counted(self, index: _JobIndex, asked: _Asked) -> int:
        """How many of the index's jobs ``asked`` holds (``before_seq`` aside): the user's
        (everyone's) from its tally, so a count does not walk the namespace; with those shared,
        each teammate's job asked whether it is."""
        wanted = asked.wanted
        mine = index.tally_of(wanted.user, wanted.states)
        if wanted.user is None or not wanted.with_shared:
            return mine
        return mine + sum(1 for _ in self._held(index.others(wanted.user), asked))

    def _gone(self, index: _JobIndex, asked: _Asked) -> list[_Gone]:
        """The team's jobs without a Job object, newest first, from their directories."""
        entries = []
        for name in self._gone_names(index):
            with refusals_logged(name):
                rec = self._gone_record(name)
                if rec is not None and asked.holds(
                    rec.user, rec.state, rec.seq or 0, lambda r=rec: r.shared == "team"
                ):
                    entries.append(_Gone(rec.id, rec.seq or 0, rec))
        entries.sort(key=lambda e: e.seq, reverse=True)
        return entries

    def _gone_record(self, name: str) -> JobRecord | None:
        """The record of a job whose Job is gone, from its directory: read again only once
        the directory (its files are replaced by renames into it) or its events (appended)
        changed, so a team's hundreds of ended jobs are not read for every page."""
        path = os.path.join(self.jobs_root, name)
        try:
            seen = os.stat(path, follow_symlinks=False)
            events = os.stat(os.path.join(path, EVENTS), follow_symlinks=False)
        except OSError:
            return self._from_jobdir(self.jobs_root / name)  # it says why, or None
        stamp = (seen.st_mtime_ns, seen.st_ino, events.st_size, events.st_mtime_ns)
        held = self._gone_read.get(name)
        if held is not None and held[0] == stamp:
            return held[1]
        record = self._from_jobdir(self.jobs_root / name)
        # Only a final answer is kept: one not yet final (a Job being made or replaced) changes
        # with time alone, its directory unchanged.
        final = record is None or record.state.terminal
        if final and time.time_ns() - max(seen.st_mtime_ns, events.st_mtime_ns) > RACY_NS:
            if len(self._gone_read) >= RECORDS_KEPT:
                self._gone_read.clear()
            self._gone_read[name] = (stamp, record)
        return record

    def _gone_names(self, index: _JobIndex) -> frozenset[str]:
        """The directories below the jobs root whose Job is not in ``index``: found again only
        once either changed (each is the same object until then), not for every page."""
        dirs, held = self._job_dirs(), self._without_job
        if held is None or held[0] is not dirs or held[1] is not index:
            held = self._without_job = (dirs, index, dirs.difference(index.names))
        return held[2]

    def _job_dirs(self) -> frozenset[str]:
        """The names of the directories below the team's jobs root, read again only once it
        changed (a directory made, removed or renamed there changes its mtime): a page does
        not list a thousand directories to find the few whose Job is gone."""
        try:
            seen = os.stat(self.jobs_root)
        except (FileNotFoundError, NotADirectoryError):
            return frozenset()
        stamp = (seen.st_mtime_ns, seen.st_ino)
        held = self._dirs_listed
        if held is not None and held[0] == stamp:
            return held[1]
        try:
            with os.scandir(self.jobs_root) as listing:
                names = frozenset(d.name for d in listing if d.is_dir(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            return frozenset()
        # A change within the file system's timestamp granularity of this read could leave the
        # mtime as it is: a listing that recent is not kept (git's "racy" index entries).
        if time.time_ns() - seen.st_mtime_ns > RACY_NS:
            self._dirs_listed = (stamp, names)
        return names

    def _shared(self, job_id: str) -> bool:
        """Whether the owner of the team's job ``job_id`` shared it with the team, as its
        directory below the team's jobs root says (trainhub.jobs.sharing): read again only
        once the directory changed (the owner's edit is a rename into it), so a page among a
        thousand teammates' jobs reads no file; looked at once per request (the page and its
        count ask alike)."""
        asked = getattr(self._reading, "seen", None)
        key = (SHARED, job_id)
        if asked is not None and key in asked:
            return asked[key]
        shared = self._shared_now(job_id)
        if asked is not None:
            asked[key] = shared
        return shared

    def _shared_now(self, job_id: str) -> bool:
        """_shared, from what was read before while the directory stays as it was."""
        try:
            seen = os.stat(os.path.join(self.jobs_root, job_id), follow_symlinks=False)
        except OSError:
            return False
        if ownership.guarded(self.jobs_root) and not ownership.team_readable(seen.st_mode):
            return False  # closed to the team: its flag says nothing else, and is not readable
        stamp = (seen.st_mtime_ns, seen.st_ino)
        held = self._sharing.get(job_id)
        if held is not None and held[0] == stamp:
            return held[1]
        shared = JobDir(self.jobs_root / job_id).read_edits([])["shared"] == "team"
        if time.time_ns() - seen.st_mtime_ns > RACY_NS:  # as _job_dirs: a recent one is read
            if len(self._sharing) >= RECORDS_KEPT:
                self._sharing.clear()
            self._sharing[job_id] = (stamp, shared)
        return shared


@dataclass(frozen=True)
class _Indexed:
    """A job with a Job object, as ordering and filtering a list need it."""

    id: str
    seq: int
    state: JobState
    owner: str | None
    job: Obj
    pods: list[Obj]  # as the index's read of the namespace saw them


@dataclass(frozen=True)
class _Gone:
    """A job whose Job object is gone, as a list holds it: its record, from its directory."""

    id: str
    seq: int
    record: JobRecord
    job: None = None


@dataclass(frozen=True)
class _JobIndex:
    """The namespace's Jobs newest first (not those on their way out), the read they came
    from, their names, each owner's, and how many of each owner's are in each state."""

    seen: Namespace
    entries: tuple[_Indexed, ...]
    names: frozenset[str]
    by_owner: dict[str | None, tuple[_Indexed, ...]]
    tally: Counter[tuple[str | None, JobState]]

    @classmethod
    def of(cls, seen: Namespace, entries: list[_Indexed]) -> _JobIndex:
        by_owner: dict[str | None, list[_Indexed]] = {}
        for e in entries:
            by_owner.setdefault(e.owner, []).append(e)
        return cls(
            seen,
            tuple(entries),
            frozenset(e.id for e in entries),
            {owner: tuple(owned) for owner, owned in by_owner.items()},
            Counter((e.owner, e.state) for e in entries),
        )

    def before(self, seq: int | None) -> Iterator[_Indexed]:
        """The entries submitted before ``seq`` (all for None), found by bisection: a later
        page starts where the one before it ended."""
        entries = self.entries
        start = 0 if seq is None else bisect.bisect_right(entries, -seq, key=lambda e: -e.seq)
        return (entries[i] for i in range(start, len(entries)))

    def tally_of(self, owner: str | None, states: Sequence[JobState] | None) -> int:
        """How many of ``owner``'s jobs (everyone's for None) are in ``states`` (any)."""
        return sum(
            n
            for (o, state), n in self.tally.items()
            if (owner is None or o == owner) and (not states or state in states)
        )

    def others(self, owner: str) -> Iterator[_Indexed]:
        """The entries of every owner but ``owner``."""
        return (e for o, owned in self.by_owner.items() if o != owner for e in owned)


def _indexed(job: Obj, seen: Namespace) -> _Indexed:
    notes = record_notes(job)  # the owner label holds the name made label-safe; this, the name
    pods = seen.pods_of(job)
    return _Indexed(
        job["metadata"]["name"],
        created_seq(notes),
        status.job_state(job, pods),
        notes.get("user"),
        job,
        pods,
    )


@dataclass(frozen=True)
class _Asked:
    """The jobs a list asks for: those ``wanted`` holds, submitted before ``before_seq``."""

    wanted: JobFilter
    before_seq: int | None = None

    @property
    def owner(self) -> str | None:
        """Whose Jobs the namespace's index need hold (all, when shared ones count)."""
        return None if self.wanted.with_shared else self.wanted.user

    def holds(
        self, owner: str | None, state: JobState, seq: int, shared: Callable[[], bool]
    ) -> bool:
        """Whether the list holds this job; whether it is ``shared`` is asked only of another's
        (a read of its directory for a job with a Job object)."""
        states, before, user = self.wanted.states, self.before_seq, self.wanted.user
        if (states and state not in states) or (before is not None and seq >= before):
            return False
        return user is None or owner == user or (self.wanted.with_shared and shared())


def going(job: Obj) -> bool:
    """A Job on its way out (cancelled, or replaced by its next attempt's): its pods and state
    are being torn down, so the job directory says how it stands."""
    return bool(job["metadata"].get("deletionTimestamp"))
