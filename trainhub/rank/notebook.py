"""The executed notebook of a rank: the user's notebook with the outputs of the cells this
rank ran, as nbformat 4 JSON.

Every cell of the submitted notebook (``bundle/notebook.ipynb``) is kept in order with its id,
metadata and attachments; markdown and raw cells as written, code cells the run did not choose
``skipped``, the injected parameters a cell of their own. Rank 0 writes ``notebook.ipynb``
into the job directory as it goes (the ranks the spec's ``notebook_ranks`` lists write
``notebook-rank-<r>.ipynb``): what cells print (sys.stdout
and sys.stderr, ``!`` commands included), rich display data (figures as image/png, HTML,
images), results with their execution counts, and at a failing cell the error with its
traceback. What C code or child processes write to the file descriptors directly reaches the
rank log only.

Its parts: :mod:`~trainhub.rank.nbcells` (the cells as nbformat JSON),
:mod:`~trainhub.rank.nbcapture` (what the cells put there, within the caps of
:mod:`trainhub.jobs.limits`), :mod:`~trainhub.rank.nbfile` (the file, rewritten whole as the
cells run). Here: the capture around a rank's cells, with ``sys.stdout`` and ``sys.stderr``
teed into it, and the notebook the supervisor writes when no cell could run (a ``%pip`` line
failed before the first cell). One a rank left unfinished (killed, crashed) is closed by the
backend that saw the end (:mod:`trainhub.lifecycle.notebooks`).

Standard library only, like everything a rank loads before the first cell.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from trainhub.bundle.schema import BundleCell
from trainhub.jobs.directory import JobDir
from trainhub.rank.nbcapture import NotebookCapture


class Tee:
    """A text stream that also hands what is written to the notebook (``sys.stdout``)."""

    def __init__(self, stream: TextIO, name: str, capture: NotebookCapture):
        self._stream = stream
        self._name = name
        self._capture = capture

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._capture.stream(self._name, text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # fileno, flush, encoding, buffer, isatty...
        return getattr(self._stream, name)


def write_unstarted(
    job: JobDir,
    cells: list[BundleCell],
    written: dict[str, Any] | None,
    *,
    attempt: int,
    cell_index: int | None,
    error: dict[str, Any],
) -> None:
    """The executed notebook of a run that ended before its first cell (a ``%pip`` line
    failed): the notebook as written, nothing run, the cell at fault holding ``error``."""
    if not writes_notebook(job, 0):
        return
    capture = NotebookCapture(job, cells, rank=0, attempt=attempt, written=written)
    for cell in capture.cells:
        if cell.index == cell_index and cell.index is not None:
            cell.status, cell.outputs, cell.serialized = "error", [error], None
    capture.close("failed")


def writes_notebook(job: JobDir, rank: int) -> bool:
    """Whether this rank keeps an executed notebook: the spec's ``notebook_ranks`` ([0] when
    the job directory has no spec, as when a bundle is run by hand)."""
    try:
        ranks = job.read_spec().get("notebook_ranks", [0])
    except FileNotFoundError:
        ranks = [0]
    except (OSError, ValueError):
        return rank == 0
    return ranks == "all" or (isinstance(ranks, list) and rank in ranks)


@contextmanager
def captured(
    job: JobDir,
    cells: list[BundleCell],
    *,
    rank: int,
    attempt: int,
    written: dict[str, Any] | None = None,
) -> Iterator[NotebookCapture | None]:
    """The capture of a notebook run, with sys.stdout and sys.stderr teed into it (None when
    this rank keeps no notebook). ``written``: the notebook as submitted, which the executed
    notebook keeps whole. The last write names how the run ended."""
    if not writes_notebook(job, rank):
        yield None
        return
    from trainhub.checkpoint.stopping import on_stop

    capture = NotebookCapture(job, cells, rank=rank, attempt=attempt, written=written)
    on_stop(lambda: capture.close("stopped"))  # asked to stop: the cells so far, said so
    streams = sys.stdout, sys.stderr
    sys.stdout = Tee(streams[0], "stdout", capture)  # type: ignore[assignment]
    sys.stderr = Tee(streams[1], "stderr", capture)  # type: ignore[assignment]
    capture.start()
    state = "stopped"
    try:
        yield capture
        state = "completed"
    except BaseException:
        state = "failed"
        raise
    finally:
        sys.stdout, sys.stderr = streams
        if state == "completed" and any(c.status == "error" for c in capture.cells):
            state = "failed"
        capture.close(state)
