"""A notebook's cells run in order in the rank's IPython shell (:mod:`trainhub.rank.shell`):
each cell's ``cell`` events (``phase`` start, before it runs, and end), its start marker in the
log, its place in the executed notebook, and the failure that stops the run: an exception
(except in a cell tagged ``raises-exception``, as nbclient allows), ``sys.exit``/``exit()``
before the last cell, or ``os._exit`` in a cell (:class:`ExitGuard` writes the rank's status
and the notebook first)."""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from trainhub.bundle.cells import RAISES_TAG
from trainhub.bundle.layout import NOTEBOOK, WORKSPACE
from trainhub.bundle.schema import BundleCell, BundleManifest, cell_label, read_cells, read_json
from trainhub.jobs.directory import write_json_atomic
from trainhub.rank.context import RankContext
from trainhub.rank.failure import (
    OK,
    Failure,
    exit_ok,
    innermost_user_frame,
    line_in,
    report_failure,
)
from trainhub.rank.logdisplay import OutputWriter
from trainhub.rank.logmarks import cell_start, say, to_log
from trainhub.rank.nbcapture import NotebookCapture
from trainhub.rank.notebook import captured
from trainhub.rank.shell import make_shell


def _cell_name(cell: BundleCell) -> str:
    return (
        "<trainhub-parameters>" if cell.cell_index is None else f"<trainhub-cell-{cell.cell_index}>"
    )


def run_cells(bundle_dir: Path, manifest: BundleManifest, ctx: RankContext) -> Failure | None:
    cells = read_cells(bundle_dir)
    written = read_json(bundle_dir / NOTEBOOK) if (bundle_dir / NOTEBOOK).exists() else None
    with captured(ctx.job, cells, rank=ctx.rank, attempt=ctx.attempt, written=written) as notebook:
        guard = ExitGuard(ctx, cells, notebook)
        os._exit = guard
        try:
            return _run_cells(bundle_dir, cells, ctx, notebook, guard)
        finally:
            os._exit = guard.exit  # after the cells, os._exit is nobody's cell's


def _run_cells(
    bundle_dir: Path,
    cells: list[BundleCell],
    ctx: RankContext,
    notebook: NotebookCapture | None,
    guard: ExitGuard,
) -> Failure | None:
    workspace = (bundle_dir / WORKSPACE).resolve()
    writer = OutputWriter(ctx)
    shell = make_shell(ctx, writer, notebook, workspace)
    compiler = shell.compile
    cell_names = {_cell_name(c): c.cell_index for c in cells}
    for position, cell in enumerate(cells):
        name = _cell_name(cell)
        compiler.labels[name] = (
            "parameters" if cell.cell_index is None else str(cell.cell_index + 1)
        )
        compiler.next_name = name
        writer.cell_index = cell.cell_index
        if not cell.injected:
            ctx.emit("cell", cell_index=cell.cell_index, phase="start")
            # A separator in the Logs tab; before the cell starts, so it is not in its output.
            to_log(cell_start(cell.cell_index, time.time()))
        started = time.monotonic()
        shell.last_traceback_text = ""
        if notebook is not None:
            notebook.start_cell(position, shell.execution_count)
        guard.position, guard.started = position, started
        shell.start_request(name)
        result = shell.run_cell(cell.source, store_history=True, cell_id=name)
        elapsed = round(time.monotonic() - started, 3)
        last = position == len(cells) - 1
        ok = result.success or (exit_ok(_error(result)) and last)
        if notebook is not None:
            notebook.end_cell(ok, elapsed)
        if not cell.injected:
            ctx.emit("cell", cell_index=cell.cell_index, phase="end", seconds=elapsed, ok=ok)
        exc = _error(result)
        if isinstance(exc, Exception) and RAISES_TAG in cell.tags:
            # Its traceback is its output, in the log and the executed notebook.
            say(f"{cell_label(cell.cell_index)} raised {type(exc).__name__}, as its tag allows")
            continue
        if exc is not None:
            if exit_ok(exc) and last:
                code = getattr(exc, "code", None)
                say(f"{cell_label(cell.cell_index)}, the last, called sys.exit({code})")
                return None
            text = shell.last_traceback_text or "".join(traceback.format_exception(exc))
            return Failure(
                exc=exc,
                traceback_text=text,
                cell_index=cell.cell_index,
                line=line_in(exc, name),
                raised_at=innermost_user_frame(exc, cell_names, workspace),
                exit_call=f"sys.exit({getattr(exc, 'code', None)})" if exit_ok(exc) else None,
            )
        if shell.exit_now and not last:  # exit() or quit(): the cells after it do not run
            return Failure(
                exc=SystemExit(0), traceback_text="", cell_index=cell.cell_index, exit_call="exit()"
            )
    return None


def _error(result: Any) -> BaseException | None:
    return result.error_before_exec or result.error_in_exec


class ExitGuard:
    """``os._exit`` while the cells run: it ends the process at once, past every ``finally``,
    so first say where and how (the rank's status), and keep the output so far (the log,
    the executed notebook); ``os._exit(0)`` before the last cell's end exits 1, as any
    failure does. A forked child's ``os._exit`` (a data loader worker) is its own."""

    def __init__(self, ctx: RankContext, cells: list[BundleCell], notebook: Any) -> None:
        self.ctx, self.cells, self.notebook = ctx, cells, notebook
        self.position, self.started = 0, time.monotonic()
        self.exit, self._pid = os._exit, os.getpid()

    def __call__(self, status: int) -> NoReturn:
        if os.getpid() == self._pid:
            os._exit = self.exit
            cell = self.cells[self.position]
            done = status == 0 and self.position == len(self.cells) - 1
            if done:
                write_json_atomic(self.ctx.job.rank_status(self.ctx.attempt, self.ctx.rank), OK)
            else:
                name = _cell_name(cell)
                failure = Failure(
                    exc=SystemExit(status),
                    traceback_text=_stack_from(name),
                    cell_index=cell.cell_index,
                    line=_calling_line(name),
                    exit_call=f"os._exit({status})",
                )
                report_failure(self.ctx, failure)
            if self.notebook is not None:
                self.notebook.end_cell(done, round(time.monotonic() - self.started, 3))
                self.notebook.close("completed" if done else "failed")
            sys.stdout.flush()
            sys.stderr.flush()
            # Never 0 before the notebook's end: torchrun, the pod and the Job would each take
            # the run for a success (the report says how it ended).
            status = status or (0 if done else 1)
        self.exit(status)


def _stack_from(filename: str) -> str:
    """The calls from the cell's own code to here (the runner's frames above it left out)."""
    frames = traceback.extract_stack()[:-2]
    cell = next((k for k, f in enumerate(frames) if f.filename == filename), 0)
    return "".join(traceback.format_list(frames[cell:]))


def _calling_line(filename: str) -> int | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != filename:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None
