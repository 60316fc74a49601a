"""The usage report as text: a table for people, CSV for spreadsheets (JSON is the model's)."""

from __future__ import annotations

import csv
import io

from trainhub.usage.models import UsageGroup, UsageReport, utc_day

CSV_FIELDS = ("key", *(name for name in UsageGroup.model_fields if name != "key"), "goodput")


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}"


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "-"


def _wait(group: UsageGroup) -> str:
    seconds = int(group.queue_wait_s / group.jobs) if group.jobs else 0
    return (
        f"{seconds}s"
        if seconds < 120
        else f"{seconds // 60}m"
        if seconds < 7200
        else f"{seconds // 3600}h"
    )


def table(report: UsageReport) -> str:
    """Aligned columns, GPU and CPU time in hours, a total line when there are several groups."""
    head = (
        report.by.value.upper(),
        "JOBS",
        "OK/FAIL/CANC",
        "GPU-H",
        "BUSY-H",
        "BUSY",
        "WASTE-H",
        "WASTE",
        "CPU-H",
        "WALL-H",
        "AVG WAIT",
        "RETRIES",
        "GOODPUT",
        "REDONE-H",
    )
    groups = list(report.groups)
    if len(groups) > 1:
        groups.append(
            UsageGroup(
                key="total",
                **{
                    name: sum(getattr(g, name) for g in report.groups)
                    for name in UsageGroup.model_fields
                    if name != "key"
                },
            )
        )
    rows = [head] + [
        (
            g.key,
            str(g.jobs),
            f"{g.succeeded}/{g.failed}/{g.cancelled}",
            _hours(g.gpu_allocated_s),
            _hours(g.gpu_busy_s),
            _share(g.gpu_busy_s, g.gpu_allocated_s),
            _hours(g.gpu_waste_s),
            _share(g.gpu_waste_s, g.gpu_allocated_s),
            _hours(g.cpu_s),
            _hours(g.wall_s),
            _wait(g),
            str(g.retries),
            "-" if g.goodput is None else f"{100 * g.goodput:.0f}%",
            _hours(g.gpu_redone_s),
        )
        for g in groups
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.append(
        f"(jobs that ended since {utc_day(report.since)} UTC; waste: GPU time under"
        f" {report.waste_utilization_pct:g}% utilization; goodput: the share of the GPU time"
        " of jobs that logged steps that made progress they kept)"
    )
    if not report.groups:
        lines.insert(1, "(no job ended in this period)")
    return "\n".join(lines)


def csv_text(report: UsageReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for g in report.groups:
        writer.writerow(["" if (v := getattr(g, name)) is None else v for name in CSV_FIELDS])
    return out.getvalue()
