"""One job read for a comparison of runs: its record, lineage, the code it ran and its
training scalars, all read through :mod:`trainhub.jobs.confined` (a job may have swapped its
files for links or FIFOs). What cannot be read is a note of that job, so the others still
compare."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainhub.bundle.layout import CELLS, WORKSPACE
from trainhub.bundle.schema import BundleCell
from trainhub.experiments.curves import MAX_SCALAR_BYTES, Scalars, read_scalars
from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord

MAX_CODE_BYTES = 4 << 20  # a script (or the cells) read for the code diff


@dataclass
class Run:
    """What :func:`trainhub.experiments.compare.compare` needs of one job."""

    record: JobRecord
    lineage: dict[str, Any] | None = None
    cells: list[tuple[int | None, str]] | None = None  # (cell index, source) of what ran
    scalars: Scalars = field(default_factory=Scalars)
    notes: list[str] = field(default_factory=list)


def _code(jobdir: JobDir, record: JobRecord) -> list[tuple[int | None, str]]:
    """(cell index, source) of the code the job ran: the bundle's cells, or the script."""
    source = record.spec.source
    if source.kind == "script":
        raw = confined.read_bytes(
            jobdir.root, f"bundle/{WORKSPACE}/{source.path}", limit=MAX_CODE_BYTES
        )
        return [(None, raw.decode("utf-8", "replace"))]
    data = jobdir.read_json(f"bundle/{CELLS}")
    cells = [BundleCell.from_json(c, f"bundle/{CELLS}[{i}]") for i, c in enumerate(data or [])]
    return [(c.cell_index, c.source) for c in cells if not c.injected]


def read_run(record: JobRecord, *, scalars: bool = True) -> Run:
    """One job's lineage, code and (unless ``scalars`` is false) scalars, read without
    following links. What cannot be read (a link in a file's place, a missing bundle) becomes a
    note, so the others still compare."""
    jobdir = JobDir(record.job_dir)
    run = Run(record)
    try:
        run.lineage = jobdir.read_lineage()
    except (OSError, ValueError) as e:  # NotAJobFile is a ValueError
        run.notes.append(f"lineage: {e}")
    try:
        run.cells = _code(jobdir, record)
    except FileNotFoundError:
        run.notes.append("code: the job's bundle holds no code")
    except (OSError, ValueError) as e:
        run.notes.append(f"code: {e}")
    try:
        run.scalars = read_scalars(jobdir) if scalars else Scalars()
    except (OSError, ValueError) as e:
        run.notes.append(f"scalars: {e}")
    if run.scalars.truncated:
        run.notes.append(f"scalars: only the first {MAX_SCALAR_BYTES >> 20} MiB are compared")
    return run
