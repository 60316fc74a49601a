"""One job's catch-up with its MLflow run, in steps that each end with the cursor saved: find or
make the run (found by its ``trainhub.job_id`` tag, so a run made by a pass that stopped before
saving is not made twice), parameters once, tags when they change, the scalars not sent yet
(MLflow keeps a metric sent twice once: same key, step, time and value), the model versions
queued, and once the job has ended its executed notebook and the run's end. Errors propagate:
the pass (:mod:`trainhub.tracking.pending`) keeps them in the cursor and tries again later."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from typing import Any

from trainhub.jobs import confined
from trainhub.jobs.directory import NOTEBOOK, JobDir
from trainhub.jobs.models import JobRecord
from trainhub.tracking import batches
from trainhub.tracking.cursor import Cursor
from trainhub.tracking.models import send_model_version
from trainhub.tracking.rest import Client, MlflowError

MAX_NOTEBOOK_BYTES = 256 << 20
NOTEBOOK_ARTIFACT = "notebook.ipynb"

Save = Callable[[Cursor], None]


def sync_job(
    client: Client, experiment: str, record: JobRecord, jobdir: JobDir, cursor: Cursor, save: Save
) -> None:
    """Send what ``cursor`` says is not sent yet; ``cursor.done`` once everything is."""
    lineage = _lineage(jobdir)
    if cursor.run_id is None:
        _open_run(client, experiment, record, lineage, cursor)
        save(cursor)
    run_id = cursor.run_id
    assert run_id is not None
    if not cursor.params_sent:
        for body in batches.log_batches(run_id, params=batches.run_params(record)):
            client.log_batch(body)
        cursor.params_sent = True
        save(cursor)
    tags = batches.run_tags(record, lineage)
    changed = {k: v for k, v in tags.items() if cursor.tags_sent.get(k) != v}
    if changed:
        for body in batches.log_batches(run_id, tags=changed):
            client.log_batch(body)
        cursor.tags_sent = tags
        save(cursor)
    _send_scalars(client, jobdir, cursor, save)
    for model in cursor.models:
        if not model.get("sent"):
            send_model_version(client, cursor, model)
            save(cursor)
    if not record.state.terminal:
        return
    _send_notebook(client, jobdir, cursor, save)
    status = batches.run_status(record.state)
    if cursor.status_sent != status:
        end = int(record.finished_at * 1000) if record.finished_at else None
        client.update_run(run_id, status, end)
        cursor.status_sent = status
    cursor.done = True
    save(cursor)


def _lineage(jobdir: JobDir) -> dict[str, Any] | None:
    try:
        return jobdir.read_lineage()
    except (OSError, ValueError):  # a lineage the job spoiled says nothing; the rest is sent
        return None


def _open_run(
    client: Client,
    experiment: str,
    record: JobRecord,
    lineage: dict[str, Any] | None,
    cursor: Cursor,
) -> None:
    cursor.experiment_id = client.experiment_id(experiment)
    info = client.find_run(cursor.experiment_id, batches.JOB_ID_TAG, record.id)
    if info is None:
        tags = batches.run_tags(record, lineage)
        info = client.create_run(
            {
                "experiment_id": cursor.experiment_id,
                "run_name": record.name,
                "start_time": int((record.started_at or record.created_at) * 1000),
                "tags": batches.as_pairs(tags),
            }
        )
        cursor.tags_sent = tags
    cursor.run_id, cursor.artifact_uri = info["run_id"], info["artifact_uri"]


def _send_scalars(client: Client, jobdir: JobDir, cursor: Cursor, save: Save) -> None:
    assert cursor.run_id is not None
    while True:
        rows, offset = jobdir.read_metrics(
            "scalars", cursor.scalars_offset, limit=batches.MAX_METRICS
        )
        if offset == cursor.scalars_offset:
            return
        found = batches.metrics(rows)
        for body in batches.log_batches(cursor.run_id, metrics=found):
            client.log_batch(body)
        cursor.scalars_offset, cursor.metrics_sent = offset, cursor.metrics_sent + len(found)
        save(cursor)


def _send_notebook(client: Client, jobdir: JobDir, cursor: Cursor, save: Save) -> None:
    """The executed notebook, as the run's artifact ``notebook.ipynb`` (again if it changed)."""
    try:
        data = confined.read_bytes(jobdir.root, NOTEBOOK, limit=MAX_NOTEBOOK_BYTES)
    except FileNotFoundError:
        return  # a script's job, or a job that never ran a cell
    except (OSError, ValueError) as error:  # a link or an oversized file: not sent, said why
        cursor.error = f"{NOTEBOOK} not sent: {error}"
        return
    digest = hashlib.sha256(data).hexdigest()
    if cursor.notebook_sha256 == digest:
        return
    assert cursor.artifact_uri is not None
    try:
        client.upload(cursor.artifact_uri, NOTEBOOK_ARTIFACT, io.BytesIO(data), len(data))
    except MlflowError as error:
        if error.code != "ARTIFACTS_NOT_PROXIED":
            raise
        cursor.error = str(error)  # the rest of the run is still mirrored
        return
    cursor.notebook_sha256 = digest
    save(cursor)
