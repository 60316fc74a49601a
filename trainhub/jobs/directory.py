"""The job directory: the data plane every job writes and the server reads.

Layout (DESIGN.md, "The job directory is the data plane")::

    spec.json  bundle/  lineage.json  logs/rank-<r>.log  events.jsonl
    metrics/*.jsonl  checkpoints/<step>/  status/  outputs/

Writers are separate processes (supervisor, every rank), so appends use O_APPEND with one
``write`` per line, which the kernel keeps whole for regular files.
"""

from __future__ import annotations

import io
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainhub.jobs import confined, logs, ownership

EVENTS = "events.jsonl"
SPEC = "spec.json"
LINEAGE = "lineage.json"
MODEL_INPUTS = "models.jsonl"  # registered models the job's code loaded (trainhub.models)
NOTEBOOK = "notebook.ipynb"
EDITS = "edits.json"  # tags, note and sharing changed after submission
METRICS = "metrics"
# The job's metric files by kind, in metrics/: training scalars (trainhub.log's, and those the
# TensorBoard reader takes from event files), GPU and system samples (the sampler's).
METRIC_FILES = {"scalars": "scalars.jsonl", "gpu": "gpu.jsonl", "system": "system.jsonl"}
METRIC_KINDS = tuple(METRIC_FILES)
SCALAR_TAIL_BYTES = 64 << 10
# A JSON document of the job directory (spec, lineage) is read whole: past this it is refused.
MAX_JSON_BYTES = 64 << 20
log = logging.getLogger(__name__)


def _jsonl_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record to ``path``, a file the writer's own folder holds (a rank's scalars, the
    supervisor's samples): a link, FIFO or device in the file's place is refused, never
    followed or waited on."""
    path = Path(path)
    confined.append(path.parent, path.name, _jsonl_line(record))


def read_jsonl(
    job_dir: Path, relative: str, offset: int = 0, limit: int | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Complete records of the job's file ``relative`` from byte ``offset``; returns them and
    the offset to resume from. Read through :mod:`trainhub.jobs.confined`: a link, FIFO or
    directory anywhere on the way is refused (:class:`confined.NotAJobFile`).

    A trailing line still being written (no newline yet) is left for the next read.
    """
    records: list[dict[str, Any]] = []
    try:
        with confined.opened(job_dir, relative) as raw, io.BufferedReader(raw) as f:
            # Past the end there is nothing yet; a seek past what a file system holds fails.
            if offset >= os.fstat(raw.fileno()).st_size:
                return records, offset
            f.seek(offset)
            for line in f:
                if not line.endswith(b"\n") or (limit is not None and len(records) >= limit):
                    break
                offset += len(line)
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a torn line from a killed writer; skip it, keep the rest
    except FileNotFoundError:
        pass
    return records, offset


def write_json_atomic(path: Path, obj: Any, *, mode: int = 0o644) -> None:
    """Write JSON so that readers see the old file or the new one, never a half; by default
    readable as any file the job writes is (who may enter the job directory is the directory's
    to say), else with the permissions ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=2, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in the directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def notebook_name(rank: int) -> str:
    """The executed notebook a rank writes: rank 0's is the job's ``notebook.ipynb``."""
    return NOTEBOOK if rank == 0 else f"notebook-rank-{rank}.ipynb"


def agent_log_name(worker: int, attempt: int) -> str:
    """Where a job pod's first process keeps its torchrun's own output for one attempt
    (:mod:`trainhub.rank.pod`): the summary naming the rank that failed first is there."""
    return f"logs/agent-{worker}-attempt-{attempt}.log"


def rendezvous_log_name(worker: str, attempt: int) -> str:
    """Where an elastic job's agent keeps its account of the rendezvous for one attempt
    (:mod:`trainhub.rank.agent`): ``worker`` is a pod's index, or ``pid<n>`` on one machine."""
    return f"logs/rendezvous-{worker}-attempt-{attempt}.log"


def metrics_file(kind: str) -> str:
    """The job-relative path of its ``kind`` metrics (one of :data:`METRIC_KINDS`)."""
    return f"{METRICS}/{METRIC_FILES[kind]}"


SCALARS = metrics_file("scalars")


