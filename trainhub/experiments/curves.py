"""A job's training scalars read back from ``metrics/scalars.jsonl`` as curves, for comparing
runs: parsed fast (lines as ``trainhub.log`` writes them by one regular expression, in C),
kept per file with the offset read to (a later comparison parses only what was appended), and
thinned for drawing without losing spikes (:func:`downsample`)."""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from trainhub.jobs import confined
from trainhub.jobs.directory import SCALARS, JobDir
from trainhub.metrics.scalars import WRITTEN_LINE

MAX_SCALAR_BYTES = 512 << 20  # a scalars file past this is compared on its first part only
READ_CHUNK = 8 << 20


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


# Lines as trainhub.log writes them (of rank 0, a finite value) are taken apart by the
# writer's own WRITTEN_LINE and converted by map(), in C: a million of them in about a second,
# where json.loads and a check per record take several. Any other line (another rank's, a null
# value, one the job wrote itself) goes through json.loads and the checks of Scalars.add.
def _parse_lines(data: bytes, into: Scalars) -> None:
    """Complete JSONL lines into ``into``, in the order they were written."""
    matches: list[tuple[Any, ...]] = WRITTEN_LINE.findall(data)
    if data.count(b"\n") != len(matches):
        matches = []
        for line in data.splitlines(keepends=True):
            if m := WRITTEN_LINE.fullmatch(line):
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


def read_scalars(jobdir: JobDir) -> Scalars:
    """The job's scalars, read without following links (none when it logged none)."""
    return _scalar_cache.read(jobdir)


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
