"""Two worlds of ranks in one job's directory, as a rendezvous that dropped a live agent leaves
them (pytorch#111646): real rank processes, each rank 0 of its world. The world that started
later owns the checkpoints; the earlier one stops at its next save, publishing nothing, with an
infrastructure failure that names the world that took over, so that its agent restarts it
into the rendezvous again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.local.test_runner import make_job, rank_env
from trainhub.checkpoint.layout import TEMP_PREFIX, list_checkpoints
from trainhub.jobs.directory import JobDir
from trainhub.jobs.world import WORLD

# One save per step; a world's steps start at FIRST_STEP so that its checkpoints can be told
# apart. It runs until the test leaves a file named "enough" (or 30 s).
SCRIPT = """\
import os, time
import trainhub.checkpoint as ckpt

first = int(os.environ["FIRST_STEP"])
for step in range(first, first + 600):
    ckpt.save({"step": step}, step)
    if os.path.exists(os.path.join(os.environ["TRAINHUB_JOB_DIR"], "enough")):
        break
    time.sleep(0.05)
"""


def start_world(job: JobDir, first_step: int) -> subprocess.Popen[bytes]:
    env = {**rank_env(job), "FIRST_STEP": str(first_step)}
    argv = [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)]
    return subprocess.Popen(argv, env=env, cwd=job.root)


def steps(job: JobDir) -> list[int]:
    return [c.step for c in list_checkpoints(job.checkpoints)]


def test_the_earlier_of_two_worlds_stops_at_its_next_save_and_the_later_one_owns_the_job(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text(SCRIPT)
    job = make_job(tmp_path, workspace, {"path": "train.py"})

    earlier = start_world(job, first_step=1)
    deadline = time.monotonic() + 60
    while len(steps(job)) < 3:
        assert earlier.poll() is None and time.monotonic() < deadline, "the first world never saved"
        time.sleep(0.05)
    later = start_world(job, first_step=1001)
    try:
        assert earlier.wait(timeout=60) == 1
        failed = json.loads(job.rank_status(0, 0).read_text())  # before the later world ends
        (job.root / "enough").touch()
        assert later.wait(timeout=60) == 0
    finally:
        for proc in (earlier, later):
            proc.kill()
            proc.wait()

    assert failed["exception"] == "trainhub.jobs.world.WorldSuperseded"
    assert failed["failure_class"] == "infrastructure"
    assert failed["evidence"]["rule"] == "world-superseded"
    assert "is no longer the job's: a world of 1 started on" in failed["message"]
    took_over = json.loads((job.root / WORLD).read_text())["started"]
    earlier_saves = [c for c in list_checkpoints(job.checkpoints) if c.step < 1000]
    later_saves = [c for c in list_checkpoints(job.checkpoints) if c.step > 1000]
    assert len(earlier_saves) >= 3 and later_saves
    # Nothing of the earlier world was published once the later one had claimed the job.
    assert max(c.time for c in earlier_saves) < took_over <= min(c.time for c in later_saves)
    assert not [p for p in job.checkpoints.iterdir() if p.name.startswith(TEMP_PREFIX)]
    assert json.loads(job.rank_status(0, 0).read_text())["outcome"] == "ok"
    log = job.rank_log(0).read_text()
    assert "WorldSuperseded: not writing checkpoint step" in log
