"""How an attempt's end is told, by the rules both backends apply (trainhub/lifecycle/): the
state a verdict ends a job in, a time limit's reason, and the executed notebooks their ranks
left unfinished, closed with the verdict, and the executed notebooks handed to nbformat once
the job has ended."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import nbformat

from trainhub.bundle.schema import BundleCell
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import Verdict
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.notebooks import close_notebooks, finish_notebooks
from trainhub.lifecycle.verdict import RunningCell, end_state, time_limit_reason
from trainhub.rank.nbcapture import NotebookCapture


def test_a_verdict_ends_the_job_failed_unless_it_is_a_stop() -> None:
    assert end_state(None) == JobState.SUCCEEDED
    for stop in (FailureClass.CANCELLED, FailureClass.STOPPED_EARLY):
        assert end_state(Verdict(failure_class=stop, reason="r")) == JobState.CANCELLED
    for failure in (FailureClass.CODE, FailureClass.INFRASTRUCTURE, FailureClass.ENVIRONMENT):
        assert end_state(Verdict(failure_class=failure, reason="r")) == JobState.FAILED


def test_a_time_limit_says_how_long_the_job_ran_and_which_cell_it_stopped() -> None:
    running = {1: RunningCell(4, 100.0), 0: RunningCell(1, 96.2)}
    assert time_limit_reason(timedelta(seconds=4), running, 100.0) == (
        "ran longer than its max runtime (0:00:04); cell 2 had been running for 3.8 s"
    )
    assert time_limit_reason(timedelta(hours=2), {}, 100.0) == (
        "ran longer than its max runtime (2:00:00)"
    )


def executed(jobdir: JobDir, rank: int, attempt: int, state: str, statuses: list[str]) -> Path:
    name = "notebook.ipynb" if rank == 0 else f"notebook-rank-{rank}.ipynb"
    cells = [
        {"cell_type": "code", "source": "", "metadata": {"trainhub": {"status": s}}}
        for s in statuses
    ]
    meta = {"trainhub": {"rank": rank, "attempt": attempt, "state": state}}
    path = jobdir.root / name
    path.write_text(json.dumps({"cells": cells, "metadata": meta}))
    return path


def read(path: Path) -> tuple[dict[str, Any], list[str]]:
    doc = json.loads(path.read_text())
    return doc["metadata"]["trainhub"], [c["metadata"]["trainhub"]["status"] for c in doc["cells"]]


def spec(**fields: Any) -> JobSpec:
    return JobSpec.model_validate({"name": "n", "source": {"path": "nb.ipynb"}, **fields})


CRASH = Verdict(failure_class=FailureClass.CODE, reason="rank 0 crashed with SIGSEGV in cell 2")


def test_a_notebook_its_rank_left_running_or_stopped_is_closed_failed_by_a_failure(
    tmp_path: Path,
) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    crashed = executed(jobdir, 0, 1, "running", ["ok", "running", "not run"])
    close_notebooks(jobdir, spec(), 1, CRASH)
    meta, statuses = read(crashed)
    assert (meta["state"], meta["ended"]) == ("failed", CRASH.reason)
    assert statuses == ["ok", "error", "not run"]
    # Its own SIGTERM: the rank closed it "stopped", which was no person's stop.
    own = executed(jobdir, 0, 1, "stopped", ["ok", "stopped"])
    close_notebooks(jobdir, spec(), 1, CRASH)
    assert read(own)[0]["state"] == "failed" and read(own)[1] == ["ok", "error"]


def test_a_stop_leaves_notebooks_stopped_and_a_closed_or_earlier_one_is_left_alone(
    tmp_path: Path,
) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    limit = Verdict(failure_class=FailureClass.CANCELLED, reason="ran longer than ...")
    running = executed(jobdir, 0, 0, "running", ["ok", "running"])
    close_notebooks(jobdir, spec(), 0, limit)
    meta, statuses = read(running)
    assert (meta["state"], meta["ended"], statuses) == ("stopped", limit.reason, ["ok", "stopped"])
    for state in ("completed", "failed"):  # its rank said how it ended
        done = executed(jobdir, 0, 0, state, ["ok", "error"])
        close_notebooks(jobdir, spec(), 0, CRASH)
        assert read(done)[0] == {"rank": 0, "attempt": 0, "state": state}
    earlier = executed(jobdir, 0, 0, "running", ["running"])
    close_notebooks(jobdir, spec(), 1, CRASH)  # the next attempt's verdict
    assert read(earlier)[0]["state"] == "running"
    # A suspension stops, never fails.
    close_notebooks(jobdir, spec(), 0, CRASH, suspended=True)
    assert read(earlier)[0]["state"] == "stopped"


def test_the_notebooks_closed_are_those_of_the_ranks_the_spec_keeps_one_for(
    tmp_path: Path,
) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    two = {"resources": {"processes_per_worker": 2}}
    paths = [executed(jobdir, r, 0, "running", ["running"]) for r in (0, 1)]
    close_notebooks(jobdir, spec(**two), 0, CRASH)
    assert [read(p)[0]["state"] for p in paths] == ["failed", "running"]
    close_notebooks(jobdir, spec(**two, notebook_ranks="all"), 0, CRASH)
    assert read(paths[1])[0]["state"] == "failed"


def test_an_ended_jobs_notebooks_are_written_by_nbformat_and_an_invalid_one_is_left(
    tmp_path: Path,
) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    written = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Two\nlines"), nbformat.v4.new_code_cell("1")]
    )
    run = [BundleCell(cell_index=1, source="1")]
    capture = NotebookCapture(jobdir, run, rank=0, attempt=0, written=written)
    capture.start()
    capture.start_cell(0, 1)
    capture.stream("stdout", "one\ntwo\n")
    capture.result({"text/plain": "1"})
    capture.end_cell(True, 0.1)
    capture.close("completed")
    path = jobdir.root / "notebook.ipynb"
    as_ran = json.loads(path.read_text())
    invalid = executed(jobdir, 1, 0, "completed", ["ok"])  # no nbformat version, no ids
    before = invalid.read_bytes()

    finish_notebooks(jobdir, spec(resources={"processes_per_worker": 2}, notebook_ranks="all"))
    node = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(node)
    assert path.read_text() == nbformat.v4.writes(node, split_lines=False)  # nbformat's form
    assert json.loads(path.read_text()) == as_ran  # what the rank wrote, strings kept whole
    assert invalid.read_bytes() == before
    (event,) = [e for e in jobdir.iter_events() if e["type"] == "notebook"]
    assert event["rank"] == 1 and "not a valid notebook" in event["error"]
