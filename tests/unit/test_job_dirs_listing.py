"""The directories below a team's jobs root, as a page of jobs finds those whose Job is gone:
listed again only once the root changed, and never kept while a change could hide in the
timestamp's granularity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainhub.backends.kubernetes import listing
from trainhub.backends.kubernetes.listing import Listing


def reader(root: Path) -> Listing:
    lists = Listing.__new__(Listing)  # only the jobs root matters here
    lists.jobs_root = root
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
