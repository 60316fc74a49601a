"""The rows of a comparison of runs that hold one property of every job, each marked
``differs`` when two jobs' values are not the same JSON: parameters, lineage (source, git,
image, Python, torch), packages, datasets, resources and outcome; and each job's heading."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from trainhub.experiments.comparison import ComparedJob, Row
from trainhub.experiments.runs import Run
from trainhub.jobs.models import JobRecord


def _same(values: Sequence[Any]) -> bool:
    texts = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return len(texts) <= 1


def _row(name: str, values: Sequence[Any]) -> Row:
    return Row(name=name, values=list(values), differs=not _same(values))


_ABSENT = object()


def rows_by_key(maps: Sequence[Mapping[str, Any]]) -> list[Row]:
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


def package_rows(runs: Sequence[Run]) -> list[Row]:
    """A row per package installed in any job (from its lineage), null where a job has none."""
    package_maps = [_get(r.lineage, "packages") or {} for r in runs]
    return rows_by_key([p if isinstance(p, Mapping) else {} for p in package_maps])


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


def lineage_rows(runs: Sequence[Run]) -> list[Row]:
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
        _row("image ran", each(lambda lin, rec: ran_image_text(_get(lin, "ran_image")))),
        _row("python", each(lambda lin, rec: _get(lin, "python", "version"))),
        _row("torch", each(lambda lin, rec: _get(lin, "torch", "version"))),
    ]


def ran_image_text(ran: Any) -> str | None:
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


def dataset_texts(lineage: Mapping[str, Any] | None) -> dict[str, str]:
    entries = _get(lineage, "datasets")
    if not isinstance(entries, list):
        return {}
    return {str(e.get("name")): _dataset_text(e) for e in entries if isinstance(e, Mapping)}


def resources(record: JobRecord, now: float) -> dict[str, Any]:
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


def outcome(record: JobRecord) -> dict[str, Any]:
    v = record.verdict if record.state.terminal else None
    return {
        "state": record.state.value,
        "failure class": v.failure_class.value if v else None,
        "verdict": v.reason if v else None,
        "attempts": record.attempt + 1,
        "retries": sum(record.retries.values()),
    }


def compared_job(run: Run, now: float) -> ComparedJob:
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
