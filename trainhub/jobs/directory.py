"""The job directory: the data plane every job writes and the server reads.

Layout (DESIGN.md, "The job directory is the data plane")::

    spec.json  bundle/  lineage.json  logs/rank-<r>.log  events.jsonl
    metrics/*.jsonl  checkpoints/<step>/  status/

Writers are separate processes (supervisor, every rank), so appends use O_APPEND with one
``write`` per line, which the kernel keeps whole for regular files.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainhub.jobs import confined, logs

EVENTS = "events.jsonl"


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_jsonl(
    path: Path, offset: int = 0, limit: int | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Complete records from byte ``offset``; returns them and the offset to resume from.

    A trailing line still being written (no newline yet) is left for the next read.
    """
    records: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            for raw in f:
                if not raw.endswith(b"\n") or (limit is not None and len(records) >= limit):
                    break
                offset += len(raw)
                try:
                    records.append(json.loads(raw))
                except json.JSONDecodeError:
                    continue  # a torn line from a killed writer; skip it, keep the rest
    except FileNotFoundError:
        pass
    return records, offset


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON so that readers see the old file or the new one, never a half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=2, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JobDir:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    # --- paths --------------------------------------------------------------------------
    @property
    def spec(self) -> Path:
        return self.root / "spec.json"

    @property
    def bundle(self) -> Path:
        return self.root / "bundle"

    @property
    def lineage(self) -> Path:
        return self.root / "lineage.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def events(self) -> Path:
        return self.root / EVENTS

    @property
    def metrics(self) -> Path:
        return self.root / "metrics"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def status(self) -> Path:
        """Per-attempt, per-rank outcome files written by the runner
        (``status/<attempt>/rank-<r>.json``)."""
        return self.root / "status"

    @property
    def outputs(self) -> Path:
        """Images and other rich cell output saved by the runner."""
        return self.root / "outputs"

    def rank_log(self, rank: int) -> Path:
        return self.logs / f"rank-{rank}.log"

    @property
    def supervisor_log(self) -> Path:
        return self.logs / "supervisor.log"

    def rank_status(self, attempt: int, rank: int) -> Path:
        return self.status / str(attempt) / f"rank-{rank}.json"

    def create(self) -> JobDir:
        for d in (self.root, self.bundle, self.logs, self.metrics, self.checkpoints, self.status):
            d.mkdir(parents=True, exist_ok=True)
        return self

    # --- events ---------------------------------------------------------------------------
    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        """Append one event: ``{"time": <epoch s>, "type": ..., **fields}``."""
        record = {"time": round(time.time(), 3), "type": type, **fields}
        append_jsonl(self.events, record)
        return record

    def read_events(
        self, offset: int = 0, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        return read_jsonl(self.events, offset, limit)

    def iter_events(self) -> Iterator[dict[str, Any]]:
        yield from self.read_events()[0]

    # --- logs -------------------------------------------------------------------------------
    def log_ranks(self) -> list[int]:
        """Ranks that have a log; ``logs/`` itself must be the job's own directory."""
        ranks = []
        for name, is_dir in confined.entries(self.root, "logs"):
            stem, _, rank = name.removesuffix(".log").partition("-")
            if not is_dir and stem == "rank" and name.endswith(".log") and rank.isdigit():
                ranks.append(int(rank))
        return sorted(ranks)

    def log_reader(self, rank: int) -> logs.Reader:
        return logs.job_dir_reader(self.root, rank)

    def has_log(self, rank: int) -> bool:
        """Whether the rank has opened its log (:class:`confined.NotAJobFile` if it is not a
        regular file of the job's own)."""
        try:
            confined.size(self.root, logs.rank_log_name(rank))
        except FileNotFoundError:
            return False
        return True

    def read_log(self, rank: int, offset: int = 0, length: int = 1 << 20) -> tuple[bytes, int]:
        """Bytes of one rank's log from ``offset``: whole characters, ending on a line boundary
        when ``length`` cuts the log."""
        chunk = logs.read_chunk(self.log_reader(rank), offset, length)
        return chunk.data, chunk.next_offset
