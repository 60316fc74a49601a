"""An ipywidgets view of one job: state, cell progress, the last log lines, a live loss chart.

    job = trainhub.submit("train.ipynb")
    job          # in a notebook, displays JobWidget(job)

The view model (what to show) is built by pure functions from events, metrics and log text;
the widget only renders it, refreshing on a background thread about once a second until the
job has ended. Log lines and names are always escaped: they render as text, never as HTML.
"""

from __future__ import annotations

import html
import json
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from trainhub.jobs.logs import LogFollower
from trainhub.jobs.states import JobState
from trainhub.rank.redraws import latest_redraw

if TYPE_CHECKING:
    from trainhub.api import Job
    from trainhub.jobs.service import JobService

LOG_LINES = 20
REFRESH_S = 1.0
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 320, 120, 6
STATE_COLOURS = {
    JobState.QUEUED: "#8a8a8a",
    JobState.STARTING: "#1f77b4",
    JobState.RUNNING: "#1f77b4",
    JobState.RETRYING: "#ff7f0e",
    JobState.SUCCEEDED: "#2ca02c",
    JobState.FAILED: "#d62728",
    JobState.CANCELLED: "#7f7f7f",
    JobState.SUSPENDED: "#9467bd",
}


# --- view model (pure) -----------------------------------------------------------------------


@dataclass
class JobView:
    job_id: str
    name: str
    state: JobState
    cells_done: int = 0
    cells_total: int | None = None
    wait_reason: str | None = None
    verdict: str | None = None
    log_lines: list[str] = field(default_factory=list)
    loss: list[tuple[float, float]] = field(default_factory=list)

    @property
    def colour(self) -> str:
        return STATE_COLOURS[self.state]

    @property
    def progress(self) -> float | None:
        """Share of the selected cells finished on rank 0, or None when unknown (scripts)."""
        if not self.cells_total:
            return None
        return min(self.cells_done / self.cells_total, 1.0)


def cells_done(events: Iterable[dict[str, Any]]) -> int:
    """Cells rank 0 finished without an error in its latest attempt (a retry starts the count
    again; a cell that raised is not done)."""
    attempt, done = -1, set[int]()
    for event in events:
        if event.get("type") != "cell" or event.get("rank", 0) != 0:
            continue
        if event.get("attempt", 0) > attempt:
            attempt, done = event.get("attempt", 0), set()
        ended = event.get("phase") == "end" and event.get("ok", True) is not False
        if event.get("attempt", 0) == attempt and ended:
            done.add(int(event.get("cell_index", -1)))
    return len(done)


def cells_total(bundle_dir: Path) -> int | None:
    """How many notebook cells the job runs (injected parameters not counted)."""
    try:
        cells = json.loads((bundle_dir / "cells.json").read_text())
    except (FileNotFoundError, ValueError):
        return None
    return sum(1 for c in cells if not c.get("injected"))


def scalar_points(
    records: Iterable[dict[str, Any]], name: str = "loss"
) -> list[tuple[float, float]]:
    """(step, value) of one scalar, latest value per step, in step order."""
    points: dict[float, float] = {}
    for record in records:
        if record.get("name") == name:
            points[float(record["step"])] = float(record["value"])
    return sorted(points.items())


def last_lines(tail: deque[str], pending: str, text: str) -> str:
    """Append ``text`` to the log ``tail``; returns the unfinished last line to keep."""
    *lines, rest = (pending + text).split("\n")
    tail.extend(map(latest_redraw, lines))  # a progress bar: its latest redraw only
    return latest_redraw(rest)


def svg_chart(
    points: Sequence[tuple[float, float]],
    *,
    label: str = "loss",
    width: int = CHART_WIDTH,
    height: int = CHART_HEIGHT,
) -> str:
    """An inline SVG line chart of ``points``; every text in it is escaped."""
    caption = html.escape(label)
    if not points:
        return (
            f'<svg width="{width}" height="{height}" role="img" aria-label="{caption}">'
            f'<text x="{CHART_PAD}" y="{height // 2}" fill="#888">no {caption} yet</text></svg>'
        )
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    span_x, span_y = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    inner_w, inner_h = width - 2 * CHART_PAD, height - 2 * CHART_PAD

    def place(x: float, y: float) -> str:
        px = CHART_PAD + (x - x0) / span_x * inner_w
        py = CHART_PAD + (1 - (y - y0) / span_y) * inner_h  # larger values higher up
        return f"{px:.1f},{py:.1f}"

    polyline = " ".join(place(x, y) for x, y in points)
    last = html.escape(f"{label} {ys[-1]:.4g} at step {xs[-1]:g}")
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="{caption}">'
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{polyline}"/>'
        f'<text x="{width - CHART_PAD}" y="{CHART_PAD + 10}" text-anchor="end" '
        f'font-size="11" fill="#444">{last}</text></svg>'
    )


