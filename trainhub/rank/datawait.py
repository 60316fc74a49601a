"""How long a rank's training loop waits for its data, measured without code changes.

PyTorch's DataLoader hands out batches through its iterators (``_BaseDataLoaderIter`` and its
single- and multi-process kinds), whose ``__next__`` the base class defines. When the notebook
imports ``torch.utils.data.dataloader``, that one method is wrapped: the time inside it is
**waiting for data**; the time from one batch's return to the next call (on any loader) is
**compute** (the step). A ``StopIteration`` ends the count of compute until the next batch
arrives, so what runs between epochs (evaluation, saving) is no step time.

The wrapper is the class's own method, so the user's objects stay what they are: the iterator
keeps its type and attributes, the DataLoader is untouched (``len()``, pickling, workers),
exceptions and ``StopIteration`` pass unchanged. Per batch it costs two ``perf_counter`` calls
and a few additions (``benchmarks/data_wait_overhead.py``); no I/O. Every ``INTERVAL_S`` (at a
batch's return) and once as the rank ends, the interval's totals become one record of
``metrics/system.jsonl``::

    {time, rank, attempt, data_wait_s, step_s, batches, num_workers, pin_memory}

``step_s`` is wait plus compute; ``num_workers`` and ``pin_memory`` are the latest iterator's.
Those records carry no ``cpu_percent``: the readers of the sampler's records skip them.
Standard library only, like everything a rank loads before the first cell.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

TARGET = "torch.utils.data.dataloader"
INTERVAL_S = 10.0  # at most one record per rank this often: the file is shared by every rank


class DataWaitMeter:
    """The running totals of one rank; ``write`` gets each interval's record."""

    # Slots: the wrapper reads and writes these on every batch, faster than a __dict__'s.
    __slots__ = (
        "batches",
        "clock",
        "compute",
        "fields",
        "flush_due",
        "interval_s",
        "last_return",
        "loader",
        "num_workers",
        "pin_memory",
        "wait",
        "write",
    )

    def __init__(
        self,
        write: Callable[[dict[str, Any]], None],
        fields: dict[str, Any] | None = None,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.write = write
        self.fields = dict(fields or {})
        self.interval_s = interval_s
        self.clock = clock
        self.wait = self.compute = 0.0
        self.batches = 0
        self.last_return: float | None = None  # None: no step under way (start, epoch end)
        self.loader: Any = None  # the iterator the settings below were read from
        self.num_workers: int | None = None
        self.pin_memory: bool | None = None
        self.flush_due = clock() + interval_s

    def timed(self, next_of: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``next_of`` (an iterator class's ``__next__``), measured."""
        clock, meter = self.clock, self

        def __next__(iterator: Any) -> Any:
            called = clock()
            try:
                batch = next_of(iterator)
            except StopIteration:
                meter.wait += clock() - called
                meter.last_return = None
                raise
            returned = clock()
            meter.wait += returned - called
            if meter.last_return is not None:
                meter.compute += called - meter.last_return
            meter.last_return = returned
            meter.batches += 1
            if iterator is not meter.loader:
                meter.saw(iterator)
            if returned >= meter.flush_due:
                meter.flush(returned)
            return batch

        __next__.__wrapped__ = next_of  # type: ignore[attr-defined]
        __next__.data_wait_meter = self  # type: ignore[attr-defined]
        __next__.__qualname__ = getattr(next_of, "__qualname__", "__next__")
        __next__.__doc__ = getattr(next_of, "__doc__", None)
        return __next__

    def saw(self, iterator: Any) -> None:
        self.loader = iterator
        workers = getattr(iterator, "_num_workers", None)
        pin = getattr(iterator, "_pin_memory", None)
        self.num_workers = workers if isinstance(workers, int) else None
        self.pin_memory = pin if isinstance(pin, bool) else None

    def flush(self, now: float | None = None) -> None:
        """Write the interval's totals (nothing when no batch came) and start the next."""
        self.flush_due = (self.clock() if now is None else now) + self.interval_s
        if not self.batches:
            return
        record = {
            "time": round(time.time(), 3),
            **self.fields,
            "data_wait_s": round(self.wait, 6),
            "step_s": round(self.wait + self.compute, 6),
            "batches": self.batches,
            "num_workers": self.num_workers,
            "pin_memory": self.pin_memory,
        }
        self.wait = self.compute = 0.0
        self.batches = 0
        # A full disk or a refused file costs the figure, never the training.
        with contextlib.suppress(OSError):
            self.write(record)


def patch(module: ModuleType, meter: DataWaitMeter) -> bool:
    """Wrap the DataLoader iterators' ``__next__`` in ``module``; False when it has none."""
    base = getattr(module, "_BaseDataLoaderIter", None)
    original = getattr(base, "__next__", None)
    if base is None or original is None or hasattr(original, "data_wait_meter"):
        return False
    base.__next__ = meter.timed(original)
    return True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch.utils.data.dataloader`` is found by the finders after
    it, its loader is asked to patch the module once it has run."""

    def __init__(self, meter: DataWaitMeter) -> None:
        self.meter = meter

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return None
        run, meter, finder = loader.exec_module, self.meter, self

        def exec_module(module: ModuleType) -> None:
            run(module)
            patch(module, meter)
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install(meter: DataWaitMeter) -> None:
    """Measure the DataLoaders of this process from now on (torch imported now or later)."""
    module = sys.modules.get(TARGET)
    if module is not None:
        patch(module, meter)
    else:
        sys.meta_path.insert(0, _PatchOnImport(meter))


def rank_meter(job: Any, rank: int, attempt: int) -> DataWaitMeter:
    """The meter of a job's rank, writing into its ``metrics/system.jsonl``."""
    from trainhub.jobs.directory import METRIC_FILES, append_jsonl

    path = job.metrics / METRIC_FILES["system"]

    def write(record: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_jsonl(path, record)

    return DataWaitMeter(write, {"rank": rank, "attempt": attempt})
