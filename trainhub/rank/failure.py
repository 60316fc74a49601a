"""A rank's failure: where in the user's own code it happened (a cell and its line, or a
workspace file), and how the rank reports it: ``status/<attempt>/rank-<r>.json``, a
``cell_error`` event and the log's last line, with the failure class the evidence gives
(:func:`trainhub.lifecycle.classify.explain_exception`). :data:`OK` is the status of a rank
that did not fail."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from trainhub.bundle.schema import cell_label
from trainhub.jobs.directory import write_json_atomic
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import explain_exception
from trainhub.rank.context import RankContext
from trainhub.rank.logmarks import say

MAX_TRACEBACK_CHARS = 64 * 1024
OK = {"outcome": "ok"}


@dataclass
class Failure:
    exc: BaseException
    traceback_text: str
    cell_index: int | None = None
    line: int | None = None
    file: str | None = None
    raised_at: dict[str, Any] | None = None
    exit_call: str | None = None  # "sys.exit(0)", "os._exit(0)": a cell ended the run early


# --- locating an error ------------------------------------------------------------------------


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    frames = []
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        frames.append((exc.filename, exc.lineno))
    return frames


def user_paths(text: str, workspace: Path | None) -> str:
    """``text`` with the bundle's copy of a workspace file named by its path in the workspace
    ("File proj/helper.py:2"), as the user knows it."""
    return text.replace(f"{workspace}{os.sep}", "") if workspace is not None else text


def line_in(exc: BaseException, filename: str) -> int | None:
    """The line of the deepest frame executing code from ``filename``."""
    lines = [line for name, line in _frames(exc) if name == filename]
    return lines[-1] if lines else None


def innermost_user_frame(
    exc: BaseException, cell_names: dict[str, int | None], workspace: Path
) -> dict[str, Any] | None:
    """Where the exception was raised in the user's own code: a cell or a workspace file."""
    for name, line in reversed(_frames(exc)):
        if name in cell_names:
            return {"cell_index": cell_names[name], "line": line}
        path = Path(name)
        if path.is_absolute() and path.resolve().is_relative_to(workspace):
            return {"file": path.resolve().relative_to(workspace).as_posix(), "line": line}
    return None


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def exit_ok(exc: BaseException | None) -> bool:
    """Whether ``exc`` is ``sys.exit(0)`` or ``sys.exit()``: the code's way to end, no error."""
    return isinstance(exc, SystemExit) and exc.code in (0, None)


# --- reporting it ------------------------------------------------------------------------------


def failure_status(failure: Failure) -> dict[str, Any]:
    exc = failure.exc
    type_name = _type_name(exc)
    message = f"exit status {exc.code}" if isinstance(exc, SystemExit) else str(exc)
    if failure.exit_call is not None and exit_ok(exc):
        message = (
            f"{failure.exit_call} before the notebook's last cell: the cells after "
            f"{cell_label(failure.cell_index)} did not run"
        )
    elif failure.exit_call is not None:
        message = f"{failure.exit_call}: {message}"
    evidence = explain_exception(type_name, message, failure.traceback_text)
    if failure.cell_index is not None or failure.file is None:
        where = cell_label(failure.cell_index)
    else:
        where = failure.file
    if failure.line is not None:
        where += f", line {failure.line}"
    text = failure.traceback_text
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "...(truncated)\n" + text[-MAX_TRACEBACK_CHARS:]
    return {
        "outcome": "error",
        "failure_class": evidence.failure_class.value,
        "evidence": evidence.to_dict(),
        "exception": type_name,
        "message": message,
        "cell_index": failure.cell_index,
        "file": failure.file,
        "line": failure.line,
        "where": where,
        "raised_at": failure.raised_at,
        "traceback": text,
    }


def report_failure(ctx: RankContext, failure: Failure) -> None:
    """The rank's status, event and last log line for ``failure``."""
    status = failure_status(failure)
    write_json_atomic(ctx.job.rank_status(ctx.attempt, ctx.rank), status)
    ctx.emit(
        "cell_error",
        cell_index=status["cell_index"],
        file=status["file"],
        line=status["line"],
        exception=status["exception"],
        message=status["message"][:500],
        failure_class=status["failure_class"],
    )
    say(
        f"failed in {status['where']}: {status['exception']}: {status['message'][:500]} "
        f"({status['failure_class']} failure)"
    )


def platform_status(exc: BaseException, message: str) -> dict[str, Any]:
    """The status of a rank that the platform failed, not the user's code (an unreadable
    bundle, a checkpoint that could not be written); called while handling ``exc``."""
    return {
        "outcome": "error",
        "failure_class": FailureClass.INFRASTRUCTURE.value,
        "exception": _type_name(exc),
        "message": f"{message}: {exc}",
        "cell_index": None,
        "line": None,
        "traceback": traceback.format_exc(),
    }
