"""The code each job of a comparison ran against the first job's (the baseline), cell by cell
with :mod:`difflib`: cells matched as wholes, a changed cell as a unified diff (text only)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Literal

from trainhub.bundle.schema import cell_label
from trainhub.experiments.comparison import CellChange, CodeDiff
from trainhub.experiments.runs import Run

MAX_DIFF_CHARS = 200_000  # of one job's code diff against the baseline


def _label(index: int | None) -> str:
    return "the script" if index is None else cell_label(index)


def cell_diff(
    before: Sequence[tuple[int | None, str]], after: Sequence[tuple[int | None, str]]
) -> list[CellChange]:
    """What changed from ``before``'s cells to ``after``'s: cells matched as wholes by
    difflib, a changed cell as a unified diff of its lines, an added or removed one whole."""
    matcher = difflib.SequenceMatcher(
        a=[s for _, s in before], b=[s for _, s in after], autojunk=False
    )
    changes: list[CellChange] = []

    def whole(change: Literal["added", "removed"], cell: tuple[int | None, str]) -> CellChange:
        sign = "+" if change == "added" else "-"
        text = "".join(f"{sign}{line}\n" for line in cell[1].splitlines())
        head = f"{change} {_label(cell[0])}\n"
        return CellChange(
            change=change,
            before=cell[0] if change == "removed" else None,
            after=cell[0] if change == "added" else None,
            diff=head + text,
        )

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old, new = list(before[i1:i2]), list(after[j1:j2])
        for a, b in zip(old, new, strict=False):  # a replaced run: pair cells in order
            lines = difflib.unified_diff(
                a[1].splitlines(),
                b[1].splitlines(),
                fromfile=_label(a[0]),
                tofile=_label(b[0]),
                lineterm="",
            )
            changes.append(
                CellChange(change="changed", before=a[0], after=b[0], diff="\n".join(lines) + "\n")
            )
        changes += [whole("removed", c) for c in old[len(new) :]]
        changes += [whole("added", c) for c in new[len(old) :]]
    return changes


def diff_code(runs: Sequence[Run]) -> list[CodeDiff]:
    base = runs[0]
    out = []
    for run in runs[1:]:
        diff = CodeDiff(job_id=run.record.id, against=base.record.id, identical=False)
        if base.cells is None or run.cells is None:
            missing = base if base.cells is None else run
            diff.note = f"the code of {missing.record.id} could not be read"
        else:
            diff.changes = cell_diff(base.cells, run.cells)
            diff.identical = not diff.changes
            size = 0
            for i, change in enumerate(diff.changes):
                size += len(change.diff)
                if size > MAX_DIFF_CHARS:
                    diff.changes, diff.truncated = diff.changes[:i], True
                    break
        out.append(diff)
    return out
