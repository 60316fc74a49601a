"""The capture of one rank's executed notebook: the cells this rank runs and what they put
there (streams, display data, results, errors), within the caps of :mod:`trainhub.jobs.limits`
(``notebook_output_bytes`` per output, ``notebook_bytes`` for the file, the notebook as
written always kept), each cut replaced by a line saying so; rendered as the nbformat 4.5 file
:class:`~trainhub.rank.nbfile.NotebookFile` keeps on disk. A finished cell is serialized once."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from trainhub.bundle.schema import BundleCell
from trainhub.jobs import limits
from trainhub.jobs.directory import JobDir, notebook_name
from trainhub.rank.nbcells import (
    Cell,
    Stream,
    dumps,
    executed_cells,
    marker,
    mime_bundle,
    output_size,
    text_size,
)
from trainhub.rank.nbfile import NotebookFile

NBFORMAT_MINOR = 5


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
        self.rank = rank
        self.attempt = attempt
        self.output_cap = bounds.notebook_output_bytes
        self.metadata = dict((written or {}).get("metadata") or {})
        self.cells = executed_cells(written["cells"] if written else None, cells)
        self.runs = [c for c in self.cells if c.status == "not run"]  # in the order they run
        # The notebook as written is always kept: the outputs get what the file cap leaves.
        sources = sum(len(c.serialized or dumps(c.to_json())) + 256 for c in self.cells)
        self.output_room = max(bounds.notebook_bytes - sources - 4096, 0)
        self.output_bytes = 0
        self.full = False
        self.state = "running"
        self._current: Cell | None = None
        self._clear_pending = False
        self._displays: dict[str, list[tuple[Cell, dict[str, Any]]]] = {}
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._dirty = True
        self._paused = 0
        self._log = f"logs/rank-{rank}.log"
        # An output that belongs elsewhere than the cell (an ipywidgets Output's): taken there.
        self.divert: Callable[[dict[str, Any]], bool] = lambda output: False
        self.divert_clear: Callable[[], bool] = lambda: False
        self._file = NotebookFile(job, notebook_name(rank), self.render, lambda: self._dirty)

    # --- the runner's side ----------------------------------------------------------------
    def start(self) -> None:
        self._file.start()

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
            cell.serialized = dumps(cell.to_json())
            self._current = None
            self._dirty = True
        self._file.soon()

    def close(self, state: str) -> None:
        """The last write: ``state`` is ``completed``, ``failed`` or ``stopped``."""
        self._file.stop()
        with self._lock:
            self.state = state
            if self._current is not None:  # stopped inside a cell
                self._current.status = state
            self._current = None
            self._dirty = True
        self._file.write()

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
            if not isinstance(last, Stream) or last.name != name:
                last = Stream(name)
                if not self._take(len(name) + 64):
                    return
                cell.outputs.append(last)
            if last.cut:
                return
            size = text_size(text)
            fits_output = last.size + size <= self.output_cap
            if fits_output and self._take(size):
                last.chunks.append(text)
                last.size += size
                return
            if fits_output:
                return  # the file is full; _take said so once
            room = self.output_cap - last.size
            piece = text.encode("utf-8", "replace")[: max(room, 0)].decode("utf-8", "ignore")
            while piece and text_size(piece) > room:  # escapes take room of their own
                piece = piece[: len(piece) - (text_size(piece) - room)]
            if piece and self._take(text_size(piece)):
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
    def _target(self) -> Cell | None:
        """The running cell, about to take an output (None: outside cells, or paused)."""
        cell = self._current
        if cell is None or self._paused:
            return None
        if self._clear_pending:
            self._clear(cell)
        self._dirty = True
        return cell

    def _clear(self, cell: Cell) -> None:
        self._clear_pending = False
        self.output_bytes -= sum(output_size(o) for o in cell.outputs)
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
                marker(
                    f"the notebook reached its {limits.size_text(self.output_room)} of outputs; "
                    f"further outputs are in {self._log} only"
                )
            )
        return False

    def _add(self, output: dict[str, Any]) -> bool:
        if os.getpid() != self._pid:
            return False
        text = dumps(output)
        size = len(text.encode())
        if size > self.output_cap:
            kinds = ", ".join(output.get("data", {})) or output["output_type"]
            output = marker(
                f"an output of {limits.size_text(size)} ({kinds}) is over the "
                f"{limits.size_text(self.output_cap)} an output may hold; left out"
            )
            size = len(dumps(output).encode())
        with self._lock:
            cell = self._target()
            if cell is None or not self._take(size):
                return False
            cell.outputs.append(output)
            return True

    def cells_of(self, output: dict[str, Any]) -> Cell:
        return next(c for c in self.cells if any(o is output for o in c.outputs))

    def _update(self, display_id: str, output: dict[str, Any]) -> None:
        """``update_display``: the outputs shown with ``display_id`` take the new data (in
        place: nbformat keeps no display ids on disk)."""
        with self._lock:
            for cell, old in self._displays.get(display_id, []):
                grown = output_size(output) - output_size(old)
                if output_size(output) > self.output_cap or not self._take(max(grown, 0)):
                    continue
                self.output_bytes += min(grown, 0)
                old.update(data=output["data"], metadata=output["metadata"])
                if cell.serialized is not None:
                    cell.serialized = dumps(cell.to_json())
                self._dirty = True

    # --- the file --------------------------------------------------------------------------------
    def render(self) -> bytes:
        with self._lock:
            cells = [c.serialized or dumps(c.to_json()) for c in self.cells]
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
            f'\n ],\n "metadata": {dumps(metadata)},\n "nbformat": 4,\n'
            f' "nbformat_minor": {NBFORMAT_MINOR}\n}}\n'
        )
        return (head + ",\n  ".join(cells) + tail).encode("utf-8", "replace")


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
