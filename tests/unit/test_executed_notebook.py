"""The executed notebook's spec field and capture, without a rank: notebook_ranks refused naming
the field (never a server error), clear_output and display updates as a kernel's output area
does them."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from trainhub.bundle.schema import BundleCell
from trainhub.jobs.directory import JobDir
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.rank.nbcapture import NotebookCapture

BASE = {"name": "t", "source": {"path": "nb.ipynb"}, "resources": {"processes_per_worker": 2}}


@pytest.mark.parametrize(
    ("ranks", "message"),
    [
        ([2], "the job has no rank 2; its ranks are 0 to 1"),
        ([-1], "-1 is not a rank; ranks are numbered from 0"),
        ([0, 0], "lists a rank twice"),
        ("some", "give a list of rank numbers (e.g. [0, 3]), or 'all'"),
        ([True], "give a list of rank numbers (e.g. [0, 3]), or 'all'"),
    ],
)
def test_notebook_ranks_are_refused_naming_the_field(ranks: object, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec({**BASE, "notebook_ranks": ranks})
    assert [(e.field, e.message) for e in refused.value.errors] == [("notebook_ranks", message)]


def test_notebook_ranks_next_to_a_refused_resources_field_is_still_a_sentence() -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec({**BASE, "resources": {"workers": "x"}, "notebook_ranks": [-3, 99]})
    assert [e.field for e in refused.value.errors] == ["resources.workers", "notebook_ranks"]


def test_notebook_ranks_default_to_rank_0() -> None:
    assert parse_spec(BASE).notebook_ranks == [0]
    assert parse_spec({**BASE, "notebook_ranks": "all"}).notebook_ranks == "all"
    assert parse_spec({**BASE, "notebook_ranks": []}).notebook_ranks == []


def test_clear_output_and_display_updates(tmp_path: Path) -> None:
    job = JobDir(tmp_path / "job").create()
    cells = [BundleCell(cell_index=0, source="a"), BundleCell(cell_index=2, source="b")]
    capture = NotebookCapture(job, cells, rank=0, attempt=0)
    capture.start()
    capture.start_cell(0, 1)
    capture.display({"text/plain": "progress 1"}, transient={"display_id": "bar"})
    capture.stream("stdout", "old\n")
    capture.clear(wait=True)  # cleared when the next output comes
    capture.stream("stdout", "new\n")
    capture.end_cell(True, 0.1)
    capture.start_cell(1, 2)
    capture.display({"text/plain": "progress 2"}, transient={"display_id": "bar"}, update=True)
    capture.result({"text/plain": "42"})
    capture.end_cell(True, 0.1)
    capture.close("completed")
    nb = nbformat.reads((job.root / "notebook.ipynb").read_text(), as_version=4)
    nbformat.validate(nb)
    assert nb.cells[0].outputs == [{"output_type": "stream", "name": "stdout", "text": "new\n"}]
    assert nb.cells[1].outputs == [
        {
            "output_type": "execute_result",
            "data": {"text/plain": "42"},
            "execution_count": 2,
            "metadata": {},
        }
    ]
    assert [c.id for c in nb.cells] == ["trainhub-cell-0", "trainhub-cell-2"]
    assert json.loads((job.root / "notebook.ipynb").read_text())["metadata"]["trainhub"] == {
        "rank": 0,
        "attempt": 0,
        "state": "completed",
        "truncated": False,
    }
