"""A version's lineage and metrics, taken once from the job at registration (pure but for
:func:`read_job`, which reads the job directory without following links).

What the job record, ``lineage.json`` and ``metrics/scalars.jsonl`` already hold, narrowed to
what says where a model came from: the job and attempt, the notebook and its cells, the
parameters, the image and the digest its ranks ran, the datasets with their fingerprints, the
pipeline run, and each training scalar as it stood at the registered step.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir

# lineage.json's keys a version keeps (the packages list and the platform stay in the job).
_KEPT = (
    "source",
    "notebook_sha256",
    "content_hash",
    "git",
    "image",
    "ran_image",
    "pipeline",
    "team",
)
SCALAR_PAGE = 20_000  # records read at a time: a long scalars file is folded, never held
MAX_SCALAR_PAGES = 500  # 10 million records; a longer file is read up to there


@dataclass(frozen=True)
class JobFacts:
    """What the registry needs of the job (from its record, or inside the job from its
    environment)."""

    id: str
    name: str
    user: str
    attempt: int
    job_dir: str
    state: str | None = None


def lineage_of(
    job: JobFacts, lineage: Mapping[str, Any] | None, spec: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The version's lineage: the job, then what its lineage and spec say."""
    lineage = lineage or {}
    kept: dict[str, Any] = {
        "job": {"id": job.id, "name": job.name, "user": job.user, "attempt": job.attempt},
        "parameters": dict(lineage.get("parameters") or (spec or {}).get("parameters") or {}),
        "datasets": [
            {k: d[k] for k in ("name", "path", "by_name", "fingerprint", "error") if k in d}
            for d in lineage.get("datasets") or []
            if isinstance(d, dict)
        ],
    }
    kept.update({k: lineage[k] for k in _KEPT if lineage.get(k) is not None})
    if job.state:
        kept["job"]["state"] = job.state
    return kept


def metrics_at(rows: Iterable[Mapping[str, Any]], step: int | None) -> dict[str, float]:
    """Each scalar's value at ``step`` (its last record at or before it; None: its last), rank
    0's where ranks logged apart."""
    best: dict[str, tuple[int, float]] = {}
    for row in rows:
        name, value, at = row.get("name"), row.get("value"), row.get("step")
        if not isinstance(name, str) or isinstance(value, bool):
            continue
        if not isinstance(value, int | float) or not math.isfinite(value):
            continue
        if row.get("rank", 0) not in (0, None) or not isinstance(at, int):
            continue
        if step is not None and at > step:
            continue
        if name not in best or at >= best[name][0]:
            best[name] = (at, float(value))
    return {name: value for name, (_, value) in sorted(best.items())}


def read_job(job: JobFacts, step: int | None) -> tuple[dict[str, Any], dict[str, float]]:
    """(lineage, metrics at ``step``) of the job's directory; a document the job broke (a link,
    not JSON) is left out rather than refusing the registration."""
    jobdir = JobDir(job.job_dir)
    lineage = spec = None
    with contextlib.suppress(OSError, ValueError):
        lineage = jobdir.read_lineage()
    with contextlib.suppress(OSError, ValueError):
        spec = jobdir.read_spec()
    return lineage_of(job, lineage, spec), metrics_at(_scalars(jobdir), step)


def _scalars(jobdir: JobDir) -> Iterator[dict[str, Any]]:
    """The job's scalar records, a page at a time; what cannot be read ends them."""
    offset = 0
    for _ in range(MAX_SCALAR_PAGES):
        try:
            rows, after = jobdir.read_metrics("scalars", offset, SCALAR_PAGE)
        except (OSError, ValueError, confined.NotAJobFile):
            return
        yield from rows
        if after == offset or len(rows) < SCALAR_PAGE:
            return
        offset = after
