"""Cost of measuring a rank's wait for data (trainhub.rank.datawait) per batch.

Two pairs, each run plain and measured in alternating rounds in one process (the median
round of each is reported, with the ratio):

- a real DataLoader over an in-memory dataset, batch size 1, no workers: the cheapest batch a
  DataLoader hands out, so the measurement's share is as large as it can be;
- an iterator whose ``__next__`` does nothing, wrapped the same way: the measurement's own
  cost in microseconds per call, with nothing to hide it.

The measured rounds write their records into a job directory's ``metrics/system.jsonl`` as a
rank does (one per 10 s). Target: under 1 µs per batch.

    python benchmarks/data_wait_overhead.py [batches] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainhub.jobs.directory import JobDir  # noqa: E402
from trainhub.rank.datawait import DataWaitMeter, patch, rank_meter  # noqa: E402

TARGET_US = 1.0


class Nothing:
    """An iterator whose ``__next__`` costs only the call."""

    def __init__(self, count: int) -> None:
        self.left = count

    def __iter__(self) -> Nothing:
        return self

    def __next__(self) -> int:
        self.left -= 1
        if self.left < 0:
            raise StopIteration
        return self.left


def _loop(make_iterator, batches: int) -> float:
    """Seconds per batch of one pass."""
    started = time.perf_counter()
    for _ in make_iterator():
        pass
    return (time.perf_counter() - started) / batches


def _rounds(plain, measured, batches: int, rounds: int) -> tuple[float, float]:
    times: dict[str, list[float]] = {"plain": [], "measured": []}
    for _ in range(rounds):
        times["plain"].append(_loop(plain, batches))
        times["measured"].append(_loop(measured, batches))
    return statistics.median(times["plain"]), statistics.median(times["measured"])


def run(batches: int = 200_000, rounds: int = 7) -> list[dict]:
    import torch.utils.data as data
    import torch.utils.data.dataloader as dataloader

    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        meter = rank_meter(JobDir(Path(tmp) / "job").create(), 0, 0)
        original = dataloader._BaseDataLoaderIter.__next__
        items = list(range(batches // 10))
        loader = data.DataLoader(items, batch_size=1)

        def plain_loader():
            dataloader._BaseDataLoaderIter.__next__ = original
            return loader

        def measured_loader():
            patch(dataloader, meter)
            return loader

        try:
            loader_times = _rounds(plain_loader, measured_loader, len(items), rounds)
        finally:
            dataloader._BaseDataLoaderIter.__next__ = original
        bare = DataWaitMeter(lambda record: None)
        timed_next = bare.timed(Nothing.__next__)

        class Measured(Nothing):
            __next__ = timed_next

        call_times = _rounds(lambda: Nothing(batches), lambda: Measured(batches), batches, rounds)

    rows = []
    for case, count, (plain, measured) in (
        ("DataLoader, batch size 1, no workers", len(items), loader_times),
        ("__next__ that does nothing", batches, call_times),
    ):
        added_us = 1e6 * (measured - plain)
        rows.append(
            {
                "case": case,
                "batches": count,
                "rounds": rounds,
                "plain_us": round(1e6 * plain, 3),
                "measured_us": round(1e6 * measured, 3),
                "added_us": round(added_us, 3),
                "ratio": round(measured / plain, 3),
                # The DataLoader's own time varies by more than the cost: judged on the bare call.
                "within_target": added_us <= TARGET_US if count == batches else None,
            }
        )
    return rows


def main() -> None:
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    results = run(batches, rounds)
    columns = list(results[0])
    print(f"Data-wait measurement per batch, median of {rounds} rounds; target < {TARGET_US} µs")
    print(" | ".join(columns))
    for row in results:
        print(" | ".join(str(row[c]) for c in columns))


if __name__ == "__main__":
    main()
