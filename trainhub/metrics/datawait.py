"""Input stalls: how much of a job's step time its ranks spent waiting for data (pure).

The ranks' records (:mod:`trainhub.rank.datawait`, in ``metrics/system.jsonl``: ``{time, rank,
attempt, data_wait_s, step_s, batches, num_workers, pin_memory}``) in; the job's figures and,
when waiting dominates, the sentence that says what to try. The fraction is the summed wait
over the summed step time (wait + compute between batches), per rank and over all of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ADVICE_FRACTION = 0.30  # above this share of the step waiting for data, the job view says so
SUGGESTED_WORKERS = 4  # what to try first when the loader loads in the training process


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def wait_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The data-wait records among ``metrics/system.jsonl``'s (the sampler's have none of these
    fields), in time order."""
    kept = [
        r
        for r in records
        if _number(r.get("time"))
        and _number(r.get("data_wait_s"))
        and _number(r.get("step_s"))
        and r["data_wait_s"] >= 0
        and r["step_s"] >= r["data_wait_s"]
    ]
    return sorted(kept, key=lambda r: r["time"])


def fraction(wait_s: float, step_s: float) -> float | None:
    """The share of step time spent waiting (0..1); None without step time."""
    if step_s <= 0:
        return None
    return min(1.0, max(0.0, wait_s / step_s))


@dataclass(frozen=True)
class DataWaitFigures:
    wait_s: float
    step_s: float
    fraction: float | None
    ranks: dict[int, float | None] = field(default_factory=dict)  # each rank's own fraction
    num_workers: int | None = None  # the loader's, as the latest record says (rank 0's first)
    pin_memory: bool | None = None
    advice: str | None = None


def data_wait(
    records: Iterable[Mapping[str, Any]], *, threshold: float = ADVICE_FRACTION
) -> DataWaitFigures | None:
    """The job's data-wait figures from its ``metrics/system.jsonl`` records; None when no rank
    iterated a DataLoader."""
    found = wait_records(records)
    if not found:
        return None
    per_rank: dict[int, list[float]] = {}
    for r in found:
        rank = r.get("rank")
        totals = per_rank.setdefault(rank if _number(rank) else 0, [0.0, 0.0])
        totals[0] += float(r["data_wait_s"])
        totals[1] += float(r["step_s"])
    wait = sum(w for w, _ in per_rank.values())
    step = sum(s for _, s in per_rank.values())
    share = fraction(wait, step)
    latest = min(reversed(found), key=lambda r: r.get("rank") if _number(r.get("rank")) else 0)
    workers = latest.get("num_workers")
    pin = latest.get("pin_memory")
    workers = workers if _number(workers) else None
    pin = pin if isinstance(pin, bool) else None
    return DataWaitFigures(
        wait_s=wait,
        step_s=step,
        fraction=share,
        ranks={int(rank): fraction(w, s) for rank, (w, s) in sorted(per_rank.items())},
        num_workers=int(workers) if workers is not None else None,
        pin_memory=pin,
        advice=advice(share, workers, pin, threshold=threshold),
    )


def suggested_workers(num_workers: int | None) -> int:
    """More loader processes than now: 4 when it loads in the training process (or unknown),
    else twice as many."""
    if not num_workers:
        return SUGGESTED_WORKERS
    return max(SUGGESTED_WORKERS, 2 * int(num_workers))


def advice(
    share: float | None,
    num_workers: int | None = None,
    pin_memory: bool | None = None,
    *,
    threshold: float = ADVICE_FRACTION,
) -> str | None:
    """The sentence shown when waiting for data dominates the step, e.g. "62 % of each step
    waits for data: try num_workers=4, pin_memory=True (the DataLoader has num_workers=0)";
    None at or under ``threshold``."""
    if share is None or share <= threshold:
        return None
    tries = [f"num_workers={suggested_workers(num_workers)}"]
    if pin_memory is not True:
        tries.append("pin_memory=True")
    now = f" (the DataLoader has num_workers={num_workers})" if num_workers is not None else ""
    return f"{round(share * 100)} % of each step waits for data: try {', '.join(tries)}{now}"


_WAIT_LINE = re.compile(rb'^[^\n]*"data_wait_s"[^\n]*$', re.MULTILINE)
_CHUNK = 8 << 20


def read_wait_records(job_dir: Any) -> list[dict[str, Any]]:
    """The data-wait records of a job's ``metrics/system.jsonl`` (a :class:`JobDir`), read in
    chunks: only their lines are parsed, the sampler's (most of the file) are passed over as
    bytes. A missing or refused file (a link, a FIFO) has none."""
    from trainhub.jobs import confined
    from trainhub.jobs.directory import metrics_file

    found: list[dict[str, Any]] = []
    rest = b""
    try:
        with confined.opened(job_dir.root, metrics_file("system")) as raw:
            while chunk := raw.read(_CHUNK):
                whole, _, rest = (rest + chunk).rpartition(b"\n")
                for line in _WAIT_LINE.findall(whole):
                    try:
                        found.append(json.loads(line))
                    except ValueError:  # a line the job wrote that is not a record
                        continue
    except (OSError, ValueError):
        return []
    return found
