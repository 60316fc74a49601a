"""What the mirror already sent of one job, kept durably (a JSON file renamed into place after
each step), so that a pass that stops anywhere — the server down, the process killed — resumes
where it was and sends nothing twice that MLflow would keep twice. A job's cursor lies in the
mirror's own directory (``<state>/<job>.json`` while there is something to send, then under
``done/``), never in the job directory its code can write."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import write_json_atomic

DONE = "done"
SUFFIX = ".json"
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


@dataclass
class Cursor:
    job_id: str
    run_id: str | None = None
    experiment_id: str | None = None
    artifact_uri: str | None = None
    params_sent: bool = False
    tags_sent: dict[str, str] = field(default_factory=dict)
    scalars_offset: int = 0  # bytes of metrics/scalars.jsonl sent
    metrics_sent: int = 0
    notebook_sha256: str | None = None
    status_sent: str | None = None
    # Model versions to mirror (trainhub.tracking.models): name, version, files, sent.
    models: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0
    next_try: float = 0.0
    error: str | None = None
    done: bool = False

    @classmethod
    def of(cls, data: dict[str, Any]) -> Cursor:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _name(job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        raise ValueError(f"job id {job_id!r} is not one trainhub makes")
    return job_id + SUFFIX


def path_of(state: Path, job_id: str, done: bool = False) -> Path:
    return (state / DONE if done else state) / _name(job_id)


def load(state: Path, job_id: str) -> Cursor | None:
    """The job's cursor, pending or done; None when the job was never enrolled."""
    for done in (False, True):
        with contextlib.suppress(FileNotFoundError):
            return Cursor.of(json.loads(path_of(state, job_id, done).read_text()))
    return None


def save(state: Path, cursor: Cursor) -> None:
    """Write the cursor where its state says (pending or done), by rename; the other place's
    copy goes."""
    target = path_of(state, cursor.job_id, cursor.done)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_json_atomic(target, asdict(cursor), mode=0o600)
    path_of(state, cursor.job_id, not cursor.done).unlink(missing_ok=True)


def pending(state: Path) -> list[Cursor]:
    """The cursors with something left to send (a torn or foreign file is skipped)."""
    found = []
    for path in sorted(state.glob("*" + SUFFIX)):
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append(Cursor.of(json.loads(path.read_text())))
    return found
