"""How a job pod's first process (``trainhub.rank.pod``) ends when nobody stopped it, with real
processes: torchrun's own output is kept in the job directory, where its summary names the rank
that failed first and the cell it was in (the verdict reads it as the local supervisor reads
its log); a run that did not reach the notebook's end never exits 0; and a SIGTERM the pod was
not sent never makes it exit 143, the exit the Job ignores (the pod would run again, forever).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.local.test_runner import cells_job, rank_env
from trainhub.jobs.directory import JobDir
from trainhub.lifecycle.results import agent_output, rank_results
from trainhub.lifecycle.verdict import (
    RankExit,
    attempt_verdict,
    running_cells,
    torchrun_root_causes,
)
from trainhub.rank.pod import RUN_STARTED

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=1"]


def pod(job: JobDir, command: list[str], worker: int = 0, attempt: int = 0) -> int:
    """The pod's first process over ``command``, as a job's pod runs it; its exit status."""
    env = {**rank_env(job, attempt=attempt), "NODE_RANK": str(worker)}
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        env.pop(name)  # torchrun's to give
    argv = [sys.executable, "-m", "trainhub.rank.pod", "--grace=20", *command]
    return subprocess.run(argv, env=env, cwd=job.root, timeout=180).returncode


def runner(job: JobDir) -> list[str]:
    return [*TORCHRUN, "-m", "trainhub.rank.runner", str(job.bundle)]


def test_a_crash_in_a_cell_is_named_from_the_kept_torchrun_output(tmp_path: Path) -> None:
    job = cells_job(tmp_path, ["print('before')", "import ctypes\nctypes.string_at(0)", "1"])
    status = pod(job, runner(job), worker=0, attempt=2)
    assert status == 1  # torchrun's: a failure, which the Job's podFailurePolicy fails on
    kept = agent_output(job, 0, 2)
    first = kept.splitlines()[0]  # which pod ran what: the run's part of the file starts here
    assert first.startswith(RUN_STARTED) and "torch.distributed.run" in first
    assert torchrun_root_causes(kept) == [RankExit(0, -11)]
    verdict = attempt_verdict(
        attempt=2,
        rank_results=rank_results(job, 2),
        exits=torchrun_root_causes(kept),
        running=running_cells(job.iter_events(), 2),
    )
    assert verdict is not None and (verdict.cell_index, verdict.signal) == (1, "SIGSEGV")
    assert agent_output(job, 0, 1) == agent_output(job, 1, 2) == ""  # other runs kept none


def test_os_exit_0_before_the_last_cell_fails_the_pod(tmp_path: Path) -> None:
    job = cells_job(tmp_path, ["print('before')", "import os\nos._exit(0)", "print('never')"])
    assert pod(job, runner(job)) == 1
    (report,) = rank_results(job, 0).values()
    assert report["outcome"] == "error" and report["cell_index"] == 1
    assert "os._exit(0) before the notebook's last cell" in report["message"]
    # In the last cell it ends the run as its end: a success.
    done = cells_job(tmp_path / "last", ["print('before')", "import os\nos._exit(0)"])
    assert pod(done, runner(done)) == 0 and rank_results(done, 0) == {0: {"outcome": "ok"}}


def test_a_sigterm_the_pod_was_not_sent_never_makes_it_exit_143(tmp_path: Path) -> None:
    job = JobDir(tmp_path / "job").create()
    own = "import os, signal; print('hello', flush=True); os.kill(os.getpid(), signal.SIGTERM)"
    assert pod(job, [sys.executable, "-c", own]) == 1
    assert "hello\n" in agent_output(job, 0, 0)
    rank = "import os, signal; os.kill(os.getpid(), signal.SIGTERM); import time; time.sleep(9)"
    job2 = cells_job(tmp_path / "rank", [rank])
    assert pod(job2, runner(job2)) == 1  # torchrun's own 1 for a rank it lost
    assert torchrun_root_causes(agent_output(job2, 0, 0)) == [RankExit(0, -15)]


def test_outside_a_job_the_output_is_the_pods_log_alone(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_")}
    code = "print('only here')"
    argv = [sys.executable, "-m", "trainhub.rank.pod", "--grace=5", sys.executable, "-c", code]
    proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "only here" in proc.stdout
    assert list(tmp_path.iterdir()) == []
