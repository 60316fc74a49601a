"""What the server writes into a job directory (events, the launch plan) goes into the job's own
files: a link planted in their place is never written through, a FIFO never waited on."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from trainhub.backends.local.plan import write_plan
from trainhub.backends.local.startup import PLAN
from trainhub.jobs import confined
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.directory import JobDir


@pytest.fixture
def jobs(tmp_path: Path) -> tuple[JobDir, Path]:
    ours = JobDir(tmp_path / "jobs" / "ours").create()
    victim = tmp_path / "jobs" / "theirs" / "events.jsonl"
    victim.parent.mkdir()
    victim.write_text("theirs\n")
    return ours, victim


@pytest.mark.parametrize("what", ["link", "fifo", "directory"])
def test_events_are_never_appended_through_a_planted_file(jobs, what: str) -> None:
    ours, victim = jobs
    if what == "link":
        os.symlink(victim, ours.events)
    elif what == "fifo":
        os.mkfifo(ours.events)
    else:
        ours.events.mkdir()
    with pytest.raises(NotAJobFile, match=r"events\.jsonl is a"):
        confined.append(ours.root, "events.jsonl", b"{}\n")
    ours.emit("state", state="cancelled")  # dropped, with a warning: nothing else is touched
    assert victim.read_text() == "theirs\n"


def test_events_append_to_the_jobs_own_file(jobs) -> None:
    ours, _ = jobs
    ours.emit("state", state="running")
    ours.emit("state", state="succeeded")
    assert [e["state"] for e in ours.iter_events()] == ["running", "succeeded"]


@pytest.mark.parametrize("what", ["link", "fifo"])
def test_the_launch_plan_replaces_what_the_job_left_there(jobs, what: str) -> None:
    ours, victim = jobs
    plan_path = ours.root / PLAN
    if what == "link":
        os.symlink(victim, plan_path)
    else:
        os.mkfifo(plan_path)
    write_plan(ours.root, 2, {"argv": ["torchrun"]})  # type: ignore[typeddict-item]
    mode = os.lstat(plan_path).st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
    assert json.loads(plan_path.read_text()) == {"attempt": 2, "argv": ["torchrun"]}
    assert victim.read_text() == "theirs\n"
    assert sorted(p.name for p in ours.root.iterdir() if p.name.startswith(".")) == []


def test_a_plan_into_a_swapped_job_directory_is_refused(jobs, tmp_path: Path) -> None:
    ours, victim = jobs
    ours.root.rename(tmp_path / "elsewhere")
    os.symlink(victim.parent, ours.root)
    with pytest.raises(NotAJobFile, match="the job directory is a symbolic link"):
        write_plan(ours.root, 0, {"argv": []})  # type: ignore[typeddict-item]
    assert sorted(p.name for p in victim.parent.iterdir()) == ["events.jsonl"]
