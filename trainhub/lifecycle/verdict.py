"""How an attempt ended: pure functions from evidence (rank results, exit codes, signals) to a
:class:`Verdict`. Shared by the local supervisor and the Kubernetes backend."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainhub.bundle.schema import cell_label
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass, JobState

_ROOT_CAUSE = re.compile(r"rank\s*:\s*(?P<rank>\d+).*?exitcode\s*:\s*(?P<code>-?\d+)", re.DOTALL)


@dataclass(frozen=True)
class RankExit:
    """A rank (or agent) that ended without reporting a result itself."""

    rank: int | None
    exit_code: int  # negative: killed by that signal, as subprocess reports it


@dataclass(frozen=True)
class RunningCell:
    """The notebook cell a rank had started and not finished when it ended."""

    cell_index: int
    started: float  # epoch seconds


def running_cells(events: Iterable[dict[str, Any]], attempt: int) -> dict[int, RunningCell]:
    """Per rank, the cell the runner said it started (its ``cell`` event, written before the
    cell runs) and never said it ended: where a rank that died without a word was."""
    running: dict[int, RunningCell] = {}
    for event in events:
        if event.get("type") != "cell" or event.get("attempt") != attempt:
            continue
        rank, index = event.get("rank"), event.get("cell_index")
        if not isinstance(rank, int) or not isinstance(index, int):
            continue
        if event.get("phase") == "start":
            running[rank] = RunningCell(index, float(event.get("time") or 0))
        else:
            running.pop(rank, None)
    return running


# Signals the kernel raises for the faulting code itself, or that the process raises at itself
# (abort()): whichever cell was running caused them.
_FAULTS = frozenset({"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS"})


def first_running(running: dict[int, RunningCell]) -> RunningCell | None:
    """The lowest rank's running cell: the one a stop names."""
    return running[min(running)] if running else None


def running_cell_text(running: dict[int, RunningCell], now: float) -> str:
    """ "cell 2 had been running for 3.8 s" (the lowest rank's), or "" when none was running."""
    cell = first_running(running)
    if cell is None:
        return ""
    return f"{cell_label(cell.cell_index)} had been running for {max(now - cell.started, 0):.1f} s"


def time_limit_reason(limit: timedelta, running: dict[int, RunningCell], now: float) -> str:
    """The stop reason of a job that reached its max runtime at ``now``: "ran longer than its
    max runtime (0:00:04); cell 2 had been running for 3.8 s"."""
    where = running_cell_text(running, now)
    return f"ran longer than its max runtime ({limit})" + (f"; {where}" if where else "")


def _in_cell_verdict(
    culprit: RankExit, cell: RunningCell, sig: str | None, attempt: int
) -> Verdict:
    """A rank that ended inside a cell with no report of its own, when nothing outside the
    job (a stop, the OOM killer) explains it: the cell's own doing."""
    where = cell_label(cell.cell_index)
    if sig in _FAULTS:
        how = f"crashed with {sig} in {where} (in code the cell ran: the log has its stack)"
    elif sig:
        how = f"was ended by {sig} in {where}, a signal trainhub did not send"
    else:
        how = f"exited with status {culprit.exit_code} in {where}"
    if not sig and culprit.exit_code == 0:
        how += ", before the notebook's last cell: the cells after it did not run"
    return Verdict(
        failure_class=FailureClass.CODE,
        reason=f"rank {culprit.rank} {how}",
        rank=culprit.rank,
        cell_index=cell.cell_index,
        exit_code=culprit.exit_code,
        signal=sig,
        attempt=attempt,
    )


def signal_name(exit_code: int) -> str | None:
    """-9 or 137 -> 'SIGKILL'."""
    num = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else 0
    if num <= 0:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def torchrun_root_causes(agent_log: str) -> list[RankExit]:
    """The rank torchrun names as the root cause (first observed failure) of its last failure.

    The "Failures" section above it lists the ranks torchrun itself terminated afterwards;
    they are collateral, not causes.
    """
    start = agent_log.rfind("Root Cause")
    if start < 0:
        return []
    end = agent_log.find("=" * 20, start)
    block = agent_log[start : end if end > 0 else None]
    return [RankExit(int(m["rank"]), int(m["code"])) for m in _ROOT_CAUSE.finditer(block)]


def rank_error_verdict(rank: int, result: dict[str, Any], attempt: int) -> Verdict:
    cls = FailureClass(result.get("failure_class") or FailureClass.CODE)
    where = ""
    if result.get("cell_index") is not None:
        where = f" in {cell_label(result['cell_index'])}"
        if result.get("line"):
            where += f", line {result['line']}"
    elif result.get("file"):
        where = f" in {result['file']}" + (f", line {result['line']}" if result.get("line") else "")
    exc = result.get("exception") or "error"
    message = (result.get("message") or "").strip().splitlines()
    reason = f"{exc}{where} (rank {rank})" + (f": {message[0][:300]}" if message else "")
    return Verdict(
        failure_class=cls,
        reason=reason,
        rank=rank,
        cell_index=result.get("cell_index"),
        line=result.get("line"),
        exception=result.get("exception"),
        message=result.get("message"),
        attempt=attempt,
        traceback=result.get("traceback"),
    )


