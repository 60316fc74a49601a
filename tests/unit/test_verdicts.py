from trainhub.jobs.specparts import RetryPolicy
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.retry import should_retry
from trainhub.lifecycle.verdict import (
    RankExit,
    RunningCell,
    attempt_verdict,
    running_cell_text,
    running_cells,
    signal_name,
    torchrun_root_causes,
)

TORCHRUN_SUMMARY = """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
trainhub.rank.runner FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-29_14:39:49
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 19987)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 19987
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_14:39:49
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 19986)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 19986
============================================================
"""


def test_root_cause_is_the_first_failure_not_the_collateral_ones():
    assert torchrun_root_causes(TORCHRUN_SUMMARY) == [RankExit(1, -9)]
    assert torchrun_root_causes("no summary here") == []


def test_signal_names():
    assert signal_name(-9) == "SIGKILL"
    assert signal_name(137) == "SIGKILL"
    assert signal_name(1) is None


def test_a_killed_rank_is_infrastructure_and_retriable():
    v = attempt_verdict(attempt=0, rank_results={}, exits=[RankExit(1, -9)])
    assert v.failure_class == FailureClass.INFRASTRUCTURE and v.signal == "SIGKILL" and v.rank == 1
    assert v.reason == "rank 1 was killed by SIGKILL"
    assert should_retry(v, RetryPolicy(), {}) and not should_retry(
        v, RetryPolicy(), {"infrastructure": 2}
    )
    oom = attempt_verdict(attempt=0, rank_results={}, exits=[RankExit(0, -9)], oom_killed=True)
    assert "out-of-memory" in oom.reason


def test_a_rank_report_wins_over_exit_codes_and_a_stop_wins_over_all():
    results = {
        1: {
            "outcome": "error",
            "failure_class": "code",
            "exception": "ValueError",
            "message": "bad",
            "cell_index": 4,
            "line": 2,
            "time": 5.0,
            "traceback": "Traceback (most recent call last):\n  Cell 5, line 2\nValueError: bad",
        },
        0: {
            "outcome": "error",
            "failure_class": "infrastructure",
            "exception": "DistNetworkError",
            "message": "peer gone",
            "cell_index": 4,
            "line": 2,
            "time": 6.0,
        },
    }
    v = attempt_verdict(attempt=2, rank_results=results, exits=[RankExit(None, 1)])
    assert v.failure_class == FailureClass.CODE and v.rank == 1 and v.attempt == 2
    assert v.reason == "ValueError in cell 5, line 2 (rank 1): bad"
    assert v.traceback and v.traceback.endswith("ValueError: bad")  # shown in the failure box
    assert not should_retry(v, RetryPolicy(), {})
    stopped = attempt_verdict(
        attempt=0, rank_results=results, exits=[], stop_reason="cancelled by ana"
    )
    assert stopped.failure_class == FailureClass.CANCELLED and stopped.reason == "cancelled by ana"


def test_a_killed_rank_wins_over_the_lost_peer_errors_of_the_others():
    lost_peer = {
        0: {
            "outcome": "error",
            "failure_class": "infrastructure",
            "exception": "RuntimeError",
            "message": "Connection reset by peer",
            "cell_index": 5,
            "line": 7,
            "time": 6.0,
        }
    }
    v = attempt_verdict(attempt=0, rank_results=lost_peer, exits=[RankExit(1, -9)])
    assert v.rank == 1 and v.signal == "SIGKILL" and v.reason == "rank 1 was killed by SIGKILL"
    # A code error stays the cause, even when another rank was then killed.
    code = {0: {**lost_peer[0], "failure_class": "code", "exception": "ValueError"}}
    assert (
        attempt_verdict(attempt=0, rank_results=code, exits=[RankExit(1, -9)]).failure_class
        == FailureClass.CODE
    )
    # Without a killed rank the report stands.
    assert attempt_verdict(attempt=0, rank_results=lost_peer, exits=[RankExit(0, 1)]).rank == 0


def test_success():
    assert (
        attempt_verdict(attempt=0, rank_results={0: {"outcome": "ok"}}, exits=[RankExit(None, 0)])
        is None
    )


# --- endings inside a cell --------------------------------------------------------------------

CELL_EVENTS = [
    {"type": "cell", "rank": 0, "attempt": 1, "cell_index": 0, "phase": "start", "time": 10.0},
    {"type": "cell", "rank": 0, "attempt": 1, "cell_index": 0, "phase": "end", "time": 11.0},
    {"type": "cell", "rank": 0, "attempt": 1, "cell_index": 2, "phase": "start", "time": 12.0},
    {"type": "cell", "rank": 1, "attempt": 0, "cell_index": 2, "phase": "start", "time": 1.0},
    {"type": "metrics", "rank": 1, "attempt": 1},
]


def test_running_cells_are_those_started_and_not_ended_in_the_attempt():
    assert running_cells(CELL_EVENTS, 1) == {0: RunningCell(2, 12.0)}
    assert running_cells(CELL_EVENTS, 0) == {1: RunningCell(2, 1.0)}


def ended(exit_code: int, **kw):
    return attempt_verdict(
        attempt=1,
        rank_results={},
        exits=[RankExit(0, exit_code)],
        running={0: RunningCell(2, 12.0)},
        **kw,
    )


def test_a_crash_or_a_signal_no_one_sent_inside_a_cell_is_that_cells_code_failure():
    crash = ended(-11)
    assert (crash.failure_class, crash.cell_index, crash.signal) == (
        FailureClass.CODE,
        2,
        "SIGSEGV",
    )
    assert crash.reason.startswith("rank 0 crashed with SIGSEGV in cell 3")
    own = ended(128 + 15)
    assert own.failure_class == FailureClass.CODE
    assert "ended by SIGTERM in cell 3, a signal trainhub did not send" in own.reason
    quit_early = ended(0)
    assert (quit_early.failure_class, quit_early.cell_index) == (FailureClass.CODE, 2)
    assert "exited with status 0 in cell 3, before the notebook's last cell" in quit_early.reason


def test_oom_and_sigkill_stay_the_infrastructures_and_a_stop_names_the_cell():
    assert ended(-9, oom_killed=True).failure_class == FailureClass.INFRASTRUCTURE
    assert ended(-9).failure_class == FailureClass.INFRASTRUCTURE
    stop = ended(-15, stop_reason="cancelled by ana")
    assert (stop.failure_class, stop.cell_index) == (FailureClass.CANCELLED, 2)
    assert stop.reason == "cancelled by ana"  # as the person wrote it
    assert running_cell_text({0: RunningCell(2, 12.0)}, 16.5) == (
        "cell 3 had been running for 4.5 s"
    )
    assert running_cell_text({}, 16.5) == ""


def test_a_rank_that_finished_is_not_taken_for_one_that_quit():
    verdict = attempt_verdict(
        attempt=1, rank_results={0: {"outcome": "ok"}}, exits=[RankExit(None, 0)], running={}
    )
    assert verdict is None
