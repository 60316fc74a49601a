"""The ipywidgets job view: its pure view model, the SVG chart, and updates from a job dir."""

from __future__ import annotations

import getpass
import re
import time
from collections import deque

from tests.server.conftest import insert_job
from trainhub.jobs.directory import JobDir, append_jsonl
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState
from trainhub.widgets import (
    JobView,
    JobWidget,
    cells_done,
    header_html,
    last_lines,
    log_html,
    scalar_points,
    svg_chart,
)


def test_cells_done_counts_rank_zero_of_the_latest_attempt() -> None:
    events = [
        {"type": "cell", "rank": 0, "attempt": 0, "cell_index": 1, "phase": "end"},
        {"type": "cell", "rank": 1, "attempt": 0, "cell_index": 2, "phase": "end"},
        {"type": "cell", "rank": 0, "attempt": 0, "cell_index": 2, "phase": "start"},
        {"type": "state", "state": "running"},
    ]
    assert cells_done(events) == 1
    events.append({"type": "cell", "rank": 0, "attempt": 1, "cell_index": 1, "phase": "start"})
    assert cells_done(events) == 0  # the retry starts again
    events.append({"type": "cell", "rank": 0, "attempt": 1, "cell_index": 1, "phase": "end"})
    events.append(
        {"type": "cell", "rank": 0, "attempt": 1, "cell_index": 2, "phase": "end", "ok": False}
    )
    assert cells_done(events) == 1  # the cell that raised is not done


def test_view_progress_and_colour() -> None:
    view = JobView("j-1", "j", JobState.RUNNING, cells_done=1, cells_total=4)
    assert view.progress == 0.25 and view.colour == "#1f77b4"
    assert JobView("j-1", "j", JobState.RUNNING).progress is None  # a script: no cells
    assert JobView("j-1", "j", JobState.FAILED).colour == "#d62728"


def test_scalar_points_keep_the_latest_value_per_step() -> None:
    records = [
        {"step": 2, "name": "loss", "value": 0.5},
        {"step": 1, "name": "loss", "value": 0.9},
        {"step": 1, "name": "acc", "value": 0.1},
        {"step": 2, "name": "loss", "value": 0.4},
    ]
    assert scalar_points(records) == [(1.0, 0.9), (2.0, 0.4)]


def test_svg_chart_places_points_and_escapes() -> None:
    svg = svg_chart([(0, 2.0), (10, 1.0), (20, 0.0)], label="<b>loss</b>", width=112, height=112)
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    # 6 px padding: x spans 6..106, the largest value is drawn at the top (y=6).
    assert points == ["6.0,6.0", "56.0,56.0", "106.0,106.0"]
    assert "<b>" not in svg and "&lt;b&gt;loss&lt;/b&gt;" in svg
    assert "no loss yet" in svg_chart([])
    flat = svg_chart([(0, 1.0), (1, 1.0)])  # a constant series must not divide by zero
    assert "polyline" in flat


def test_log_and_header_render_as_text() -> None:
    tail: deque[str] = deque(maxlen=2)
    pending = last_lines(tail, "", "a\n<script>x</script>\nc\npart")
    assert list(tail) == ["<script>x</script>", "c"] and pending == "part"
    assert "<script>" not in log_html(list(tail)) and "&lt;script&gt;" in log_html(list(tail))
    view = JobView("id", "<img src=x>", JobState.QUEUED, wait_reason="needs <2> slots")
    assert "<img" not in header_html(view) and "needs &lt;2&gt; slots" in header_html(view)


def test_widget_follows_a_job_directory(server_service: JobService) -> None:
    # The notebook API acts as the account running the kernel.
    record = insert_job(server_service, name="widgeted", user=getpass.getuser())
    jobdir = JobDir(record.job_dir)
    (jobdir.bundle / "cells.json").write_text(
        '[{"cell_index": null, "injected": true, "source": "lr = 1"},'
        ' {"cell_index": 1, "source": "a"}, {"cell_index": 2, "source": "b"}]'
    )
    widget = JobWidget(record.id, service=server_service, start=False)
    assert widget.view.state == JobState.RUNNING and widget.view.cells_total == 2
    assert widget.progress.value == 0.0 and "no loss yet" in widget.chart.value

    jobdir.emit("cell", rank=0, attempt=0, cell_index=1, phase="end")
    with open(jobdir.rank_log(0), "a") as f:
        f.writelines(f"line {i}\n" for i in range(30))
        f.write("<b>not bold</b>\n")
    for step, loss in enumerate((3.0, 2.0, 1.0)):
        append_jsonl(
            jobdir.metrics / "scalars.jsonl",
            {"time": 0, "step": step, "name": "loss", "value": loss, "rank": 0, "attempt": 0},
        )
    view = widget.update()
    assert view.cells_done == 1 and widget.progress.value == 0.5
    assert view.log_lines == [f"line {i}" for i in range(11, 30)] + ["<b>not bold</b>"]
    assert "&lt;b&gt;not bold&lt;/b&gt;" in widget.log_view.value
    assert view.loss == [(0.0, 3.0), (1.0, 2.0), (2.0, 1.0)]
    assert widget.chart.value.count(",") == 3 and not widget.cancel_button.disabled

    widget.cancel()  # the real path: the supervisor is signalled, reconcile finishes the job
    assert server_service.record(record.id).cancel_requested
    deadline = time.monotonic() + 10
    while server_service.record(record.id).state != JobState.CANCELLED:
        assert time.monotonic() < deadline, "the cancelled job never finished"
        time.sleep(0.1)
        server_service.reconcile()  # what the server does every few seconds
    assert widget.update().state == JobState.CANCELLED and widget.cancel_button.disabled
    assert widget.cancel_button.layout.display == "none"  # an ended job offers no Cancel
    widget.close()


def test_widget_of_a_finished_real_job(session_service: JobService, finished_job: str) -> None:
    widget = JobWidget(finished_job, service=session_service)
    assert widget._thread is None  # nothing left to follow
    assert widget.view.state == JobState.SUCCEEDED
    assert widget.view.cells_done == widget.view.cells_total == 2
    assert widget.progress.value == 1.0 and widget.progress.bar_style == "success"
    assert any("hello from the job" in line for line in widget.view.log_lines)
    assert widget.view.loss == [(0.0, 1.5)]
    widget.close()