def header_html(view: JobView) -> str:
    text = f"{view.name} ({view.job_id})"
    waiting = view.state in (JobState.QUEUED, JobState.STARTING)
    extra = view.wait_reason if waiting else view.verdict
    detail = f' <span style="color:#666">{html.escape(extra)}</span>' if extra else ""
    return (
        f'<b>{html.escape(text)}</b> <span style="color:{view.colour};font-weight:bold">'
        f"{html.escape(view.state.value)}</span>{detail}"
    )


def chart_html(view: JobView) -> str:
    """The loss chart; nothing once the job has ended without logging a loss (no "no loss
    yet" left standing)."""
    if not view.loss and view.state.terminal:
        return ""
    return svg_chart(view.loss)


def can_cancel(view: JobView) -> bool:
    """Cancel is offered only while the job has not ended."""
    return not view.state.terminal


def log_html(lines: Sequence[str]) -> str:
    body = html.escape("\n".join(lines)) or "(no output yet)"
    return f'<pre style="max-height:22em;overflow:auto;margin:0">{body}</pre>'


# --- the widget ---------------------------------------------------------------------------------


class JobWidget(widgets.VBox):
    """Displays a job and keeps itself up to date until the job ends."""

    def __init__(self, job: Job | str, *, service: JobService | None = None, start: bool = True):
        from trainhub.backends.factory import shared_service

        self.job_id = job if isinstance(job, str) else job.id
        self.service = service or shared_service()
        self._events_offset = self._metrics_offset = 0
        # Whole lines as they come; the last one without its newline once the job has ended.
        self._log = LogFollower(self.service.log_reader(self.job_id, rank=0), hold_partial_s=None)
        self._events: list[dict[str, Any]] = []
        self._scalars: list[dict[str, Any]] = []
        self._log_tail: deque[str] = deque(maxlen=LOG_LINES)
        self._log_pending = ""
        self._cells_total: int | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

        self.header = widgets.HTML()
        self.progress = widgets.FloatProgress(min=0.0, max=1.0, description="cells")
        self.chart = widgets.HTML()
        self.log_view = widgets.HTML()
        self.cancel_button = widgets.Button(
            description="Cancel", button_style="danger", icon="stop"
        )
        self.cancel_button.on_click(lambda _: self.cancel())
        self.view = self.refresh_view()
        self.render(self.view)
        super().__init__(
            [
                widgets.HBox([self.header, self.cancel_button]),
                self.progress,
                self.chart,
                self.log_view,
            ]
        )
        self._thread: threading.Thread | None = None
        if start and not self.view.state.terminal:
            self._thread = threading.Thread(
                target=self._follow, name=f"trainhub-{self.job_id}", daemon=True
            )
            self._thread.start()

    def refresh_view(self) -> JobView:
        """Read what is new in the job directory and build the view model."""
        with self._lock:
            described = self.service.describe(self.job_id)
            svc = self.service
            events, self._events_offset = svc.events(self.job_id, offset=self._events_offset)
            self._events.extend(events)
            scalars, self._metrics_offset = svc.metrics(
                self.job_id, "scalars", offset=self._metrics_offset
            )
            self._scalars.extend(scalars)
            for chunk in self._log.drain(final=described.state.terminal):
                self._log_pending = last_lines(self._log_tail, self._log_pending, chunk.text)
            if self._cells_total is None:
                self._cells_total = cells_total(Path(described.job_dir) / "bundle")
            lines = list(self._log_tail)
            if self._log_pending and described.state.terminal:
                lines.append(self._log_pending)
            return JobView(
                job_id=described.id,
                name=described.name,
                state=described.state,
                cells_done=cells_done(self._events),
                cells_total=self._cells_total,
                wait_reason=described.wait_reason,
                verdict=described.verdict.reason if described.verdict else None,
                log_lines=lines[-LOG_LINES:],
                loss=scalar_points(self._scalars),
            )

    def render(self, view: JobView) -> None:
        self.header.value = header_html(view)
        progress = view.progress
        self.progress.value = progress if progress is not None else 0.0
        self.progress.description = (
            f"{view.cells_done}/{view.cells_total} cells" if view.cells_total else ""
        )
        self.progress.bar_style = {"succeeded": "success", "failed": "danger"}.get(
            view.state.value, ""
        )
        self.chart.value = chart_html(view)
        self.chart.layout.display = None if self.chart.value else "none"
        self.log_view.value = log_html(view.log_lines)
        self.cancel_button.disabled = not can_cancel(view)
        self.cancel_button.layout.display = None if can_cancel(view) else "none"

    def update(self) -> JobView:
        self.view = self.refresh_view()
        self.render(self.view)
        return self.view

    def cancel(self) -> None:
        self.service.cancel(self.job_id, reason="cancelled from the job widget")
        self.update()

    def _follow(self) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                if self.update().state.terminal:
                    return
            except Exception as error:  # keep the last view; say why it stopped updating
                self.log_view.value += f"<p>{html.escape(f'stopped updating: {error}')}</p>"
                return

    def close(self) -> None:
        self._stop.set()
        super().close()
