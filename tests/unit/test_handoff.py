"""Pure parts of the warm rank start: which process runs a rank, and what a runner that
already started cannot take on."""

import os
import subprocess
import sys
import threading
import time

import psutil

from trainhub.rank.warm_start import (
    HANDOFF_DIR,
    WARM_RANK,
    loading_turn,
    rank_of,
    rank_roots,
    startup_differences,
)


def test_the_rank_of_a_process_is_the_one_whose_cells_it_runs():
    assert rank_of({"RANK": "3", "LOCAL_RANK": "1"}) == 3  # started by torchrun, cold
    assert rank_of({WARM_RANK: "3"}) == 3  # a warm runner, before and after it took rank 3
    assert rank_of({"RANK": "3", "LOCAL_RANK": "1", HANDOFF_DIR: "/j/run"}) is None  # its stand-in
    assert rank_of({"RANK": "3"}) is None and rank_of({}) is None  # not a rank torchrun started


def test_a_rank_is_the_process_whose_parent_is_not_of_that_rank():
    rank0, rank1 = {WARM_RANK: "0"}, {"RANK": "1", "LOCAL_RANK": "1"}
    found = [
        (20, 10, rank0),  # a data loader worker of rank 0, listed before it
        (10, 1, rank0),
        (30, 10, rank0),  # a `!` command of rank 0
        (11, 1, rank1),
        (12, 1, {**rank1, HANDOFF_DIR: "/j/run"}),  # rank 1's stand-in runs no code
        (40, 20, rank0),  # a grandchild
    ]
    assert rank_roots(found) == {0: 10, 1: 11}
    assert rank_roots([]) == {}


def test_what_a_rank_starts_inherits_its_environment_yet_is_not_the_rank():
    code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "time.sleep(30)"
    )
    env = {**os.environ, "RANK": "0", "LOCAL_RANK": "0"}
    rank = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        proc = psutil.Process(rank.pid)
        while not proc.children():
            assert rank.poll() is None
            time.sleep(0.01)
        tree = [proc, *proc.children()]
        found = [(p.pid, p.ppid(), p.environ()) for p in tree]
        assert [rank_of(env) for _, _, env in found] == [0, 0]  # both look like rank 0
        assert rank_roots(found[::-1]) == {0: rank.pid}
    finally:
        for p in psutil.Process(rank.pid).children():
            p.kill()
        rank.kill()
        rank.wait()


def test_only_what_an_interpreter_reads_at_start_up_must_match():
    ours = {"PYTHONPATH": "/a", "LD_PRELOAD": "x.so", "PATH": "/bin", "RANK": "0"}
    assert startup_differences({**ours, "RANK": "1", "MASTER_PORT": "9", "PATH": "/usr/bin"}, ours) == []
    theirs = {**ours, "PYTHONPATH": "/b", "PYTHONHASHSEED": "0"}
    del theirs["LD_PRELOAD"]
    assert startup_differences(theirs, ours) == ["LD_PRELOAD", "PYTHONHASHSEED", "PYTHONPATH"]


def _second_waits_for_the_first(tmp_path, monkeypatch, cpus: int) -> bool:
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    tmp_path.mkdir()
    path = str(tmp_path / "rank-0.sock")
    entered = threading.Event()

    def second() -> None:
        with loading_turn(path, 1):
            entered.set()

    with loading_turn(path, 0):
        threading.Thread(target=second, daemon=True).start()
        waited = not entered.wait(0.3)
    assert entered.wait(5)  # and its turn comes
    return waited


def test_runners_load_in_turns_on_the_cores_the_agent_leaves(tmp_path, monkeypatch):
    assert _second_waits_for_the_first(tmp_path / "a", monkeypatch, cpus=2)  # one core free: one at a time
    assert not _second_waits_for_the_first(tmp_path / "b", monkeypatch, cpus=3)  # two free: side by side
