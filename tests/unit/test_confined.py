"""Job-directory reads never follow a link, never block on a FIFO, never leave the job."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from trainhub.jobs import confined
from trainhub.jobs.confined import NotAJobFile


@pytest.fixture
def jobs(tmp_path: Path) -> tuple[Path, Path]:
    """Two job directories side by side: ours and another user's."""
    ours, theirs = tmp_path / "jobs" / "ours", tmp_path / "jobs" / "theirs"
    for job in (ours, theirs):
        (job / "logs").mkdir(parents=True)
        (job / "logs" / "rank-0.log").write_text(f"{job.name} log\n")
        (job / "checkpoints" / "0000000001").mkdir(parents=True)
        (job / "checkpoints" / "0000000001" / "state.pt").write_bytes(b"weights")
    return ours, theirs


def test_regular_files_read_as_usual(jobs):
    ours, _ = jobs
    assert confined.read_bytes(ours, "logs/rank-0.log") == b"ours log\n"
    assert confined.read_range(ours, "logs/rank-0.log", 5, 3) == b"log"
    assert confined.size(ours, "logs/rank-0.log") == 9
    assert sorted(confined.entries(ours)) == [("checkpoints", True), ("logs", True)]
    with pytest.raises(FileNotFoundError):
        confined.read_bytes(ours, "logs/rank-9.log")
    assert confined.entries(ours, "metrics") == []


@pytest.mark.parametrize(
    "target", ["/etc/passwd", "/proc/self/environ", "../theirs/logs/rank-0.log"]
)
def test_a_planted_file_link_is_refused(jobs, target):
    ours, _ = jobs
    os.symlink(target, ours / "logs" / "rank-7.log")
    with pytest.raises(NotAJobFile, match=re.escape("logs/rank-7.log is a symbolic link")):
        confined.read_bytes(ours, "logs/rank-7.log")
    assert ("rank-7.log", False) not in confined.entries(ours, "logs")


@pytest.mark.parametrize("folder", ["logs", "checkpoints"])
def test_a_whole_folder_swapped_for_a_link_to_another_job_is_refused(jobs, folder):
    ours, theirs = jobs
    os.rename(ours / folder, ours / f"{folder}.orig")
    os.symlink(theirs / folder, ours / folder)
    with pytest.raises(NotAJobFile, match=f"{folder} is a symbolic link"):
        confined.read_bytes(
            ours, f"{folder}/rank-0.log" if folder == "logs" else f"{folder}/0000000001/state.pt"
        )
    with pytest.raises(NotAJobFile):
        confined.entries(ours, folder)
    with pytest.raises(NotAJobFile):
        confined.remove_tree(ours, f"{folder}/0000000001")
    assert (theirs / "checkpoints" / "0000000001" / "state.pt").read_bytes() == b"weights"


def test_the_job_directory_itself_swapped_for_a_link_is_refused(jobs):
    ours, theirs = jobs
    os.rename(ours, ours.with_name("ours.orig"))
    os.symlink(theirs, ours)
    with pytest.raises(NotAJobFile, match="the job directory is a symbolic link"):
        confined.read_bytes(ours, "logs/rank-0.log")


def test_a_fifo_is_refused_at_once_instead_of_blocking(jobs):
    ours, _ = jobs
    os.mkfifo(ours / "lineage.json")
    done = threading.Event()

    def read():
        with pytest.raises(NotAJobFile, match=re.escape("lineage.json is a FIFO")):
            confined.read_bytes(ours, "lineage.json")
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "opening a FIFO blocked"


def test_a_directory_where_a_file_belongs_and_escapes_are_refused(jobs):
    ours, _ = jobs
    (ours / "logs" / "rank-3.log").mkdir()
    with pytest.raises(NotAJobFile, match=re.escape("logs/rank-3.log is a directory")):
        confined.read_bytes(ours, "logs/rank-3.log")
    for bad in ("../theirs/logs/rank-0.log", "/etc/passwd", "logs/../../theirs"):
        with pytest.raises(NotAJobFile, match="not a path inside the job directory"):
            confined.read_bytes(ours, bad)


def test_remove_tree_removes_links_inside_without_following_them(jobs):
    ours, theirs = jobs
    step = ours / "checkpoints" / "0000000001"
    os.symlink(theirs / "checkpoints", step / "escape")
    confined.remove_tree(ours, "checkpoints/0000000001")
    assert not step.exists()
    assert (theirs / "checkpoints" / "0000000001" / "state.pt").exists()
