"""Pure parts of the warm rank start: which process runs a rank, and what a runner that
already started cannot take on."""

from trainhub.handoff import HANDOFF_DIR, WARM_RANK, rank_of, startup_differences


def test_the_rank_of_a_process_is_the_one_whose_cells_it_runs():
    assert rank_of({"RANK": "3", "LOCAL_RANK": "1"}) == 3  # started by torchrun, cold
    assert rank_of({WARM_RANK: "3"}) == 3  # a warm runner, before and after it took rank 3
    assert rank_of({"RANK": "3", "LOCAL_RANK": "1", HANDOFF_DIR: "/j/run"}) is None  # its stand-in
    assert rank_of({"RANK": "3"}) is None and rank_of({}) is None  # not a rank torchrun started


def test_only_what_an_interpreter_reads_at_start_up_must_match():
    ours = {"PYTHONPATH": "/a", "LD_PRELOAD": "x.so", "PATH": "/bin", "RANK": "0"}
    assert startup_differences({**ours, "RANK": "1", "MASTER_PORT": "9", "PATH": "/usr/bin"}, ours) == []
    theirs = {**ours, "PYTHONPATH": "/b", "PYTHONHASHSEED": "0"}
    del theirs["LD_PRELOAD"]
    assert startup_differences(theirs, ours) == ["LD_PRELOAD", "PYTHONHASHSEED", "PYTHONPATH"]
