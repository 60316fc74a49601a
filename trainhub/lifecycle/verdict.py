"""How an attempt ended: pure functions from evidence (rank results, exit codes, signals) to a
:class:`Verdict`. Shared by the local supervisor and the Kubernetes backend."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any

from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass

_ROOT_CAUSE = re.compile(r"rank\s*:\s*(?P<rank>\d+).*?exitcode\s*:\s*(?P<code>-?\d+)", re.DOTALL)


@dataclass(frozen=True)
class RankExit:
    """A rank (or agent) that ended without reporting a result itself."""

    rank: int | None
    exit_code: int  # negative: killed by that signal, as subprocess reports it


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
        where = f" in cell {result['cell_index'] + 1}"
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


def cancel_verdict(reason: str, attempt: int) -> Verdict:
    """The verdict of a stop: ``stopped_early`` when a sweep's rule asked, else ``cancelled``.
    Neither is ever retried."""
    if reason.startswith(STOPPED_EARLY):
        why = reason[len(STOPPED_EARLY) :]
        return Verdict(failure_class=FailureClass.STOPPED_EARLY, reason=why, attempt=attempt)
    return Verdict(failure_class=FailureClass.CANCELLED, reason=reason, attempt=attempt)


def attempt_verdict(
    *,
    attempt: int,
    rank_results: dict[int, dict[str, Any]],
    exits: list[RankExit],
    stop_reason: str | None = None,
    oom_killed: bool = False,
) -> Verdict | None:
    """None when the attempt succeeded; otherwise why it failed.

    A person's stop wins; then a rank's own report of an exception (the first rank, since
    the others are usually collateral); then how processes died. A rank killed by a signal
    shows in the others as a lost peer, an infrastructure error they report: then the killed
    rank, not the ones that noticed, is the cause.
    """
    if stop_reason is not None:
        return cancel_verdict(stop_reason, attempt)
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
        return None
    culprit = killed[0] if killed else failed[0]
    sig = signal_name(culprit.exit_code)
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
