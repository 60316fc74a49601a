"""How the Python API's objects show in a notebook: a short text ``repr`` and an HTML table
(``_repr_html_``), built by pure functions from rows. Every value is escaped: names and paths
render as text, never as HTML. Standard library only."""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainhub.checkpoint.layout import CheckpointInfo
    from trainhub.jobs.models import JobSummary

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as the UI says them)."""
    unit = 0
    while n >= 1024 and unit < len(_UNITS) - 1:
        n /= 1024
        unit += 1
    return (
        f"{int(n)} B"
        if unit == 0
        else f"{n:.1f} {_UNITS[unit]}"
        if n < 10
        else f"{n:.0f} {_UNITS[unit]}"
    )


def number(value: Any) -> str:
    """A metric as people read it: 4 significant digits for floats."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "—"


def text_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, one line per row."""
    cells = [[str(h) for h in headers], *([str(c) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "") -> str:
    """An HTML table; every cell and the caption escaped."""
    esc = html.escape
    head = "".join(f"<th style='text-align:left'>{esc(str(h))}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{esc(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    cap = f"<caption style='text-align:left'>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --- checkpoints --------------------------------------------------------------------------------


def _metrics(c: CheckpointInfo) -> str:
    return ", ".join(f"{k}={number(v)}" for k, v in sorted(c.metrics.items())) or "—"


CHECKPOINT_HEADERS = ("step", "saved", "size", "metrics", "files")


def checkpoint_row(c: CheckpointInfo) -> tuple[Any, ...]:
    return (c.step, when(c.time), size(c.bytes), _metrics(c), ", ".join(f.name for f in c.files))


def checkpoint_repr(c: CheckpointInfo) -> str:
    return f"<Checkpoint step {c.step}, {size(c.bytes)}, {_metrics(c)}, saved {when(c.time)}>"


class CheckpointList(list["CheckpointInfo"]):
    """``job.checkpoints()``: a list of checkpoints that shows as a table."""

    def __repr__(self) -> str:
        if not self:
            return "no checkpoints"
        return text_table(CHECKPOINT_HEADERS, map(checkpoint_row, self))

    def _repr_html_(self) -> str:
        if not self:
            return "<p>no checkpoints</p>"
        count = f"{len(self)} checkpoint{'s' if len(self) != 1 else ''}"
        return html_table(CHECKPOINT_HEADERS, map(checkpoint_row, self), caption=count)


# --- jobs ----------------------------------------------------------------------------------------

JOB_HEADERS = ("id", "name", "state", "submitted", "source", "detail")


def job_row(j: JobSummary) -> tuple[Any, ...]:
    detail = j.wait_reason or (j.failure_class.value if j.failure_class else "")
    return (j.id, j.name, j.state.value, when(j.created_at), j.source, detail)


def jobs_repr(jobs: Sequence[JobSummary], total: int | None = None) -> str:
    if not jobs:
        return "no jobs"
    more = f"\n({len(jobs)} of {total} jobs)" if total is not None and total > len(jobs) else ""
    return text_table(JOB_HEADERS, map(job_row, jobs)) + more


def jobs_html(jobs: Sequence[JobSummary], total: int | None = None) -> str:
    if not jobs:
        return "<p>no jobs</p>"
    shown = len(jobs) if total is None else total
    caption = f"{len(jobs)} of {shown} jobs" if shown > len(jobs) else f"{len(jobs)} jobs"
    return html_table(JOB_HEADERS, map(job_row, jobs), caption=caption)