class JobDir:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    # --- paths --------------------------------------------------------------------------
    @property
    def spec(self) -> Path:
        return self.root / SPEC

    @property
    def bundle(self) -> Path:
        return self.root / "bundle"

    @property
    def lineage(self) -> Path:
        return self.root / LINEAGE

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def events(self) -> Path:
        return self.root / EVENTS

    @property
    def metrics(self) -> Path:
        return self.root / METRICS

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
        """The job's products: what ranks write to ``trainhub.outputs.path()``
        (``TRAINHUB_OUTPUT_DIR``), and the images of cell output the runner saves; kept after
        the job ends, until the team's retention policy deletes them."""
        return self.root / "outputs"

    def rank_log(self, rank: int) -> Path:
        return self.logs / f"rank-{rank}.log"

    @property
    def pip_prefix(self) -> Path:
        """The job's own environment layer: what its ``%pip install`` lines install (``pip
        install --prefix``), seen by its ranks alone (:func:`~trainhub.jobs.environment.
        pip_layer`)."""
        return self.root / "env"

    @property
    def supervisor_log(self) -> Path:
        return self.logs / "supervisor.log"

    def rank_status(self, attempt: int, rank: int) -> Path:
        return self.status / str(attempt) / f"rank-{rank}.json"

    def create(self) -> JobDir:
        """Make the job's directory and folders; below a guarded jobs root (a team volume
        where members own their files) the directory is new and its owner's alone."""
        if ownership.guarded(self.root.parent):
            self.root.mkdir()  # never one made before by someone else
            ownership.make_private(self.root)
        for d in (
            self.root,
            self.bundle,
            self.logs,
            self.metrics,
            self.checkpoints,
            self.status,
            self.outputs,
        ):
            d.mkdir(parents=True, exist_ok=True)
        return self

    # --- documents ----------------------------------------------------------------------
    def read_json(self, relative: str) -> Any:
        """A JSON document of the job, read without following links (FileNotFoundError when
        absent; :class:`confined.NotAJobFile` for a link, FIFO or directory; ValueError naming
        the file when it is not JSON or over :data:`MAX_JSON_BYTES`)."""
        raw = confined.read_bytes(self.root, relative, limit=MAX_JSON_BYTES)
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{relative} of the job is not valid JSON: {e}") from None

    def read_spec(self) -> dict[str, Any]:
        data = self.read_json(SPEC)
        if not isinstance(data, dict):
            raise ValueError(f"{SPEC} of the job is not a JSON object")
        return data

    def read_lineage(self) -> dict[str, Any] | None:
        """The job's lineage; None until the submitter has written it."""
        try:
            data = self.read_json(LINEAGE)
        except FileNotFoundError:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"{LINEAGE} of the job is not a JSON object")
        return data

    def read_model_inputs(self) -> list[dict[str, Any]]:
        """The registered model versions the job's code loaded, once each, first use first."""
        try:
            rows, _ = read_jsonl(self.root, MODEL_INPUTS, 0, 10_000)
        except (OSError, ValueError):
            return []
        seen: dict[tuple[Any, Any], dict[str, Any]] = {}
        for row in rows:
            seen.setdefault((row.get("model"), row.get("version")), row)
        return list(seen.values())

    # --- events ---------------------------------------------------------------------------
    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        """Append one event: ``{"time": <epoch s>, "type": ..., **fields}``.

        A job that replaced its events file by a link, FIFO or directory does not get it
        written through: the event is dropped with a warning, so whoever records it (the
        server's reconcile, a cancel) goes on for every other job. Reading the file then
        names the refusal.
        """
        record = {"time": round(time.time(), 3), "type": type, **fields}
        try:
            confined.append(self.root, EVENTS, _jsonl_line(record))
        except confined.NotAJobFile as e:
            log.warning("trainhub: event %s of %s not recorded: %s", type, self.root.name, e)
        return record

    def read_events(
        self, offset: int = 0, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        return read_jsonl(self.root, EVENTS, offset, limit)

    def iter_events(self) -> Iterator[dict[str, Any]]:
        yield from self.read_events()[0]

    def read_metrics(
        self, kind: str, offset: int = 0, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Records of the job's ``kind`` metrics (:data:`METRIC_KINDS`) from byte ``offset``,
        and the offset to resume from. :func:`trainhub.metrics.read_metrics` is this for
        notebooks: its arguments checked, and scalars chosen by name."""
        return read_jsonl(self.root, metrics_file(kind), offset, limit)

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

    # --- after submission -------------------------------------------------------------------
    def read_edits(self, submitted_tags: list[str]) -> dict[str, Any]:
        """The tags, note and sharing the job was given after submission (``edits.json``); the
        submitted tags, no note and private when it was never edited (or the file is not the
        job's own JSON)."""
        try:
            data = self.read_json(EDITS)
        except (OSError, ValueError, confined.NotAJobFile):
            data = None
        if not isinstance(data, dict):
            return {"tags": list(submitted_tags), "note": "", "shared": "private"}
        tags = data.get("tags")
        ok = isinstance(tags, list) and all(isinstance(t, str) for t in tags)
        note = data.get("note")
        return {
            "tags": tags if ok else list(submitted_tags),
            "note": note if isinstance(note, str) else "",
            # anything but the one word the owner's edit writes is private
            "shared": "team" if data.get("shared") == "team" else "private",
        }

    def write_edits(self, tags: list[str], note: str, shared: str = "private") -> None:
        """Keep the edits; below a guarded jobs root the directory opens to the team for
        reading as it is shared (and closes as it is not), as the file system says it."""
        guarded = ownership.guarded(self.root.parent)
        if guarded and shared != "team":
            ownership.set_team_readable(self.root, False)
        body = {"tags": tags, "note": note, "shared": shared}
        confined.replace(self.root, EDITS, json.dumps(body).encode())
        if guarded and shared == "team":
            ownership.set_team_readable(self.root, True)

    def last_scalar(self, name: str) -> dict[str, Any] | None:
        """The latest record of scalar ``name`` in the end of :data:`SCALARS` (its last
        :data:`SCALAR_TAIL_BYTES`): cheap enough for every row of a list; None when it is not
        there (or the file is not the job's own)."""
        relative = SCALARS
        try:
            end = confined.size(self.root, relative)
            start = max(0, end - SCALAR_TAIL_BYTES)
            tail = confined.read_range(self.root, relative, start, end - start)
        except (OSError, confined.NotAJobFile):
            return None
        needle = json.dumps(name).encode()
        for line in reversed(tail.split(b"\n")[1 if start else 0 :]):
            if needle not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("name") == name:
                return record
        return None
