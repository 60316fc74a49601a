"""A comparison of runs as a terminal table (``trainhub compare``): one column per job, each
section's differing rows first and marked, then those alike."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from trainhub.experiments.comparison import CodeDiff, Comparison, Point, Row

MAX_CELL = 36
DIFFERS = "≠"


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, separators=(",", ":"), default=str)
    text = " ".join(text.split())  # one line a cell
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _point(point: Point | None, best: bool = False) -> str:
    if point is None:
        return "-"
    return f"{point.value:.6g} @{point.step}" + (" *" if best else "")


def _code(diff: CodeDiff | None) -> str:
    if diff is None:
        return "(baseline)"
    if diff.note:
        return "not compared"
    if diff.identical:
        return "same"
    kinds = [c.change for c in diff.changes]
    parts = [f"{kinds.count(k)} {k}" for k in ("changed", "added", "removed") if k in kinds]
    return ", ".join(parts) + (" (more)" if diff.truncated else "")


def _section(title: str, rows: Iterable[Row]) -> list[tuple[str, str, list[str]]]:
    ordered = sorted(rows, key=lambda r: not r.differs)  # stable: differing first
    lines = [(title.upper(), "", [])]
    lines += [
        (f"  {r.name}", DIFFERS if r.differs else "", [_text(v) for v in r.values]) for r in ordered
    ]
    return lines


def table(comparison: Comparison) -> str:
    jobs = comparison.jobs
    lines: list[tuple[str, str, list[str]]] = [
        ("JOB", "", [j.id for j in jobs]),
        ("  name", "", [j.name for j in jobs]),
    ]
    lines += _section("outcome", comparison.outcome)
    lines += _section("parameters", comparison.parameters)
    code = {d.job_id: d for d in comparison.code}
    codes = [_code(code.get(j.id)) for j in jobs]
    lines.append(("CODE", "", []))
    lines.append(
        (
            "  vs the first job",
            DIFFERS if any(c not in ("same", "(baseline)") for c in codes) else "",
            codes,
        )
    )
    lines += _section("lineage", comparison.lineage)
    lines += _section("datasets", comparison.datasets)
    lines += _section(
        f"packages ({comparison.packages_same} alike, not shown)", comparison.packages
    )
    lines += _section("resources", comparison.resources)
    lines.append(("SCALARS (* best)", "", []))
    scalar_lines = []
    for s in comparison.scalars:
        ids = [j.id for j in jobs]
        winner = ids.index(s.best_job) if s.best_job in ids else None
        values = [p.value if p else None for p in s.last]
        differs = DIFFERS if len({v for v in values}) > 1 else ""
        scalar_lines.append((f"  {s.name} last", differs, [_point(p) for p in s.last]))
        best = [_point(p, i == winner) for i, p in enumerate(s.best)]
        scalar_lines.append((f"  {s.name} best ({s.goal})", differs, best))
    lines += sorted(scalar_lines, key=lambda line: not line[1])
    notes = [f"{j.id}: {n}" for j in jobs for n in j.notes]

    label_w = max(len(label) for label, _, _ in lines)
    widths = [max([len(v[i]) for _, _, v in lines if v] + [0]) for i in range(len(jobs))]
    out = []
    for label, mark, values in lines:
        cells = "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=False))
        out.append(f"{label.ljust(label_w)} {mark or ' '} {cells}".rstrip())
    out += [f"note: {n}" for n in notes]
    return "\n".join(out)


def code_diffs(comparison: Comparison) -> str:
    """Each job's cell-level diff against the first job, as unified diff text."""
    out = []
    for diff in comparison.code:
        out.append(f"=== {diff.job_id} against {diff.against}: {_code(diff)}")
        if diff.note:
            out.append(diff.note)
        out += [change.diff.rstrip("\n") for change in diff.changes]
    return "\n".join(out)
