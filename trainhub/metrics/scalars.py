"""Training scalars: ``trainhub.log(step=..., loss=...)`` and range reads of the metric files.

Inside a job (``TRAINHUB_JOB_DIR`` set) every scalar becomes one record of
``metrics/scalars.jsonl``: ``{time, step, name, value, rank, attempt}``. Outside a job, in a
notebook, ``log`` prints a compact line and keeps the records in memory (``history()``), so
the same training code runs unchanged in both places.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import METRIC_FILES, JobDir, append_jsonl

HISTORY_LIMIT = 100_000  # records kept in memory outside a job; a notebook loop may run long

_lock = threading.Lock()
_next_step = 0
_history: deque[dict[str, Any]] = deque(maxlen=HISTORY_LIMIT)
_created_dirs: set[Path] = set()


def log(step: int | None = None, *, rank0_only: bool = True, **scalars: Any) -> int:
    """Record training scalars for ``step``; returns the step used.

    ``step`` defaults to one more than the last step logged in this process (0 at first).
    Values must be numbers or one-element tensors/arrays. A NaN or infinite value (a
    diverging loss) is recorded as ``value: null`` with ``nonfinite: "nan"`` — the moment a
    run diverges is what a researcher most needs to see, so it never stops the training.
    With ``rank0_only`` (the
    default) only global rank 0 writes, since every data-parallel rank computes the same
    figures; pass False to record each rank's own value.
    """
    global _next_step
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise TypeError(f"trainhub.log: step must be an int, got {type(step).__name__}")
    if step is not None and step < 0:
        raise ValueError(f"trainhub.log: step must be 0 or more, got {step}")
    if not scalars:
        raise TypeError("trainhub.log: give at least one scalar, e.g. trainhub.log(loss=0.25)")
    values = {name: _as_float(name, value) for name, value in scalars.items()}
    with _lock:
        if step is None:
            step = _next_step
        _next_step = step + 1

    job_dir = os.environ.get("TRAINHUB_JOB_DIR")
    if not job_dir:
        _log_locally(step, values)
        return step
    rank = int(os.environ.get("RANK", "0"))
    if rank0_only and rank != 0:
        return step
    _append_scalars(
        JobDir(job_dir), step, values, rank, int(os.environ.get("TRAINHUB_ATTEMPT", "0"))
    )
    return step


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, str | bytes):
        raise TypeError(f"trainhub.log: scalar {name!r} must be a number, got the text {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError) as error:
        # float() refuses tensors and arrays of more than one element, and non-numbers.
        raise TypeError(
            f"trainhub.log: scalar {name!r} must be a number or a one-element tensor, "
            f"got {_describe(value)}"
        ) from error
    return number


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    kind = type(value).__name__
    return f"a {kind} of shape {tuple(shape)}" if shape is not None else f"a {kind}"


# A record exactly as _append_scalars writes it (compact JSON, keys in this order) of rank 0
# with a finite value: (time, step, name, value) as bytes. A reader of many lines matches them
# with it (experiments/curves.py); any other line it reads as JSON.
WRITTEN_LINE = re.compile(
    rb'\{"time":(-?[0-9][0-9.eE+-]*+),"step":([0-9]++),"name":"([^"\\\n]*+)",'
    rb'"value":(-?[0-9][0-9.eE+-]*+),"rank":0,"attempt":[0-9]++\}\n'
)


def _append_scalars(
    job_dir: JobDir, step: int, values: dict[str, float], rank: int, attempt: int
) -> None:
    directory = job_dir.metrics
    if directory not in _created_dirs:
        directory.mkdir(parents=True, exist_ok=True)
        _created_dirs.add(directory)
    now = round(time.time(), 3)
    path = directory / METRIC_FILES["scalars"]
    for name, value in values.items():
        record: dict[str, Any] = {
            "time": now,
            "step": step,
            "name": name,
            "value": value,
            "rank": rank,
            "attempt": attempt,
        }
        if not math.isfinite(value):
            # JSON has no NaN; keep the record valid and say what the value was.
            record["value"] = None
            record["nonfinite"] = str(value)
        append_jsonl(path, record)


def _log_locally(step: int, values: dict[str, float]) -> None:
    now = round(time.time(), 3)
    with _lock:
        _history.extend(
            {"time": now, "step": step, "name": name, "value": value, "rank": 0}
            for name, value in values.items()
        )
    print(f"step {step}  " + "  ".join(f"{name}={value:.6g}" for name, value in values.items()))


def history(name: str | None = None) -> list[dict[str, Any]]:
    """Scalars logged outside a job in this process, oldest first (optionally one name)."""
    with _lock:
        return [record for record in _history if name is None or record["name"] == name]


def reset() -> None:
    """Forget the local history and start steps from 0 again (a fresh run in the notebook)."""
    global _next_step
    with _lock:
        _history.clear()
        _next_step = 0


# --- reading ----------------------------------------------------------------------------------


def read_metrics(
    job_dir: JobDir,
    kind: str,
    offset: int = 0,
    limit: int | None = None,
    names: list[str] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Records of ``metrics/<kind>.jsonl`` from byte ``offset``; returns them and the next offset.

    ``kind`` is ``gpu``, ``system`` or ``scalars``. ``names`` keeps only those scalars; with
    ``limit`` it still returns up to ``limit`` matching records when later ones exist.
    """
    if kind not in METRIC_FILES:
        raise ValueError(f"kind must be one of {', '.join(METRIC_FILES)}; got {kind!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a byte offset of 0 or more, got {offset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive number of records, got {limit!r}")
    if names is not None and kind != "scalars":
        raise ValueError(f"names selects training scalars; it does not apply to {kind!r} metrics")
    if names is None:
        return job_dir.read_metrics(kind, offset, limit)

    wanted = set(names)
    matched: list[dict[str, Any]] = []
    while limit is None or len(matched) < limit:
        # Read no more than still wanted, so the offset never skips past an unreturned match.
        batch, next_offset = job_dir.read_metrics(
            kind, offset, None if limit is None else limit - len(matched)
        )
        matched += [record for record in batch if record.get("name") in wanted]
        if next_offset == offset:
            break
        offset = next_offset
    return matched, offset
