"""The one lookup of the checkpoint a job resumes from (backends and ranks alike)."""

from __future__ import annotations

import json
from pathlib import Path

from trainhub.checkpoint.layout import MANIFEST, resume_checkpoint, step_dir
from trainhub.jobs.directory import JobDir


def fake_checkpoint(checkpoints: Path, step: int) -> Path:
    path = step_dir(checkpoints, step)
    path.mkdir(parents=True)
    (path / "state.pt").write_bytes(b"x" * step)
    files = [{"name": "state.pt", "bytes": step, "sha256": "-"}]
    (path / MANIFEST).write_text(json.dumps({"step": step, "time": 0.0, "files": files}))
    return path


def test_a_job_dir_a_checkpoints_dir_or_a_checkpoint_names_it(tmp_path: Path) -> None:
    job = JobDir(tmp_path / "earlier").create()
    for step in (10, 20, 30):
        fake_checkpoint(job.checkpoints, step)

    for where in (job.root, job.checkpoints, str(job.checkpoints)):
        assert resume_checkpoint(where).step == 30  # type: ignore[union-attr]
        assert resume_checkpoint(where, 20).path == step_dir(job.checkpoints, 20)  # type: ignore[union-attr]
        assert resume_checkpoint(where, 25) is None
    one = step_dir(job.checkpoints, 10)
    assert resume_checkpoint(one).step == 10 and resume_checkpoint(one, 10).step == 10  # type: ignore[union-attr]
    assert resume_checkpoint(one, 20) is None
    assert resume_checkpoint(tmp_path / "nothing-here") is None
