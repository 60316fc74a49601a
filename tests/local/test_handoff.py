"""Warm rank start with real processes: a runner started ahead takes over the rank of the
stand-in torchrun starts, and the pair behaves towards torchrun as one rank would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.local.test_runner import cells_job, rank_env
from trainhub.backends.local.launch import Started
from trainhub.rank.warm_start import HANDOFF_DIR, WARM_RANK, socket_path
from trainhub.jobs.directory import JobDir

RANK = 1


class Pair:
    """A warm runner for rank 1, and the stand-in torchrun would start for it."""

    def __init__(self, job: JobDir, stand_in_env: dict[str, str] | None = None):
        self.job = job
        self.run_dir = str(job.root / "run")
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        base = {k: v for k, v in rank_env(job).items() if k not in ("RANK", "LOCAL_RANK")}
        self.runner = subprocess.Popen(
            [sys.executable, "-m", "trainhub.rank.runner", "--warm", socket_path(self.run_dir, RANK), str(job.bundle)],
            env={**base, WARM_RANK: str(RANK)}, cwd=job.bundle, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        self.stand_in_env = {**rank_env(job, RANK), "MASTER_PORT": "29123", HANDOFF_DIR: self.run_dir,
                             **(stand_in_env or {})}
        # As the launcher does: it writes down how the runner ends, for the stand-in.
        self.started = Started([], {RANK: self.runner}, self.run_dir)

    def start_stand_in(self) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "trainhub.rank.warm_start", str(self.job.bundle)],
                                env=self.stand_in_env, cwd=self.job.bundle, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait_for_listening(self) -> None:
        wait_for(lambda: self.started.warm_ready(), "the warm runner to listen")

    @property
    def log(self) -> str:
        path = self.job.rank_log(RANK)
        return path.read_text() if path.exists() else ""

    def close(self) -> None:
        self.started.stop_warm()


def wait_for(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def pair_of(tmp_path: Path):
    made: list[Pair] = []

    def make(sources: list[str], **kwargs) -> Pair:
        made.append(Pair(cells_job(tmp_path, sources), **kwargs))
        return made[-1]

    yield make
    for pair in made:
        pair.close()


WHO = "import os\nprint('pid', os.getpid(), 'rank', os.environ['RANK'], 'port', os.environ['MASTER_PORT'])"
SLEEP = "import time\nprint('sleeping', flush=True)\ntime.sleep(120)"


def test_the_warm_runner_runs_the_rank_of_its_stand_in(pair_of):
    pair = pair_of([WHO])
    pair.wait_for_listening()
    stand_in = pair.start_stand_in()
    out, err = stand_in.communicate(timeout=60)
    assert stand_in.returncode == 0, err
    assert pair.runner.wait(timeout=10) == 0
    # The cells ran in the runner started ahead, with the environment torchrun gave the rank.
    assert f"pid {pair.runner.pid} rank {RANK} port 29123" in pair.log
    assert f"runs the rank of its process {stand_in.pid}" in pair.log
    assert out == "" and err == ""
    assert not os.path.exists(socket_path(pair.run_dir, RANK))


def test_the_stand_in_exits_as_the_runner_did(pair_of):
    pair = pair_of(["x = 1", "raise ValueError('bad value')"])
    stand_in = pair.start_stand_in()  # before the runner listens: it waits for it
    stand_in.communicate(timeout=60)
    assert stand_in.returncode == 1
    assert "cell 2" in pair.log and "ValueError: bad value" in pair.log


def test_a_runner_killed_by_a_signal_ends_its_stand_in_by_the_same_signal(pair_of):
    pair = pair_of([SLEEP])
    stand_in = pair.start_stand_in()
    wait_for(lambda: "sleeping" in pair.log, "the cell to start")
    pair.runner.kill()
    pair.runner.wait()
    _, err = stand_in.communicate(timeout=30)
    assert stand_in.returncode == -signal.SIGKILL, err


def test_a_signal_to_the_stand_in_reaches_the_runner(pair_of):
    pair = pair_of([SLEEP])
    stand_in = pair.start_stand_in()
    wait_for(lambda: "sleeping" in pair.log, "the cell to start")
    stand_in.send_signal(signal.SIGTERM)  # torchrun stopping its ranks
    assert pair.runner.wait(timeout=30) == -signal.SIGTERM
    assert stand_in.wait(timeout=30) == -signal.SIGTERM


def test_killing_the_stand_in_kills_the_runner(pair_of):
    pair = pair_of([SLEEP])
    stand_in = pair.start_stand_in()
    wait_for(lambda: "sleeping" in pair.log, "the cell to start")
    stand_in.kill()  # torchrun's last resort, or the OOM killer: the rank must not live on
    stand_in.wait()
    assert pair.runner.wait(timeout=30) == -signal.SIGKILL


def test_a_runner_refuses_a_rank_whose_interpreter_settings_differ(pair_of):
    pair = pair_of([WHO], stand_in_env={"PYTHONHASHSEED": "7"})
    stand_in = pair.start_stand_in()
    _, err = stand_in.communicate(timeout=60)
    assert stand_in.returncode == 0
    assert "starts cold: PYTHONHASHSEED differ" in err
    assert pair.runner.wait(timeout=10) == 0  # it ran nothing
    # The stand-in became the rank itself.
    assert f"pid {stand_in.pid} rank {RANK}" in pair.log and "runs the rank of" not in pair.log


def test_without_a_runner_the_stand_in_runs_the_rank_itself(pair_of):
    pair = pair_of([WHO])
    pair.runner.kill()  # it ended before it could listen
    pair.runner.wait()
    stand_in = pair.start_stand_in()
    stand_in.communicate(timeout=60)
    assert stand_in.returncode == 0
    assert f"pid {stand_in.pid} rank {RANK}" in pair.log


def test_the_rank_is_not_handed_into_a_directory_others_can_enter(pair_of):
    pair = pair_of([WHO])
    pair.wait_for_listening()
    os.chmod(pair.run_dir, 0o755)
    stand_in = pair.start_stand_in()
    _, err = stand_in.communicate(timeout=60)
    assert stand_in.returncode == 0 and "not a private directory" in err
    assert f"pid {stand_in.pid} rank {RANK}" in pair.log
    assert pair.runner.poll() is None  # still waiting: it was never sent the rank
