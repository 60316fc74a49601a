"""When a job's directory last changed, as the Kubernetes backend keys a kept record by it
(trainhub.backends.kubernetes.records): a look stands for STAT_TTL_S, so a page of many jobs
is not a stat of each for every request; a change by another process shows once it is older;
an edit through this backend shows at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainhub.backends.kubernetes import records
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def backend_at(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[KubernetesBackend, Clock]:
    backend = KubernetesBackend.__new__(KubernetesBackend)  # the jobs root and stamps matter
    backend.jobs_root, backend._stamps = root, {}
    clock = Clock()
    monkeypatch.setattr(records.time, "monotonic", clock)
    return backend, clock


def aged(path: Path) -> Path:
    """``path`` as changed a minute ago: a write now changes its mtime."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 60 * 10**9))
    return path


def test_a_look_stands_for_the_ttl_then_a_change_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = JobDir(tmp_path / "a-1").create()
    aged(job.root)
    backend, clock = backend_at(tmp_path, monkeypatch)
    before = backend._dir_stamp("a-1")
    assert before == (job.root.stat().st_mtime_ns, job.root.stat().st_ino)

    job.write_edits(["x"], "changed by another process")  # a rename into the directory
    now = (job.root.stat().st_mtime_ns, job.root.stat().st_ino)
    assert now != before
    clock.now += records.STAT_TTL_S * 0.9
    assert backend._dir_stamp("a-1") == before  # trusted for the moment, not stat'ed
    clock.now += records.STAT_TTL_S * 0.2
    assert backend._dir_stamp("a-1") == now  # past it: looked at again

    job.root.rename(tmp_path / "gone")
    clock.now += records.STAT_TTL_S
    assert backend._dir_stamp("a-1") is None and "a-1" not in backend._stamps


def test_an_edit_through_the_backend_shows_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = JobDir(tmp_path / "a-1").create()
    aged(job.root)
    backend, _ = backend_at(tmp_path, monkeypatch)
    spec = parse_spec({"name": "a", "source": {"path": "train.py"}})
    record = JobRecord.of_spec(
        spec, id="a-1", user="ada", state=JobState.QUEUED, job_dir=str(job.root), created_at=1.0
    )
    monkeypatch.setattr(backend, "get", lambda job_id: record, raising=False)
    before = backend._dir_stamp("a-1")

    edited = backend.edit("a-1", tags=["kept"], note="mine", shared=None)
    assert edited.tags == ["kept"]
    assert backend._dir_stamp("a-1") == (job.root.stat().st_mtime_ns, job.root.stat().st_ino)
    assert backend._dir_stamp("a-1") != before  # the clock never moved
