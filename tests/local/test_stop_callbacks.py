"""A rank asked to stop (SIGTERM: Kueue preempting or suspending its job, its pod deleted, a
cancel) runs the callbacks its code registered with ``trainhub.checkpoint.on_stop`` and ends
by SIGTERM; under ``trainhub.rank.pod`` (a job pod's first process) and torchrun, the pod then
exits 143. Real processes throughout: the signal goes where torchrun and the kubelet send it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.local.test_runner import make_job, rank_env
from trainhub.checkpoint.layout import list_checkpoints
from trainhub.jobs.directory import JobDir

SCRIPT = """\
import time
import trainhub.checkpoint as ckpt

step = 0

@ckpt.on_stop
def save_now():
    ckpt.save({"step": step}, step)
    print(f"saved step {step} on the way out", flush=True)

def broken():
    raise RuntimeError("this callback fails; the others still run")

ckpt.on_stop(broken)
for step in range(1000):
    if step == 3:
        print("ready", flush=True)
    time.sleep(0.05)
"""


def started(
    job: JobDir, argv: list[str], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = env or rank_env(job)
    proc = subprocess.Popen(argv, env=env, cwd=job.root, start_new_session=True)
    deadline = time.monotonic() + 60
    while "ready" not in (job.rank_log(0).read_text() if job.rank_log(0).exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, "the rank never got going"
        time.sleep(0.05)
    return proc


def job_with_script(tmp_path: Path) -> JobDir:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text(SCRIPT)
    return make_job(tmp_path, workspace, {"path": "train.py"})


def test_sigterm_runs_the_stop_callbacks_then_the_rank_ends_by_sigterm(tmp_path: Path) -> None:
    job = job_with_script(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    argv = [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)]
    rank = started(job, argv, env={**rank_env(job), "TMPDIR": str(tmp)})
    assert [p.name[:16] for p in tmp.iterdir()] == ["trainhub-ipython"]  # its IPython dir
    os.killpg(rank.pid, signal.SIGTERM)  # as torchrun stops its workers: their process group
    assert rank.wait(timeout=60) == -signal.SIGTERM
    assert list(tmp.iterdir()) == []  # a rank ended by a signal leaves nothing behind either
    log = job.rank_log(0).read_text()
    assert "SIGTERM received: running the job's stop callbacks" in log
    assert "while stopping: broken: RuntimeError: this callback fails" in log
    (saved,) = list_checkpoints(job.checkpoints)
    assert f"saved step {saved.step} on the way out" in log and saved.step >= 3
    (stop,) = [e for e in job.iter_events() if e["type"] == "stop_requested"]
    assert (stop["rank"], stop["signal"]) == (0, "SIGTERM")
    assert not job.rank_status(0, 0).exists()  # stopped, not failed: no outcome to report


def test_the_pods_first_process_passes_sigterm_on_and_exits_143(tmp_path: Path) -> None:
    job = job_with_script(tmp_path)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=1"]
    runner = ["-m", "trainhub.rank.runner", str(job.bundle)]
    pod = started(
        job, [sys.executable, "-m", "trainhub.rank.pod", "--grace=20", *torchrun, *runner]
    )
    pod.send_signal(signal.SIGTERM)  # the kubelet signals the container's first process only
    assert pod.wait(timeout=60) == 128 + signal.SIGTERM
    assert len(list_checkpoints(job.checkpoints)) == 1


def test_a_pod_whose_command_ends_by_itself_exits_with_its_status(tmp_path: Path) -> None:
    code = "import sys; sys.exit(7)"
    pod = subprocess.run(
        [sys.executable, "-m", "trainhub.rank.pod", "--grace=5", sys.executable, "-c", code],
        timeout=60,
    )
    assert pod.returncode == 7
