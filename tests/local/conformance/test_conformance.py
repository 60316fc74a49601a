"""trainhub's conformance suite: nbclient's and papermill's documented behaviours (and where
trainhub deliberately differs), each a notebook in ``notebooks/`` whose metadata
``trainhub_conformance`` says what must come of it. Each runs as a real job through the local
backend, and the verdict, the cell, the log and the executed notebook are checked.

To add a case, add a notebook; the keys of ``trainhub_conformance``:

- ``about``: the behaviour, and whose it is (nbclient, papermill, issue 29).
- ``submit``: extra ``trainhub submit`` arguments (``--nproc 2``, ``-p lr=0.5``...).
- ``state``: the job's end state. ``verdict``: fields the verdict must have (a subset).
- ``reason``: text the verdict's reason contains.
- ``log``: texts the log (of ``log_rank``, default 0) contains.
- ``status``: each executed-notebook cell's ``metadata.trainhub.status`` (null: none, as
  for markdown and raw cells). ``first_output``: {cell position: its first output's text}.
- ``output_types``: {cell position: the ``output_type`` of each of its outputs, in order}.
- ``notebook``: {``state``: the executed notebook's ``metadata.trainhub.state``}.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.local.conftest import Trainhub

NOTEBOOKS = sorted((Path(__file__).parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_conformance(trainhub_env: Trainhub, path: Path) -> None:
    expect = json.loads(path.read_text())["metadata"]["trainhub_conformance"]
    shutil.copy(path, trainhub_env.workspace / path.name)
    job_id = trainhub_env.submit(path.name, *expect.get("submit", []))
    job = trainhub_env.wait(job_id)
    log = trainhub_env.logs(job_id, rank=expect.get("log_rank", 0))
    assert job["state"] == expect["state"], (job, log)
    verdict = job["verdict"] or {}
    assert {k: verdict.get(k) for k in expect.get("verdict", {})} == expect.get("verdict", {})
    assert expect.get("reason", "") in verdict.get("reason", "")
    for text in expect.get("log", []):
        assert text in log, log

    executed = trainhub_env.job_dir(job_id) / "notebook.ipynb"
    cells = json.loads(executed.read_text())["cells"] if executed.exists() else []
    if "state" in expect.get("notebook", {}):  # what the executed notebook says of the end
        assert (
            json.loads(executed.read_text())["metadata"]["trainhub"]["state"]
            == (expect["notebook"]["state"])
        )
    if "status" in expect:
        statuses = [c["metadata"].get("trainhub", {}).get("status") for c in cells]
        assert statuses == expect["status"]
    for position, text in expect.get("first_output", {}).items():
        assert cells[int(position)]["outputs"][0]["text"] == text
    for position, types in expect.get("output_types", {}).items():
        assert [o["output_type"] for o in cells[int(position)]["outputs"]] == types
