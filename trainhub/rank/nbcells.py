"""The executed notebook's cells as nbformat 4 JSON, built by hand (standard library only:
importing nbformat costs a rank start about a second): each cell of the notebook as written
with, for a code cell the run chose, what its run put there; display data as nbformat stores
it; the sizes the caps count (:mod:`trainhub.rank.nbcapture`), JSON escapes included."""

from __future__ import annotations

import base64
import json
from typing import Any

from trainhub.bundle.schema import BundleCell

_TEXT_PREFIXES = ("text/",)
_JSON_MIMES_SUFFIX = "json"


def marker(text: str) -> dict[str, Any]:
    """An output saying what trainhub left out, as a ``[trainhub: ...]`` line on stderr."""
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


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class Stream:
    """Consecutive writes to one stream, kept as chunks (joined when written out)."""

    def __init__(self, name: str):
        self.name = name
        self.chunks: list[str] = []
        self.size = 0
        self.cut = False

    def to_json(self) -> dict[str, Any]:
        return {"output_type": "stream", "name": self.name, "text": "".join(self.chunks)}


class Cell:
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
        self.outputs: list[dict[str, Any] | Stream] = []
        self.execution_count: int | None = None
        self.status = "not run" if run is not None else "skipped"
        self.seconds: float | None = None
        self.serialized: str | None = None  # set once the cell is final
        if run is None:  # as written, or skipped: final from the start
            self.serialized = dumps(self.to_json())

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
            "outputs": [o.to_json() if isinstance(o, Stream) else o for o in self.outputs],
            "source": self.source,
        }


def executed_cells(written: list[dict[str, Any]] | None, runs: list[BundleCell]) -> list[Cell]:
    """The executed notebook's cells: the notebook as written, each run cell in its place,
    the injected parameters right before the cell that runs after them."""
    if written is None:  # a bundle without the notebook: the cells that run, alone
        return [Cell(run.cell_index, None, run) for run in runs]
    by_index = {run.cell_index: run for run in runs if run.cell_index is not None}
    injected = [run for run in runs if run.cell_index is None]
    after = next((k for k, run in enumerate(runs) if run.cell_index is None), len(runs))
    before = runs[after + 1].cell_index if after + 1 < len(runs) else None
    cells = []
    for index, cell in enumerate(written):
        if injected and index == before:
            cells.append(Cell(None, None, injected.pop()))
        cells.append(Cell(index, _with_id(cell, index), by_index.get(index)))
    cells += [Cell(None, None, run) for run in injected]  # nothing runs after them
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


def text_size(text: str) -> int:
    """The bytes ``text`` takes in the file (JSON escapes included)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "replace")) - 2


def output_size(output: dict[str, Any] | Stream) -> int:
    return output.size if isinstance(output, Stream) else len(dumps(output).encode())
