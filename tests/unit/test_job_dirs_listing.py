"""The directories below a team's jobs root, as a page of jobs finds those whose Job is gone:
listed again only once the root changed, and never kept while a change could hide in the
timestamp's granularity; and what a page reads in them (whether a teammate's job is shared, the
record of a job whose Job is gone), read again only once they changed, under the same rule."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainhub.backends.kubernetes import listing
from trainhub.backends.kubernetes.listing import Listing
from trainhub.jobs.directory import JobDir
from trainhub.jobs.states import JobState


def reader(root: Path) -> Listing:
    lists = Listing.__new__(Listing)  # only the jobs root and what is kept matter here
    lists.jobs_root = root
    lists._sharing, lists._gone_read, lists._reading = {}, {}, threading.local()
    return lists


def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.scandir

    def counted(path: os.PathLike[str]) -> object:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(listing.os, "scandir", counted)
    return seen


def age(path: Path, seconds: float = 60) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def test_a_settled_root_is_listed_once_and_again_after_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-1").mkdir()
    (tmp_path / "not-a-job").write_text("")
    os.symlink(tmp_path / "a-1", tmp_path / "link")
    age(tmp_path)
    lists, seen = reader(tmp_path), scans(monkeypatch)
    assert lists._job_dirs() == {"a-1"}  # directories only; links are never followed
    assert lists._job_dirs() == {"a-1"} and len(seen) == 1

    (tmp_path / "b-2").mkdir()  # changes the root's mtime
    assert lists._job_dirs() == {"a-1", "b-2"} and len(seen) == 2
    (tmp_path / "a-1").rmdir()
    assert lists._job_dirs() == {"b-2"}


def test_a_root_changed_within_the_racy_window_is_listed_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-1").mkdir()  # just now: a second change could keep this mtime
    lists, seen = reader(tmp_path), scans(monkeypatch)
    assert lists._job_dirs() == {"a-1"}
    assert lists._job_dirs() == {"a-1"} and len(seen) == 2
    age(tmp_path)
    lists._job_dirs()
    lists._job_dirs()
    assert len(seen) == 3


def test_no_root_lists_nothing(tmp_path: Path) -> None:
    assert reader(tmp_path / "absent")._job_dirs() == frozenset()


def test_sharing_is_read_again_only_once_the_owner_changed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = JobDir(tmp_path / "a-1").create()
    job.write_edits([], "", "team")
    age(job.root)
    lists, reads = reader(tmp_path), []
    real = JobDir.read_edits

    def counted(self: JobDir, tags: list[str]) -> dict[str, object]:
        reads.append(self.root.name)
        return real(self, tags)

    monkeypatch.setattr(JobDir, "read_edits", counted)
    assert lists._shared("a-1") and lists._shared("a-1") and len(reads) == 1
    job.write_edits([], "", "private")  # a rename into the directory: its mtime moves
    assert not lists._shared("a-1")  # within the racy window: read every time, so ...
    assert not lists._shared("a-1") and len(reads) == 3
    age(job.root)
    assert not lists._shared("a-1") and not lists._shared("a-1") and len(reads) == 4
    with lists.reading():  # one request asks once, whatever the directory does meanwhile
        assert not lists._shared("a-1")
        job.write_edits([], "", "team")
        assert not lists._shared("a-1")
    assert lists._shared("a-1")


def test_a_gone_jobs_record_is_read_again_once_its_events_or_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = JobDir(tmp_path / "a-1").create()
    job.emit("state", state="failed")
    age(job.root / "events.jsonl")
    age(job.root)
    lists, built = reader(tmp_path), []

    def from_jobdir(root: Path) -> object:
        built.append(root.name)
        # stands for the record; what _from_jobdir reads is tested elsewhere
        states = [e["state"] for e in job.iter_events() if e.get("type") == "state"]
        return SimpleNamespace(state=JobState(states[-1]))

    monkeypatch.setattr(lists, "_from_jobdir", from_jobdir, raising=False)
    first = lists._gone_record("a-1")
    assert lists._gone_record("a-1") is first and built == ["a-1"]
    job.emit("state", state="cancelled")  # an append: the directory's mtime stays
    assert lists._gone_record("a-1") is not first and len(built) == 2
    age(job.root / "events.jsonl")
    kept = lists._gone_record("a-1")
    assert lists._gone_record("a-1") is kept and len(built) == 3
    job.write_edits(["x"], "", "private")  # a rename into it
    age(job.root / "events.jsonl")
    assert lists._gone_record("a-1") is not kept

    # One not yet final (its Job being made or replaced) is read again each time: it changes
    # with time alone.
    job.emit("state", state="retrying")
    age(job.root / "events.jsonl")
    built.clear()
    assert lists._gone_record("a-1") is not lists._gone_record("a-1") and len(built) == 2
