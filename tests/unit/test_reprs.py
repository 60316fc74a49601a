"""How the Python API's objects and the job widget show in a notebook: readable text reprs,
escaped HTML tables, and a widget that stops offering Cancel and "no loss yet" once the job
has ended."""

from __future__ import annotations

from pathlib import Path

from trainhub.api import Job, Jobs
from trainhub.checkpoint.layout import CheckpointFile, CheckpointInfo
from trainhub.jobs.models import JobSummary
from trainhub.jobs.states import JobState
from trainhub.reprs import CheckpointList, size, text_table
from trainhub.widgets import JobView, can_cancel, chart_html


def checkpoint(step: int, **metrics: float) -> CheckpointInfo:
    return CheckpointInfo(
        step=step,
        time=1_700_000_000.0 + step,
        metrics=metrics,
        files=[CheckpointFile(name="state.pt", bytes=1536, sha256="0" * 64)],
        world_size=1,
        bytes=1536,
        path=Path(f"/jobs/j1/checkpoints/{step}"),
    )


def test_sizes_and_text_tables() -> None:
    assert size(512) == "512 B" and size(1536) == "1.5 KiB" and size(300 * 2**20) == "300 MiB"
    assert text_table(["a", "long"], [[1, 2], ["three", 4]]).splitlines() == [
        "a      long",
        "1      2",
        "three  4",
    ]


def test_a_checkpoint_and_a_list_of_them_read_as_a_table() -> None:
    one = checkpoint(19, val_accuracy=0.93456, loss=0.5)
    assert repr(one).startswith("<Checkpoint step 19, 1.5 KiB, loss=0.5, val_accuracy=0.9346")
    listed = CheckpointList([checkpoint(9, loss=1.0), one])
    lines = repr(listed).splitlines()
    assert lines[0].split() == ["step", "saved", "size", "metrics", "files"]
    assert lines[1].startswith("9 ") and "loss=1" in lines[1] and lines[1].endswith("state.pt")
    assert len(lines) == 3
    html = listed._repr_html_()
    assert html.count("<tr>") == 3 and "<caption" in html and "2 checkpoints" in html
    assert repr(CheckpointList()) == "no checkpoints"
    assert isinstance(listed, list) and listed[1].step == 19  # still a list of checkpoints


def test_html_escapes_what_users_named() -> None:
    c = checkpoint(1)
    c.files[0].name = "<script>x</script>.pt"
    assert "<script>" not in CheckpointList([c])._repr_html_()
    assert "&lt;script&gt;" in c._repr_html_()


def summary(name: str, state: JobState, **fields: object) -> JobSummary:
    return JobSummary(
        id=f"id-{name}",
        name=name,
        user="ana",
        state=state,
        gpus=0,
        created_at=1_700_000_000.0,
        priority="normal",
        world_size=1,
        source="train.ipynb",
        **fields,
    )


def test_a_page_of_jobs_reads_as_a_table() -> None:
    page = Jobs(
        jobs=[
            summary("<b>bold</b>", JobState.QUEUED, wait_reason="needs 1 CPU slot, 0 free"),
            summary("done", JobState.SUCCEEDED),
        ],
        total=5,
    )
    text = repr(page)
    assert "needs 1 CPU slot, 0 free" in text and text.endswith("(2 of 5 jobs)")
    assert text.splitlines()[0].split() == ["id", "name", "state", "submitted", "source", "detail"]
    html = page._repr_html_()
    assert "2 of 5 jobs" in html and "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold" not in html
    assert repr(Jobs(jobs=[], total=0)) == "no jobs"


def test_a_job_names_itself() -> None:
    assert repr(Job("j1")) == "<trainhub.Job j1>"


def test_the_widget_drops_cancel_and_the_empty_chart_once_the_job_has_ended() -> None:
    running = JobView(job_id="j1", name="x", state=JobState.RUNNING)
    assert can_cancel(running) and "no loss yet" in chart_html(running)
    for state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        ended = JobView(job_id="j1", name="x", state=state)
        assert not can_cancel(ended) and chart_html(ended) == ""
    with_loss = JobView(job_id="j1", name="x", state=JobState.SUCCEEDED, loss=[(0.0, 1.0)])
    assert "<polyline" in chart_html(with_loss)  # a finished job's curve stays
