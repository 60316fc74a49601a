"""A job as MLflow requests (pure): its run's tags and parameters, its scalars as metrics with
their steps, its state as a run status, cut into ``runs/log-batch`` bodies within MLflow's
limits. Nothing here reads a file or the network."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trainhub.experiments.compare_rows import ran_image_text
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState

# MLflow's documented limits of one log-batch request, and of keys and values.
MAX_METRICS, MAX_PARAMS, MAX_TAGS, MAX_ENTRIES = 1000, 100, 100, 1000
MAX_KEY, MAX_PARAM_VALUE, MAX_TAG_VALUE = 250, 6000, 8000
_KEY_UNSAFE = re.compile(r"[^\w\-. /]")  # MLflow keys: alphanumerics, _ - . space /

JOB_ID_TAG = "trainhub.job_id"
STATUS = {
    JobState.SUCCEEDED: "FINISHED",
    JobState.FAILED: "FAILED",
    JobState.CANCELLED: "KILLED",
}
_NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def key(name: str) -> str:
    """A name MLflow accepts as a key (others' characters become '_')."""
    return _KEY_UNSAFE.sub("_", name)[:MAX_KEY] or "_"


def run_status(state: JobState) -> str:
    """The MLflow run status of a job's state: an ended job's end, else RUNNING."""
    return STATUS.get(state, "RUNNING")


def run_tags(record: JobRecord, lineage: Mapping[str, Any] | None) -> dict[str, str]:
    """What the run says of its job: trainhub's ids and where it stands, and MLflow's own
    system tags (run name, user, source, git commit), so MLflow's UI shows them in place."""
    lineage = lineage or {}
    source = record.spec.source
    git = lineage.get("git") if isinstance(lineage.get("git"), Mapping) else {}
    verdict = record.verdict
    tags: dict[str, str | None] = {
        JOB_ID_TAG: record.id,
        "trainhub.job_name": record.name,
        "trainhub.user": record.user,
        "trainhub.team": record.team,
        "trainhub.notebook": source.path if source.kind == "notebook" else None,
        "trainhub.script": source.path if source.kind == "script" else None,
        "trainhub.image": record.spec.image,
        "trainhub.image_digest": ran_image_text(lineage.get("ran_image")),
        "trainhub.state": record.state.value,
        "trainhub.attempt": str(record.attempt),
        "trainhub.failure_class": verdict.failure_class.value if verdict else None,
        "trainhub.verdict": verdict.reason if verdict else None,
        "trainhub.tags": ", ".join(record.tags) or None,
        "trainhub.sweep": record.sweep_id,
        "trainhub.pipeline_run": record.pipeline_run,
        "mlflow.runName": record.name,
        "mlflow.user": record.user,
        "mlflow.source.name": source.path,
        "mlflow.source.type": "NOTEBOOK" if source.kind == "notebook" else "JOB",
        "mlflow.source.git.commit": git.get("commit") if git else None,
        "mlflow.note.content": record.note or None,
    }
    return {k: str(v)[:MAX_TAG_VALUE] for k, v in tags.items() if v is not None}


def run_params(record: JobRecord) -> dict[str, str]:
    """The job's parameters (nested ones by dotted names) and its size. Sent once: MLflow
    refuses a parameter logged again with another value."""
    params = dict(flatten(record.spec.parameters))
    params["trainhub.gpus"] = str(record.gpus)
    params["trainhub.workers"] = str(record.spec.resources.workers)
    return {key(k): v[:MAX_PARAM_VALUE] for k, v in params.items()}


def flatten(values: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, str]]:
    for name, value in values.items():
        if isinstance(value, Mapping) and value:
            yield from flatten(value, f"{prefix}{name}.")
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            yield f"{prefix}{name}", text


def metric(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """One record of ``metrics/scalars.jsonl`` as an MLflow metric (a rank other than 0 gets
    its own key, ``loss/rank1``); a record without a name or step is skipped."""
    name, step, when = row.get("name"), row.get("step"), row.get("time")
    if not isinstance(name, str) or not isinstance(step, int) or isinstance(step, bool):
        return None
    value = row.get("value")
    if value is None:  # a non-finite value is kept as null with its kind
        value = _NONFINITE.get(str(row.get("nonfinite")), "NaN")
    elif not isinstance(value, int | float) or isinstance(value, bool):
        return None
    elif not math.isfinite(value):
        value = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    rank = row.get("rank") or 0
    return {
        "key": key(name if rank == 0 else f"{name}/rank{rank}"),
        "value": value,
        "timestamp": int(float(when) * 1000) if isinstance(when, int | float) else 0,
        "step": step,
    }


def metrics(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [m for row in rows if (m := metric(row)) is not None]


def as_pairs(values: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"key": k, "value": v} for k, v in values.items()]


def log_batches(
    run_id: str,
    *,
    metrics: list[dict[str, Any]] = (),  # type: ignore[assignment]
    params: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """``runs/log-batch`` bodies holding all of these, each within MLflow's limits (1000
    metrics, 100 parameters, 100 tags, 1000 entries). Empty when there is nothing."""
    kinds = {
        "metrics": (list(metrics), MAX_METRICS),
        "params": (as_pairs(params or {}), MAX_PARAMS),
        "tags": (as_pairs(tags or {}), MAX_TAGS),
    }
    bodies: list[dict[str, Any]] = []
    for kind, (items, most) in kinds.items():
        for start in range(0, len(items), min(most, MAX_ENTRIES)):
            bodies.append({"run_id": run_id, kind: items[start : start + most]})
    return bodies
