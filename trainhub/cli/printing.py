"""How the CLI prints: JSON for scripts, ages and columns for people."""

from __future__ import annotations

import json
import time
from typing import Any

from trainhub.jobs.models import JobSummary


def print_json(obj: Any) -> None:
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json") if hasattr(o, "model_dump") else o for o in obj]
    print(json.dumps(obj, indent=2, default=str))


def ago(ts: float | None) -> str:
    if not ts:
        return "-"
    s = int(time.time() - ts)
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def elapsed(job: JobSummary) -> str:
    if not job.started_at:
        return "-"
    end = job.finished_at or time.time()
    s = int(end - job.started_at)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def print_columns(rows: list[tuple[str, ...]]) -> None:
    """Rows under a header, each column as wide as its widest cell; the last one ragged."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