# How a cancel says that a sweep's early-stopping rule asked for it (the reason is kept in
# the job's record, which every process that ends the job reads).
STOPPED_EARLY = "stopped early: "


def stop_reason_of_rule(why: str) -> str:
    """The cancel reason of a trial its sweep's rule stops."""
    return STOPPED_EARLY + why


def cancel_verdict(reason: str, attempt: int, running: RunningCell | None = None) -> Verdict:
    """The verdict of a stop: ``stopped_early`` when a sweep's rule asked, else ``cancelled``.
    Neither is ever retried. ``running``: the cell the stop interrupted (the person's reason
    is kept as they wrote it)."""
    cell = running.cell_index if running is not None else None
    if reason.startswith(STOPPED_EARLY):
        why = reason[len(STOPPED_EARLY) :]
        return Verdict(
            failure_class=FailureClass.STOPPED_EARLY, reason=why, attempt=attempt, cell_index=cell
        )
    return Verdict(
        failure_class=FailureClass.CANCELLED, reason=reason, attempt=attempt, cell_index=cell
    )


def end_state(verdict: Verdict | None) -> JobState:
    """The state a job's last verdict ends it in: succeeded without one; cancelled by a stop
    (a person's, a sweep's rule, its own time limit: trainhub stopped it, nothing in it
    failed); failed otherwise."""
    if verdict is None:
        return JobState.SUCCEEDED
    if verdict.failure_class in (FailureClass.CANCELLED, FailureClass.STOPPED_EARLY):
        return JobState.CANCELLED
    return JobState.FAILED


def attempt_verdict(
    *,
    attempt: int,
    rank_results: dict[int, dict[str, Any]],
    exits: list[RankExit],
    stop_reason: str | None = None,
    oom_killed: bool = False,
    running: dict[int, RunningCell] | None = None,
) -> Verdict | None:
    """None when the attempt succeeded; otherwise why it failed.

    A person's stop (or the time limit) wins; then a rank's own report of an exception (the
    first rank, since the others are usually collateral); then how processes died. A rank
    killed by a signal shows in the others as a lost peer, an infrastructure error they
    report: then the killed rank, not the ones that noticed, is the cause. ``running``
    (:func:`running_cells`) says which cell each rank was in: a rank that ended inside one
    without a report, by its own exit, a crash or a signal trainhub did not send, is a code
    failure of that cell; the OOM killer and other SIGKILLs stay the infrastructure's.
    """
    running = running or {}
    if stop_reason is not None:
        return cancel_verdict(stop_reason, attempt, first_running(running))
    errors = {r: res for r, res in rank_results.items() if res.get("outcome") == "error"}
    failed = [e for e in exits if e.exit_code != 0]
    killed = [e for e in failed if (e.exit_code < 0 or e.exit_code > 128) and e.rank not in errors]
    only_lost_peers = all(
        res.get("failure_class") == FailureClass.INFRASTRUCTURE.value for res in errors.values()
    )
    if errors and not (killed and only_lost_peers):
        first = min(errors, key=lambda r: (errors[r].get("time") or 0, r))
        return rank_error_verdict(first, errors[first], attempt)
    if not failed:
        quit_early = [r for r in sorted(running) if rank_results.get(r, {}).get("outcome") != "ok"]
        if quit_early:  # exited 0 inside a cell, past the runner: os._exit(0) from C, say
            return _in_cell_verdict(
                RankExit(quit_early[0], 0), running[quit_early[0]], None, attempt
            )
        return None
    culprit = killed[0] if killed else failed[0]
    sig = signal_name(culprit.exit_code)
    cell = running.get(culprit.rank) if culprit.rank is not None else None
    if cell is not None and not oom_killed and sig != "SIGKILL":
        return _in_cell_verdict(culprit, cell, sig, attempt)
    who = f"rank {culprit.rank}" if culprit.rank is not None else "a worker"
    if oom_killed:
        reason = f"{who} was killed by the kernel's out-of-memory killer"
    elif sig:
        reason = f"{who} was killed by {sig}"
    else:
        reason = f"{who} exited with code {culprit.exit_code} without reporting an error"
    return Verdict(
        failure_class=FailureClass.INFRASTRUCTURE,
        reason=reason,
        rank=culprit.rank,
        exit_code=culprit.exit_code,
        signal=sig,
        attempt=attempt,
    )
