"""Which process of a job runs a rank: the supervisor samples that process's metrics."""

import os
import subprocess
import sys
import time

import psutil

from trainhub.metrics.ranks import rank_of, rank_roots


def test_the_rank_of_a_process_is_the_one_torchrun_gave_it():
    assert rank_of({"RANK": "3", "LOCAL_RANK": "1"}) == 3
    assert rank_of({"RANK": "3"}) is None and rank_of({}) is None  # not a rank torchrun started


def test_a_rank_is_the_process_whose_parent_is_not_of_that_rank():
    rank0, rank1 = {"RANK": "0", "LOCAL_RANK": "0"}, {"RANK": "1", "LOCAL_RANK": "1"}
    found = [
        (20, 10, rank0),  # a data loader worker of rank 0, listed before it
        (10, 1, rank0),
        (30, 10, rank0),  # a `!` command of rank 0
        (11, 1, rank1),
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
        for p in psutil.Process(rank.pid).children(recursive=True):
            p.kill()
        rank.kill()
        rank.wait()
