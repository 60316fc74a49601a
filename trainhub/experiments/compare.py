"""Comparing runs: 2 to 10 jobs side by side, built from their records and job directories.

Two halves. :func:`read_run` reads what a comparison needs from one job directory, through
:mod:`trainhub.jobs.confined` (a job may have swapped its files for links or FIFOs): the
lineage, the code that ran (the bundle's cells, or a script's file) and the training scalars.
:func:`compare` is pure: from those runs it builds the :class:`Comparison` every front door
answers (``JobService.compare``, ``GET trainhub/api/compare``, ``trainhub compare``, the
JupyterLab compare view).

Rows hold one value per job, in the order the jobs were asked for; a row ``differs`` when any
two values are not the same JSON. Code is compared cell by cell against the first job (the
baseline) with :mod:`difflib`. The injected parameters cell is left out of that diff: its
difference is the parameters' difference, shown in their own rows.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, Literal

from pydantic import BaseModel, Field

from trainhub.bundle.layout import CELLS, WORKSPACE
from trainhub.bundle.schema import BundleCell, cell_label
from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import field_error
from trainhub.jobs.states import FailureClass, JobState

MIN_JOBS, MAX_JOBS = 2, 10
SCALARS = "metrics/scalars.jsonl"
MAX_SCALAR_BYTES = 512 << 20  # a scalars file past this is compared on its first part only
MAX_CODE_BYTES = 4 << 20  # a script (or the cells) read for the code diff
MAX_DIFF_CHARS = 200_000  # of one job's code diff against the baseline
READ_CHUNK = 8 << 20

Goal = Literal["min", "max"]

# Scalars where smaller is better; every other scalar counts larger as better. The same rule
# as labextension/src/jobsummary.ts, so the job view and the comparison name the same best.
SMALLER_IS_BETTER = re.compile(r"loss|err|perplexity|mse|mae|rmse|nll|wer|cer", re.IGNORECASE)


def scalar_goal(name: str, goals: Mapping[str, Goal] | None = None) -> Goal:
    """Whether the best value of scalar ``name`` is its smallest or its largest: ``goals``
    first (the caller's say), else by its name (:data:`SMALLER_IS_BETTER`)."""
    if goals and name in goals:
        return goals[name]
    return "min" if SMALLER_IS_BETTER.search(name) else "max"


def parse_goals(items: Sequence[str] | None) -> dict[str, Goal]:
    """``["accuracy:min", "reward:max"]`` -> ``{"accuracy": "min", "reward": "max"}``."""
    goals: dict[str, Goal] = {}
    for item in items or ():
        name, sep, goal = item.rpartition(":")
        if not sep or not name or goal not in ("min", "max"):
            raise field_error("goal", f"{item!r}: use NAME:min or NAME:max")
        goals[name] = goal  # type: ignore[assignment]
    return goals


def check_ids(ids: Sequence[str]) -> list[str]:
    """The ids to compare, each once in the order given; 2 to 10 of them."""
    unique = list(dict.fromkeys(i for i in ids if i))
    if not MIN_JOBS <= len(unique) <= MAX_JOBS:
        raise field_error(
            "ids", f"compare {MIN_JOBS} to {MAX_JOBS} different jobs; got {len(unique)}"
        )
    return unique


# --- the answer -----------------------------------------------------------------------------


class Row(BaseModel):
    """One property of every job: ``values[i]`` is job i's (null where it has none)."""

    name: str
    values: list[Any]
    differs: bool


class Point(BaseModel):
    step: int
    value: float
    time: float = Field(description="Seconds since the job started")


class ScalarRow(BaseModel):
    """The last and best value of one training scalar in each job (null where it has none)."""

    name: str
    goal: Goal = Field(description="min: the smallest value is best; max: the largest")
    last: list[Point | None]
    best: list[Point | None]
    best_job: str | None = Field(None, description="The job with the best of the best values")


class Series(BaseModel):
    """One job's curve of one scalar: ``[step, seconds since the job started, value]``."""

    name: str
    job_id: str
    points: list[tuple[int, float, float]]
    total: int = Field(description="Points before downsampling")


class CellChange(BaseModel):
    change: Literal["changed", "added", "removed"]
    before: int | None = Field(description="The baseline's cell index (0-based)")
    after: int | None = Field(description="This job's cell index (0-based)")
    diff: str = Field(description="Unified diff text (never HTML)")


class CodeDiff(BaseModel):
    """The code one job ran against the baseline's, cell by cell."""

    job_id: str
    against: str
    identical: bool
    changes: list[CellChange] = Field(default_factory=list)
    truncated: bool = False
    note: str | None = Field(None, description="Why the code could not be compared")


class ComparedJob(BaseModel):
    id: str
    name: str
    state: JobState
    failure_class: FailureClass | None = None
    verdict: Verdict | None = None
    source: str
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    elapsed_s: float | None = Field(None, description="Running time; null if it never started")
    attempts: int
    notes: list[str] = Field(default_factory=list, description="What could not be read")


class Comparison(BaseModel):
    jobs: list[ComparedJob]
    parameters: list[Row]
    lineage: list[Row]
    packages: list[Row] = Field(description="Only the packages whose versions differ")
    packages_same: int = Field(description="Packages installed alike in every job")
    datasets: list[Row]
    resources: list[Row]
    outcome: list[Row]
    code: list[CodeDiff]
    scalars: list[ScalarRow]
    series: list[Series] = Field(default_factory=list)


# --- reading one job ------------------------------------------------------------------------


@dataclass
class Curve:
    """One scalar of one job, steps in order, the latest write of a step winning (a retried
    attempt logs its steps again)."""

    steps: list[int]
    values: list[float]
    times: list[float]


@dataclass
class Scalars:
    """One job's training scalars by name, as columns in the order they were logged."""

    columns: dict[str, tuple[list[int], list[float], list[float]]] = field(default_factory=dict)
    truncated: bool = False
    _curves: dict[str, Curve] = field(default_factory=dict, repr=False)
    _thinned: dict[tuple[str, int], list[int]] = field(default_factory=dict, repr=False)

    @property
    def names(self) -> list[str]:
        return sorted(self.columns)

    def add(self, record: Any) -> None:
        """One record of ``metrics/scalars.jsonl`` as json.loads gives it."""
        if (point := _checked(record)) is not None:
            time, step, name, value = point
            self.extend(name, [step], [value], [time])

    def extend(self, name: str, steps: list[int], values: list[float], times: list[float]) -> None:
        columns = self.columns.setdefault(name, ([], [], []))
        columns[0].extend(steps)
        columns[1].extend(values)
        columns[2].extend(times)
        self._curves.pop(name, None)
        self._thinned = {k: v for k, v in self._thinned.items() if k[0] != name}

    def curve(self, name: str) -> Curve:
        """The scalar's curve (kept until the scalar gets a new record)."""
        curve = self._curves.get(name)
        if curve is None:
            steps, values, times = self.columns.get(name, ([], [], []))
            if steps == sorted(set(steps)):  # logged in order, each step once: as it is
                curve = Curve(list(steps), list(values), list(times))
            else:
                last = dict(zip(steps, range(len(steps)), strict=True))  # the latest wins
                order = [last[s] for s in sorted(last)]
                curve = Curve(
                    [steps[i] for i in order], [values[i] for i in order], [times[i] for i in order]
                )
            self._curves[name] = curve
        return curve

    def thinned(self, name: str, most: int) -> list[int]:
        """:func:`downsample` of the scalar's curve, kept like the curve."""
        key = (name, most)
        if key not in self._thinned:
            self._thinned[key] = downsample(self.curve(name).values, most)
        return self._thinned[key]


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _checked(record: Any) -> tuple[float, int, str, float] | None:
    """(time, step, name, value) of a scalar record; None for anything but a finite value of
    rank 0 (the default of trainhub.log): a non-finite one is logged as null, no point."""
    if not isinstance(record, dict) or record.get("rank", 0) != 0:
        return None
    name, step, value, time = (record.get(k) for k in ("name", "step", "value", "time"))
    if not isinstance(name, str) or not isinstance(step, int) or isinstance(step, bool):
        return None
    if not _number(value) or not _number(time):
        return None
    return float(time), step, name, float(value)


@dataclass
class Run:
    """What :func:`compare` needs of one job."""

    record: JobRecord
    lineage: dict[str, Any] | None = None
    cells: list[tuple[int | None, str]] | None = None  # (cell index, source) of what ran
    scalars: Scalars = field(default_factory=Scalars)
    notes: list[str] = field(default_factory=list)


# A line exactly as trainhub.log writes it (trainhub/metrics/scalars.py), of rank 0, with a
# finite value. Such lines are taken apart by this one expression and converted by map(), in
# C: a million of them in about a second, where json.loads and a check per record take
# several. Any other line (another rank's, a null value, one the job wrote itself) goes
# through json.loads and the checks of Scalars.add.
_WRITER_LINE = re.compile(
    rb'\{"time":(-?[0-9][0-9.eE+-]*+),"step":([0-9]++),"name":"([^"\\\n]*+)",'
    rb'"value":(-?[0-9][0-9.eE+-]*+),"rank":0,"attempt":[0-9]++\}\n'
)


def _parse_lines(data: bytes, into: Scalars) -> None:
    """Complete JSONL lines into ``into``, in the order they were written."""
    matches: list[tuple[Any, ...]] = _WRITER_LINE.findall(data)
    if data.count(b"\n") != len(matches):
        matches = []
        for line in data.splitlines(keepends=True):
            if m := _WRITER_LINE.fullmatch(line):
                time, step, name, value = m.groups()
                point = (float(time), int(step), name.decode("utf-8", "replace"), float(value))
            else:
                try:
                    point = _checked(json.loads(line))
                except ValueError:
                    continue  # a torn line from a killed writer
            if point is not None:
                matches.append(point)
    if not matches:
        return
    # Columns, then each scalar's part of them: zip, map and compress all run in C.
    times, steps, names, values = zip(*matches, strict=True)
    distinct = list(dict.fromkeys(names))
    for name in distinct:
        mask = None if len(distinct) == 1 else list(map(name.__eq__, names))

        def part(column: tuple[Any, ...], mask: list[bool] | None = mask) -> Iterable[Any]:
            return column if mask is None else compress(column, mask)

        floats, seconds = list(map(float, part(values))), list(map(float, part(times)))
        ints = list(map(int, part(steps)))
        if not (math.isfinite(sum(floats)) and math.isfinite(sum(seconds))):  # 1e999 is inf
            kept = [i for i, v in enumerate(floats) if _number(v) and _number(seconds[i])]
            ints = [ints[i] for i in kept]
            floats, seconds = [floats[i] for i in kept], [seconds[i] for i in kept]
        text = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
        into.extend(text, ints, floats, seconds)


class _ScalarCache:
    """Parsed scalars files by job directory, device and inode, kept with the offset parsed up
    to: the file is only ever appended to, so a second comparison parses only what was added
    since (a file replaced or cut shorter is parsed again)."""

    def __init__(self, size: int = 32):
        self.size = size
        self.entries: OrderedDict[tuple[str, int, int], tuple[int, Scalars]] = OrderedDict()
        self.lock = threading.Lock()

    def read(self, jobdir: JobDir) -> Scalars:
        try:
            f = confined.opened_file(jobdir.root, SCALARS)
        except FileNotFoundError:
            return Scalars()
        with f:
            st = os.fstat(f.fileno())
            key = (str(jobdir.root), st.st_dev, st.st_ino)
            with self.lock:
                offset, scalars = self.entries.pop(key, (0, None))
            if scalars is None or offset > st.st_size:
                offset, scalars = 0, Scalars()
            end = min(st.st_size, MAX_SCALAR_BYTES)
            scalars.truncated = st.st_size > MAX_SCALAR_BYTES
            while offset < end:
                chunk = os.pread(f.fileno(), min(READ_CHUNK, end - offset), offset)
                if not chunk:
                    break
                whole = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
                if not whole:
                    break
                _parse_lines(whole, scalars)
                offset += len(whole)
            with self.lock:
                self.entries[key] = (offset, scalars)
                while len(self.entries) > self.size:
                    self.entries.popitem(last=False)
            return scalars


_scalar_cache = _ScalarCache()


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
        run.scalars = _scalar_cache.read(jobdir) if scalars else Scalars()
    except (OSError, ValueError) as e:
        run.notes.append(f"scalars: {e}")
    if run.scalars.truncated:
        run.notes.append(f"scalars: only the first {MAX_SCALAR_BYTES >> 20} MiB are compared")
    return run


# --- the comparison (pure) ------------------------------------------------------------------


def _same(values: Sequence[Any]) -> bool:
    texts = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return len(texts) <= 1


def _row(name: str, values: Sequence[Any]) -> Row:
    return Row(name=name, values=list(values), differs=not _same(values))


_ABSENT = object()


def _rows(maps: Sequence[Mapping[str, Any]]) -> list[Row]:
    """A row per key of any of ``maps`` (sorted), null where a job has no such key."""
    keys = sorted({k for m in maps for k in m})
    rows = []
    for key in keys:
        values = [m.get(key, _ABSENT) for m in maps]
        differs = (
            len(
                {
                    json.dumps(v, sort_keys=True, default=str) if v is not _ABSENT else "\0"
                    for v in values
                }
            )
            > 1
        )
        rows.append(
            Row(name=key, values=[None if v is _ABSENT else v for v in values], differs=differs)
        )
    return rows


def _get(data: Mapping[str, Any] | None, *path: str) -> Any:
    for part in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def _digest(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _lineage_rows(runs: Sequence[Run]) -> list[Row]:
    def each(fn: Any) -> list[Any]:
        return [fn(r.lineage, r.record) for r in runs]

    return [
        _row("source", each(lambda lin, rec: rec.spec.source.path)),
        _row("notebook sha256", each(lambda lin, rec: _get(lin, "notebook_sha256"))),
        _row("bundle content hash", each(lambda lin, rec: _get(lin, "content_hash"))),
        _row("git commit", each(lambda lin, rec: _get(lin, "git", "commit"))),
        _row("git branch", each(lambda lin, rec: _get(lin, "git", "branch"))),
        _row("git dirty", each(lambda lin, rec: _get(lin, "git", "dirty"))),
        # The uncommitted diff itself can be long: a digest says whether two are the same.
        _row("git uncommitted diff", each(lambda lin, rec: _digest(_get(lin, "git", "diff")))),
        _row("image", each(lambda lin, rec: rec.spec.image)),
        _row("image ran", each(lambda lin, rec: _ran_image(_get(lin, "ran_image")))),
        _row("python", each(lambda lin, rec: _get(lin, "python", "version"))),
        _row("torch", each(lambda lin, rec: _get(lin, "torch", "version"))),
    ]


def _ran_image(ran: Any) -> str | None:
    """What the job really ran: the pods' image digest, or the local environment."""
    if not isinstance(ran, Mapping):
        return None
    if ran.get("backend") == "local":
        return f"local environment {ran.get('environment')}"
    if ran.get("image_id"):
        return str(ran["image_id"])
    pods = ran.get("pods")
    return ", ".join(sorted(set(map(str, pods.values())))) if isinstance(pods, Mapping) else None


def _dataset_text(entry: Mapping[str, Any]) -> str:
    fp = entry.get("fingerprint") or {}
    parts = [str(entry.get("path") or "?")]
    if fp:
        parts.append(f"{fp.get('files')} files, {fp.get('bytes')} bytes")
        parts.append(f"newest {fp.get('newest_mtime')}")
        if fp.get("content_hash"):
            parts.append(str(fp["content_hash"]))
    if entry.get("error"):
        parts.append(str(entry["error"]))
    return " · ".join(parts)


def _datasets(lineage: Mapping[str, Any] | None) -> dict[str, str]:
    entries = _get(lineage, "datasets")
    if not isinstance(entries, list):
        return {}
    return {str(e.get("name")): _dataset_text(e) for e in entries if isinstance(e, Mapping)}


def _resources(record: JobRecord, now: float) -> dict[str, Any]:
    res = record.spec.resources
    return {
        "workers": res.workers,
        "processes per worker": res.ranks_per_worker,
        "GPUs per worker": res.gpus_per_worker,
        "GPUs": record.gpus,
        "CPU per worker": res.cpu,
        "memory per worker": res.memory,
        "priority": record.spec.priority.value,
        "queue": record.queue,
        "elapsed (s)": _elapsed(record, now),
    }


def _elapsed(record: JobRecord, now: float) -> float | None:
    """Running time: from start to finish (or to ``now`` while it runs); None before it ran."""
    if record.started_at is None:
        return None
    end = record.finished_at if record.finished_at is not None else now
    return round(max(end - record.started_at, 0.0), 3)


def _outcome(record: JobRecord) -> dict[str, Any]:
    v = record.verdict if record.state.terminal else None
    return {
        "state": record.state.value,
        "failure class": v.failure_class.value if v else None,
        "verdict": v.reason if v else None,
        "attempts": record.attempt + 1,
        "retries": sum(record.retries.values()),
    }


def _compared_job(run: Run, now: float) -> ComparedJob:
    r = run.record
    v = r.verdict if r.state.terminal else None
    return ComparedJob(
        id=r.id,
        name=r.name,
        state=r.state,
        failure_class=v.failure_class if v else None,
        verdict=v,
        source=r.spec.source.path,
        created_at=r.created_at,
        started_at=r.started_at,
        finished_at=r.finished_at,
        elapsed_s=_elapsed(r, now),
        attempts=r.attempt + 1,
        notes=list(run.notes),
    )


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


def _code_diffs(runs: Sequence[Run]) -> list[CodeDiff]:
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


def _start(run: Run) -> float:
    """Where a job's time axis starts: its start, else its first scalar."""
    if run.record.started_at is not None:
        return run.record.started_at
    firsts = [run.scalars.curve(n).times[:1] for n in run.scalars.names]
    return min((t for first in firsts for t in first), default=0.0)


def _point(curve: Curve, i: int, t0: float) -> Point:
    return Point(step=curve.steps[i], value=curve.values[i], time=round(curve.times[i] - t0, 3))


def _scalar_rows(runs: Sequence[Run], goals: Mapping[str, Goal] | None) -> list[ScalarRow]:
    names = sorted({n for r in runs for n in r.scalars.names})
    starts = [_start(r) for r in runs]
    rows = []
    for name in names:
        goal = scalar_goal(name, goals)
        better = min if goal == "min" else max
        last: list[Point | None] = []
        best: list[Point | None] = []
        for run, t0 in zip(runs, starts, strict=True):
            curve = run.scalars.curve(name)
            if not curve.steps:
                last.append(None)
                best.append(None)
                continue
            last.append(_point(curve, -1, t0))
            # The first step that reached the best value (index finds the earliest).
            best.append(_point(curve, curve.values.index(better(curve.values)), t0))
        present = [(p.value, i) for i, p in enumerate(best) if p is not None]
        winner = better(present, key=lambda vi: vi[0])[1] if present else None
        rows.append(
            ScalarRow(
                name=name,
                goal=goal,
                last=last,
                best=best,
                best_job=runs[winner].record.id if winner is not None else None,
            )
        )
    return rows


def downsample(values: Sequence[float], most: int) -> list[int]:
    """Indices of at most ``most`` of a curve's ``values``, its shape kept: the first and the
    last, and the lowest and highest value of each of ``(most - 2) // 2`` buckets in between,
    in order (a spike that uniform thinning would skip stays visible)."""
    n = len(values)
    if most <= 0 or n <= most:
        return list(range(n))
    if most < 4:
        return [0, n - 1][:most]
    buckets = (most - 2) // 2
    inner = n - 2
    out = [0]
    for b in range(buckets):
        lo_i, hi_i = 1 + b * inner // buckets, 1 + (b + 1) * inner // buckets
        if lo_i >= hi_i:
            continue
        chunk = values[lo_i:hi_i]  # min/max/index run in C: 100,000 points in milliseconds
        lo, hi = lo_i + chunk.index(min(chunk)), lo_i + chunk.index(max(chunk))
        out += [lo, hi] if lo < hi else [hi, lo] if hi < lo else [lo]
    out.append(n - 1)
    return out


def _series(runs: Sequence[Run], most: int | None) -> list[Series]:
    out = []
    for run in runs:
        t0 = _start(run)
        for name in run.scalars.names:
            c = run.scalars.curve(name)
            chosen = run.scalars.thinned(name, most) if most else range(len(c.steps))
            points = [(c.steps[i], round(c.times[i] - t0, 3), c.values[i]) for i in chosen]
            out.append(Series(name=name, job_id=run.record.id, points=points, total=len(c.steps)))
    return out


def compare(
    runs: Sequence[Run],
    *,
    goals: Mapping[str, Goal] | None = None,
    series: bool = True,
    points: int | None = None,
    now: float,
) -> Comparison:
    """The comparison of ``runs`` (2 to 10), in their order; the first is the code baseline.
    ``goals`` overrides :func:`scalar_goal`'s rule per scalar; ``series`` adds each scalar's
    curve per job, downsampled to at most ``points`` points each when given; ``now`` is the
    time a running job's elapsed time counts to."""
    if not MIN_JOBS <= len(runs) <= MAX_JOBS:
        raise field_error("ids", f"compare {MIN_JOBS} to {MAX_JOBS} jobs; got {len(runs)}")
    package_maps = [_get(r.lineage, "packages") or {} for r in runs]
    packages = _rows([p if isinstance(p, Mapping) else {} for p in package_maps])
    return Comparison(
        jobs=[_compared_job(r, now) for r in runs],
        parameters=_rows([r.record.spec.parameters for r in runs]),
        lineage=_lineage_rows(runs),
        packages=[p for p in packages if p.differs],
        packages_same=sum(not p.differs for p in packages),
        datasets=_rows([_datasets(r.lineage) for r in runs]),
        resources=_rows([_resources(r.record, now) for r in runs]),
        outcome=_rows([_outcome(r.record) for r in runs]),
        code=_code_diffs(runs),
        scalars=_scalar_rows(runs, goals),
        series=_series(runs, points) if series else [],
    )
