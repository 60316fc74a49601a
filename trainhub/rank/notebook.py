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

Each output and the whole file are capped (``notebook_output_bytes``, ``notebook_bytes`` of
:mod:`trainhub.jobs.limits`); what is left out is replaced by a line saying so. The file is
rewritten whole (a new file renamed over the name) after each cell and, within a long cell,
at most every :data:`FLUSH_SECONDS`, so a reader sees the cells done so far and never half a
file. A finished cell is serialized once. The writes happen on a thread of their own: a rename
over the old file can wait on the disk (ext4 flushes the new file's data then), and cells must
not wait with it.

Standard library only, like everything a rank loads before the first cell (importing
nbformat costs a rank start about a second): the JSON is the shape nbformat 4.5 validates,
built by hand, multiline strings as nbformat reads them (joined).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from trainhub.bundle.schema import BundleCell
from trainhub.jobs import confined, limits
from trainhub.jobs.directory import JobDir, notebook_name

FLUSH_SECONDS = 1.0  # the longest a finished cell or a new output waits to be on disk
MIN_GAP_SECONDS = 0.2  # a burst of short cells is written once per gap, not once per cell
NBFORMAT_MINOR = 5
_TEXT_PREFIXES = ("text/",)
_JSON_MIMES_SUFFIX = "json"


def _marker(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stderr", "text": f"[trainhub: {text}]\n"}


def _mime_value(mime: str, value: Any) -> Any:
    """A display value as nbformat stores it: binary as base64, text as text, JSON as is."""
    if isinstance(value, bytes | bytearray):
        if mime.startswith(_TEXT_PREFIXES) or mime.endswith("+xml"):
            return bytes(value).decode("utf-8", "replace")
        return base64.b64encode(value).decode("ascii")
    if mime.endswith(_JSON_MIMES_SUFFIX) or isinstance(value, str):
        return value
    return str(value)


def mime_bundle(data: dict[str, Any]) -> dict[str, Any]:
    return {mime: _mime_value(mime, value) for mime, value in data.items()}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Stream:
    """Consecutive writes to one stream, kept as chunks (joined when written out)."""

    def __init__(self, name: str):
        self.name = name
        self.chunks: list[str] = []
        self.size = 0
        self.cut = False

    def to_json(self) -> dict[str, Any]:
        return {"output_type": "stream", "name": self.name, "text": "".join(self.chunks)}


class _Cell:
    """One cell of the executed notebook: the user's cell as written (``written``: markdown,
    raw and code alike, with its id, metadata and attachments) and, for a code cell, what its
    run put there. A cell the run did not choose (tagged ``skip-execution``, not selected)
    stays ``skipped``; the injected parameters are a cell of their own (papermill's habit)."""

    def __init__(self, index: int | None, written: dict[str, Any] | None, run: BundleCell | None):
        self.index = index
        self.written = written
        self.source = written.get("source", "") if written else run.source if run else ""
        self.tags = list(run.tags) if run else []
        self.code = written is None or written.get("cell_type") == "code"
        self.outputs: list[dict[str, Any] | _Stream] = []
        self.execution_count: int | None = None
        self.status = "not run" if run is not None else "skipped"
        self.seconds: float | None = None
        self.serialized: str | None = None  # set once the cell is final
        if run is None:  # as written, or skipped: final from the start
            self.serialized = _dumps(self.to_json())

    @property
    def id(self) -> str:
        if self.written and isinstance(self.written.get("id"), str):
            return self.written["id"]
        return "trainhub-parameters" if self.index is None else f"trainhub-cell-{self.index}"

    def to_json(self) -> dict[str, Any]:
        if not self.code:
            return dict(self.written or {})
        trainhub: dict[str, Any] = {"cell_index": self.index, "status": self.status}
        if self.seconds is not None:
            trainhub["seconds"] = self.seconds
        metadata: dict[str, Any] = {
            **(self.written or {}).get("metadata", {}),
            "trainhub": trainhub,
        }
        if self.tags and not self.written:
            metadata["tags"] = self.tags
        return {
            "cell_type": "code",
            "execution_count": self.execution_count,
            "id": self.id,
            "metadata": metadata,
            "outputs": [o.to_json() if isinstance(o, _Stream) else o for o in self.outputs],
            "source": self.source,
        }


def _cells(written: list[dict[str, Any]] | None, runs: list[BundleCell]) -> list[_Cell]:
    """The executed notebook's cells: the notebook as written, each run cell in its place,
    the injected parameters right before the cell that runs after them."""
    if written is None:  # a bundle without the notebook: the cells that run, alone
        return [_Cell(run.cell_index, None, run) for run in runs]
    by_index = {run.cell_index: run for run in runs if run.cell_index is not None}
    injected = [run for run in runs if run.cell_index is None]
    after = next((k for k, run in enumerate(runs) if run.cell_index is None), len(runs))
    before = runs[after + 1].cell_index if after + 1 < len(runs) else None
    cells = []
    for index, cell in enumerate(written):
        if injected and index == before:
            cells.append(_Cell(None, None, injected.pop()))
        cells.append(_Cell(index, _with_id(cell, index), by_index.get(index)))
    cells += [_Cell(None, None, run) for run in injected]  # nothing runs after them
    return cells


def _with_id(cell: dict[str, Any], index: int) -> dict[str, Any]:
    """The cell in nbformat's in-memory form (multiline strings joined, as ``nbformat.reads``
    leaves them), with an id: nbformat 4.5 gives every cell one, an older notebook's cells get
    one by position."""
    cell = {**cell, "source": _joined(cell.get("source", ""))}
    if isinstance(cell.get("attachments"), dict):
        cell["attachments"] = {
            name: {mime: _joined(value) for mime, value in bundle.items()}
            if isinstance(bundle, dict)
            else bundle
            for name, bundle in cell["attachments"].items()
        }
    return cell if isinstance(cell.get("id"), str) else {**cell, "id": f"cell-{index}"}


def _joined(value: Any) -> Any:
    return "".join(value) if isinstance(value, list) else value


class NotebookCapture:
    """Collects one rank's cells and outputs and keeps the executed notebook on disk."""

    def __init__(
        self,
        job: JobDir,
        cells: list[BundleCell],
        *,
        rank: int,
        attempt: int,
        bounds: limits.Limits | None = None,
        written: dict[str, Any] | None = None,
    ):
        bounds = bounds or limits.current()
        self.job = job
        self.name = notebook_name(rank)
        self.rank = rank
        self.attempt = attempt
        self.output_cap = bounds.notebook_output_bytes
        self.metadata = dict((written or {}).get("metadata") or {})
        self.cells = _cells(written["cells"] if written else None, cells)
        self.runs = [c for c in self.cells if c.status == "not run"]  # in the order they run
        # The notebook as written is always kept: the outputs get what the file cap leaves.
        sources = sum(len(c.serialized or _dumps(c.to_json())) + 256 for c in self.cells)
        self.output_room = max(bounds.notebook_bytes - sources - 4096, 0)
        self.output_bytes = 0
        self.full = False
        self.state = "running"
        self._current: _Cell | None = None
        self._clear_pending = False
        self._displays: dict[str, list[tuple[_Cell, dict[str, Any]]]] = {}
        self._pid = os.getpid()
        self._lock = threading.RLock()
        # Reentrant: a stop (SIGTERM) may close the notebook while this thread was writing it.
        self._write_lock = threading.RLock()
        self._dirty = True
        self._last_write = 0.0
        self._paused = 0
        self._stop = threading.Event()
        self._wake = threading.Event()  # a cell has ended: write soon
        self._log = f"logs/rank-{rank}.log"
        # An output that belongs elsewhere than the cell (an ipywidgets Output's): taken there.
        self.divert: Callable[[dict[str, Any]], bool] = lambda output: False
        self.divert_clear: Callable[[], bool] = lambda: False
        self._flusher = threading.Thread(target=self._flush_loop, name="trainhub-notebook")
        self._flusher.daemon = True

    # --- the runner's side ----------------------------------------------------------------
    def start(self) -> None:
        self._wake.set()  # the cells about to run, none run yet
        self._flusher.start()

    def start_cell(self, position: int, execution_count: int) -> None:
        with self._lock:
            cell = self.runs[position]
            cell.execution_count = execution_count
            cell.status = "running"
            self._current, self._clear_pending = cell, False
            self._dirty = True

    def end_cell(self, ok: bool, seconds: float) -> None:
        with self._lock:
            cell = self._current
            if cell is None:
                return
            cell.status = "ok" if ok else "error"
            cell.seconds = seconds
            cell.serialized = _dumps(cell.to_json())
            self._current = None
            self._dirty = True
        self._wake.set()

    def close(self, state: str) -> None:
        """The last write: ``state`` is ``completed``, ``failed`` or ``stopped``."""
        self._stop.set()
        self._wake.set()
        if self._flusher.is_alive():
            self._flusher.join()
        with self._lock:
            self.state = state
            if self._current is not None:  # stopped inside a cell
                self._current.status = state
            self._current = None
            self._dirty = True
        self.write()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """What is printed meanwhile reaches the log only (IPython's own traceback text)."""
        with self._lock:
            self._paused += 1
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1

    # --- outputs ----------------------------------------------------------------------------
    def stream(self, name: str, text: str) -> None:
        if not text or os.getpid() != self._pid:
            return  # a forked child (a data loader worker) prints to the log alone
        if not self._paused and self.divert({"output_type": "stream", "name": name, "text": text}):
            return
        with self._lock:
            cell = self._target()
            if cell is None:
                return
            last = cell.outputs[-1] if cell.outputs else None
            if not isinstance(last, _Stream) or last.name != name:
                last = _Stream(name)
                if not self._take(len(name) + 64):
                    return
                cell.outputs.append(last)
            if last.cut:
                return
            size = _text_size(text)
            fits_output = last.size + size <= self.output_cap
            if fits_output and self._take(size):
                last.chunks.append(text)
                last.size += size
                return
            if fits_output:
                return  # the file is full; _take said so once
            room = self.output_cap - last.size
            piece = text.encode("utf-8", "replace")[: max(room, 0)].decode("utf-8", "ignore")
            while piece and _text_size(piece) > room:  # escapes take room of their own
                piece = piece[: len(piece) - (_text_size(piece) - room)]
            if piece and self._take(_text_size(piece)):
                last.chunks.append(piece)
            last.chunks.append(
                f"\n[trainhub: output cut at {limits.size_text(self.output_cap)}; the rest "
                f"of it is in {self._log}]\n"
            )
            last.cut = True
            self._dirty = True

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        transient: dict[str, Any] | None = None,
        update: bool = False,
    ) -> None:
        output: dict[str, Any] = {
            "output_type": "display_data",
            "data": mime_bundle(data),
            "metadata": metadata or {},
        }
        display_id = (transient or {}).get("display_id")
        if not update and self.divert(output):
            return
        if update and display_id is not None:
            self._update(display_id, output)
        elif self._add(output) and display_id is not None:
            with self._lock:
                self._displays.setdefault(display_id, []).append((self.cells_of(output), output))

    def result(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        with self._lock:
            count = self._current.execution_count if self._current else None
        self._add(
            {
                "output_type": "execute_result",
                "data": mime_bundle(data),
                "execution_count": count,
                "metadata": metadata or {},
            }
        )

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self._add(
            {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": traceback}
        )

    def clear(self, wait: bool = False) -> None:
        """``clear_output()``: now, or (``wait``) when the next output arrives."""
        if self.divert_clear():
            return
        with self._lock:
            if wait:
                self._clear_pending = True
            elif self._current is not None:
                self._clear(self._current)

    # --- inside -------------------------------------------------------------------------------
    def _target(self) -> _Cell | None:
        """The running cell, about to take an output (None: outside cells, or paused)."""
        cell = self._current
        if cell is None or self._paused:
            return None
        if self._clear_pending:
            self._clear(cell)
        self._dirty = True
        return cell

    def _clear(self, cell: _Cell) -> None:
        self._clear_pending = False
        self.output_bytes -= sum(_output_size(o) for o in cell.outputs)
        cell.outputs.clear()
        self._dirty = True

    def _take(self, size: int) -> bool:
        """Room for ``size`` more bytes of outputs; past the file cap, one marker, then none."""
        if self.full:
            return False
        if self.output_bytes + size <= self.output_room:
            self.output_bytes += size
            return True
        self.full = True
        if self._current is not None:
            self._current.outputs.append(
                _marker(
                    f"the notebook reached its {limits.size_text(self.output_room)} of outputs; "
                    f"further outputs are in {self._log} only"
                )
            )
        return False

    def _add(self, output: dict[str, Any]) -> bool:
        if os.getpid() != self._pid:
            return False
        text = _dumps(output)
        size = len(text.encode())
        if size > self.output_cap:
            kinds = ", ".join(output.get("data", {})) or output["output_type"]
            output = _marker(
                f"an output of {limits.size_text(size)} ({kinds}) is over the "
                f"{limits.size_text(self.output_cap)} an output may hold; left out"
            )
            size = len(_dumps(output).encode())
        with self._lock:
            cell = self._target()
            if cell is None or not self._take(size):
                return False
            cell.outputs.append(output)
            return True

    def cells_of(self, output: dict[str, Any]) -> _Cell:
        return next(c for c in self.cells if any(o is output for o in c.outputs))

    def _update(self, display_id: str, output: dict[str, Any]) -> None:
        """``update_display``: the outputs shown with ``display_id`` take the new data (in
        place: nbformat keeps no display ids on disk)."""
        with self._lock:
            for cell, old in self._displays.get(display_id, []):
                grown = _output_size(output) - _output_size(old)
                if _output_size(output) > self.output_cap or not self._take(max(grown, 0)):
                    continue
                self.output_bytes += min(grown, 0)
                old.update(data=output["data"], metadata=output["metadata"])
                if cell.serialized is not None:
                    cell.serialized = _dumps(cell.to_json())
                self._dirty = True

    # --- on disk ------------------------------------------------------------------------------
    def render(self) -> bytes:
        with self._lock:
            cells = [c.serialized or _dumps(c.to_json()) for c in self.cells]
            metadata = {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                **self.metadata,
                "language_info": {"name": "python", "version": sys.version.split()[0]},
                "trainhub": {
                    "rank": self.rank,
                    "attempt": self.attempt,
                    "state": self.state,
                    "truncated": self.full,
                },
            }
            widgets = _widget_state()
            if widgets is not None:
                metadata["widgets"] = widgets
            self._dirty = False
        head = '{\n "cells": [\n  '
        tail = (
            f'\n ],\n "metadata": {_dumps(metadata)},\n "nbformat": 4,\n'
            f' "nbformat_minor": {NBFORMAT_MINOR}\n}}\n'
        )
        return (head + ",\n  ".join(cells) + tail).encode("utf-8", "replace")

    def write(self) -> None:
        if os.getpid() != self._pid:
            return
        with self._write_lock:  # two writers would race their renames
            data = self.render()
            try:
                confined.replace(self.job.root, self.name, data)
            except OSError as e:  # a full disk must not fail the job: the log has it all
                print(
                    f"[trainhub] the executed notebook could not be written: {e}", file=sys.stderr
                )
            self._last_write = time.monotonic()

    def _flush_loop(self) -> None:
        """Write when a cell ends (at most once per MIN_GAP_SECONDS) or, within a cell, every
        FLUSH_SECONDS while there is something new."""
        while True:
            self._wake.wait(FLUSH_SECONDS)
            if self._stop.is_set():
                return
            self._wake.clear()
            gap = MIN_GAP_SECONDS - (time.monotonic() - self._last_write)
            if gap > 0 and self._stop.wait(gap):
                return
            if self._dirty:
                self.write()


def _widget_state() -> dict[str, Any] | None:
    """The widgets the cells made, as JupyterLab saves them with the notebook (ipywidgets' own
    manager state), so the Notebook tab and nbconvert show them; None when there are none."""
    ipywidgets = sys.modules.get("ipywidgets")
    if ipywidgets is None:
        return None
    try:
        state = ipywidgets.Widget.get_manager_state(drop_defaults=True)
    except Exception:  # a widget made on the cells' thread meanwhile: the next write has it
        return None
    return {"application/vnd.jupyter.widget-state+json": state} if state.get("state") else None


def _text_size(text: str) -> int:
    """The bytes ``text`` takes in the file (JSON escapes included)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "replace")) - 2


def _output_size(output: dict[str, Any] | _Stream) -> int:
    return output.size if isinstance(output, _Stream) else len(_dumps(output).encode())


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


def close_unfinished(
    job: JobDir, rank: int, attempt: int, reason: str, *, failed: bool = True
) -> bool:
    """Say in a rank's executed notebook how the attempt ended when the rank could not (killed,
    crashed, exited past the runner): ``state`` failed, the cell it was in ``error``, and the
    verdict's ``reason`` in ``metadata.trainhub.ended``. A notebook its rank closed as
    ``stopped`` (on SIGTERM) is one of them too unless the stop was a person's or a rule's
    (``failed``: the verdict is a failure). Whether it changed anything."""
    try:
        with confined.opened(job.root, notebook_name(rank)) as f:
            doc = json.loads(f.read())
    except (OSError, ValueError, confined.NotAJobFile):
        return False
    unfinished = {"running", "stopped"} if failed else {"running"}
    meta = doc.get("metadata", {}).get("trainhub", {})
    if meta.get("attempt") != attempt or meta.get("state") not in unfinished:
        return False
    meta.update(state="failed" if failed else "stopped", ended=reason)
    for cell in doc.get("cells", []):
        ran = cell.get("metadata", {}).get("trainhub", {})
        if ran.get("status") in unfinished:
            ran["status"] = "error" if failed else "stopped"
    confined.replace(job.root, notebook_name(rank), _dumps(doc).encode())
    return True


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
