"""Members' files on a team volume, for real: a job directory is its owner's until shared, then
readable and never writable by teammates, and the controller's thread acting as a member can
do what that member can and nothing more (the kernel checks it: acting as another user drops
root's file capabilities).

Run as root, as the test command is (it runs containerd): only root may take another user's
file-system ids.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainhub.jobs import ownership
from trainhub.jobs.directory import JobDir
from trainhub.jobs.ownership import RunAs

ADA, BO = RunAs(100001, 100001), RunAs(100002, 100002)


@pytest.fixture
def volume() -> Iterator[Path]:
    """A team volume every user may reach (pytest's own temporary folders are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="trainhub-volume-"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


def test_a_thread_acting_as_a_member_makes_the_members_files_and_goes_back(volume: Path) -> None:
    jobs = volume / "jobs"
    assert ownership.prepare_team_volume(volume, ["jobs"]) == []
    assert ownership.guarded(jobs) and not ownership.guarded(volume)
    with ownership.acting_as(ADA):
        (jobs / "a").mkdir()
        (jobs / "a" / "spec.json").write_text("{}")
        assert ownership.current() == ADA
    assert ownership.owner_of(jobs / "a") == ADA
    assert ownership.owner_of(jobs / "a" / "spec.json") == ADA
    (jobs / "mine").mkdir()  # the process itself again
    assert ownership.owner_of(jobs / "mine").user == os.geteuid()


def test_acting_as_a_member_gives_the_members_rights_and_no_more(volume: Path) -> None:
    ownership.prepare_team_volume(volume, ["jobs"])
    with ownership.acting_as(ADA):
        job = JobDir(volume / "jobs" / "ada-job").create()
        (job.root / "spec.json").write_text('{"secret": 1}')
    assert os.stat(job.root).st_mode & 0o777 == ownership.PRIVATE
    with ownership.acting_as(BO):
        with pytest.raises(PermissionError):
            os.listdir(job.root)
        with pytest.raises(PermissionError):
            (job.root / "spec.json").read_text()
        with pytest.raises(PermissionError):  # the jobs root is sticky: not bo's to remove
            os.rename(job.root, volume / "jobs" / "taken")
    # Shared: teammates read, and write nothing.
    with ownership.acting_as(ADA):
        job.write_edits([], "", "team")
    assert os.stat(job.root).st_mode & 0o777 == ownership.SHARED
    with ownership.acting_as(BO):
        assert (job.root / "spec.json").read_text() == '{"secret": 1}'
        assert JobDir(job.root).read_edits([])["shared"] == "team"
        with pytest.raises(PermissionError):
            (job.root / "events.jsonl").write_text("forged")
        with pytest.raises(PermissionError):
            (job.root / "spec.json").write_text("{}")
    with ownership.acting_as(ADA):
        job.write_edits([], "", "private")
    with ownership.acting_as(BO), pytest.raises(PermissionError):
        (job.root / "spec.json").read_text()


def test_each_thread_acts_as_its_own_member(volume: Path) -> None:
    ownership.prepare_team_volume(volume, ["jobs"])
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with ownership.acting_as(BO):
            (volume / "jobs" / "bo").mkdir()
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    (volume / "jobs" / "meanwhile").mkdir()  # this thread is still itself
    release.set()
    thread.join()
    assert ownership.owner_of(volume / "jobs" / "bo") == BO
    assert ownership.owner_of(volume / "jobs" / "meanwhile").user == os.geteuid()


def test_nested_acting_goes_back_to_the_member_then_to_itself(volume: Path) -> None:
    ownership.prepare_team_volume(volume, ["jobs"])
    with ownership.acting_as(ADA):
        with ownership.acting_as_itself():
            (volume / "jobs" / "outbox").mkdir()
        (volume / "jobs" / "ada").mkdir()
    assert ownership.owner_of(volume / "jobs" / "outbox").user == os.geteuid()
    assert ownership.owner_of(volume / "jobs" / "ada") == ADA


def test_a_place_another_user_made_first_is_reported_not_taken(volume: Path) -> None:
    os.mkdir(volume / "jobs", 0o755)
    os.chown(volume / "jobs", ADA.user, ADA.group)
    # Not the controller's (which has no CAP_FOWNER to change it): said, and left as it is.
    (problem,) = ownership.prepare_team_volume(volume, ["jobs"])
    assert f"belongs to user {ADA.user}" in problem and "not private" in problem
    assert os.stat(volume / "jobs").st_mode & 0o7777 == 0o755


def test_run_as_is_read_from_its_words() -> None:
    assert RunAs.parse("100001") == RunAs(100001, 100001)
    assert RunAs.parse("100001:100") == RunAs(100001, 100)
    for bad in ("ada", "0", "1000:0", ""):
        with pytest.raises(ValueError):
            RunAs.parse(bad)
