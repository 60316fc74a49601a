"""Scalars written with TensorBoard's ``SummaryWriter`` (``torch.utils.tensorboard``, and so
PyTorch Lightning's and Hugging Face Trainer's default loggers), as trainhub's own training
scalars: read from the job's event files while it runs and appended to
``metrics/scalars.jsonl`` (``{time, step, name, value, rank: 0, attempt, source:
"tensorboard"}``), where the charts, ``compare`` and the latest-scalar column read them.

The reading is tensorboard's own (``EventFileLoader``, which keeps its place in each file, so
each pass reads only what was appended since the last); scalars in either of the forms
writers use (TensorBoard 2's ``scalars`` tensors, TF1's ``simple_value``) are taken. Event
files are looked for below the job's working tree and outputs every :data:`SCAN_SECONDS`.
Without the ``tensorboard`` package (which ``SummaryWriter`` needs anyway) nothing is read,
and the first event file found says so once.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.bundle.layout import WORKSPACE

if TYPE_CHECKING:
    from trainhub.jobs.directory import JobDir

EVENT_FILE_PREFIX = "events.out.tfevents."
SCAN_SECONDS = 5.0  # how often the trees are walked for new event files
MAX_SCANNED_DIRS = 20_000  # a workspace of datasets is not walked to its end every pass
_SCALARS_PLUGIN = "scalars"


def event_files(roots: Iterable[Path]) -> Iterator[Path]:
    """TensorBoard event files below ``roots`` (at most MAX_SCANNED_DIRS directories each)."""
    for root in roots:
        for seen, (directory, subdirs, files) in enumerate(os.walk(root)):
            if seen >= MAX_SCANNED_DIRS:
                break
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            for name in files:
                if name.startswith(EVENT_FILE_PREFIX):
                    yield Path(directory) / name


def job_roots(jobdir: JobDir) -> list[Path]:
    """Where a job's SummaryWriter writes: below the code's working tree (``runs/``,
    ``lightning_logs/``) or its outputs."""
    return [jobdir.bundle / WORKSPACE, jobdir.outputs]


def scalars_of(event: Any) -> Iterator[tuple[str, float]]:
    """(tag, value) of each scalar in one ``Event``."""
    from tensorboard.util import tensor_util

    for value in event.summary.value:
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            yield value.tag, float(value.simple_value)
        elif kind == "tensor" and value.metadata.plugin_data.plugin_name == _SCALARS_PLUGIN:
            array = tensor_util.make_ndarray(value.tensor)
            if array.size == 1:
                yield value.tag, float(array.reshape(()).item())


def series_name(tag: str, path: Path) -> str:
    """The scalar's name: its tag, as TensorBoard shows it across runs (the writer's own
    directory, a date and host, is left out, so runs compare by tag). ``add_scalars(tag,
    {key: ...})`` writes each key to a directory ``<tag>_<key>`` of its own, all with ``tag``:
    those become ``tag/key``."""
    prefix = tag.replace("/", "_") + "_"
    folder = path.parent.name
    return f"{tag}/{folder[len(prefix) :]}" if folder.startswith(prefix) else tag


class TensorBoardReader:
    """Appends the scalars of a job's event files to its scalars file, incrementally."""

    def __init__(
        self,
        roots: Iterable[Path],
        append: Callable[[dict[str, Any]], None],
        attempt: Callable[[], int],
        report: Callable[[str], None],
        *,
        from_now: bool = False,
    ) -> None:
        """``from_now``: the event files already there are not read (a pod of a job's later
        attempt: its earlier attempts' pods read their own files)."""
        self.roots = [Path(r) for r in roots]
        self._append = append
        self._attempt = attempt
        self._report = report
        self._loaders: dict[Path, Any] = {}
        self._earlier = frozenset(event_files(self.roots)) if from_now else frozenset()
        self._last_scan = -math.inf

    def poll(self, *, rescan: bool = False) -> int:
        """Read what the event files gained since the last poll; the number of scalars.
        ``rescan``: look for new files now (the last poll, as the job ends)."""
        now = time.monotonic()
        if rescan or now - self._last_scan >= SCAN_SECONDS:
            self._last_scan = now
            self._find_files()
        count = 0
        for path, loader in self._loaders.items():
            for event in loader.Load():
                for tag, value in scalars_of(event):
                    self._append(self._record(event, series_name(tag, path), value))
                    count += 1
        return count

    def _find_files(self) -> None:
        new = [
            path
            for path in event_files(self.roots)
            if path not in self._loaders and path not in self._earlier
        ]
        if not new:
            return
        try:
            from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        except ImportError:
            self._report(
                f"TensorBoard event files ({new[0].name}) are not read into the job's metrics: "
                "the tensorboard package is not installed where the job is supervised"
            )
            return
        for path in new:
            self._loaders[path] = EventFileLoader(str(path))

    def _record(self, event: Any, tag: str, value: float) -> dict[str, Any]:
        record: dict[str, Any] = {
            "time": round(event.wall_time, 3),
            "step": int(event.step),
            "name": tag,
            "value": value,
            "rank": 0,  # the file does not say; under DDP the habit is one writer, on rank 0
            "attempt": self._attempt(),
            "source": "tensorboard",
        }
        if not math.isfinite(value):  # as trainhub.log keeps them: valid JSON, value said
            record["value"], record["nonfinite"] = None, str(value)
        return record
