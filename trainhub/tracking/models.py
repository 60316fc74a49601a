"""A model version registered in trainhub, mirrored as an MLflow model version of the job's run.

trainhub's registry calls :func:`queue_model_version` when it registers a version of a job
whose team mirrors into MLflow: the version is written into the job's cursor (durable; a done
cursor is opened again) and the next pass sends it — the files (when given) as artifacts of the
job's run under ``models/<name>/v<version>/``, the registered model if MLflow has none of that
name, and the model version whose source is those files (or the run's artifact root), tagged
with trainhub's version so that sending it twice makes one MLflow version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainhub.tracking import cursor as cursors
from trainhub.tracking.batches import JOB_ID_TAG, key
from trainhub.tracking.rest import Client, MlflowError

VERSION_TAG = "trainhub.model_version"


def queue_model_version(
    state: Path,
    job_id: str,
    name: str,
    version: int | str,
    *,
    files: Path | None = None,
    description: str = "",
) -> bool:
    """Queue trainhub's version ``version`` of model ``name``, made by job ``job_id``, for the
    mirror kept in ``state`` (``$TRAINHUB_HOME/mlflow`` locally, ``<team volume>/.trainhub/
    mlflow`` on a cluster). Returns at once, False when the job is not mirrored (its team has
    no MLflow server); nothing is sent here. ``files``: an absolute file or directory the
    registry keeps for the version."""
    if files is not None and not Path(files).is_absolute():
        raise ValueError(f"files: {files} must be an absolute path")
    found = cursors.load(state, job_id) if Path(state).is_dir() else None
    if found is None:
        return False
    if any(m["name"] == name and m["version"] == str(version) for m in found.models):
        return True
    found.models.append(
        {
            "name": name,
            "version": str(version),
            "files": str(files) if files is not None else None,
            "description": description,
            "sent": False,
        }
    )
    found.done, found.next_try = False, 0.0
    cursors.save(state, found)
    return True


def send_model_version(client: Client, cursor: cursors.Cursor, model: dict[str, Any]) -> None:
    """Send one queued version (:func:`queue_model_version`); marks it sent."""
    assert cursor.run_id is not None and cursor.artifact_uri is not None
    name, version = model["name"], model["version"]
    source = cursor.artifact_uri
    if model.get("files"):
        under = f"models/{key(name)}/v{version}"
        if not model.get("uploaded"):
            client.upload_tree(cursor.artifact_uri, Path(model["files"]), under)
            model["uploaded"] = True
        source = f"{cursor.artifact_uri}/{under}"
    try:
        client.call("registered-models/create", {"name": name})
    except MlflowError as e:
        if e.code != "RESOURCE_ALREADY_EXISTS":
            raise
    quoted = name.replace("'", "\\'")
    found = client.call(
        "model-versions/search", filter=f"name='{quoted}' and tags.`{VERSION_TAG}`='{version}'"
    ).get("model_versions")
    if not found:
        body = {
            "name": name,
            "source": source,
            "run_id": cursor.run_id,
            "description": model.get("description") or "",
            "tags": [
                {"key": VERSION_TAG, "value": version},
                {"key": JOB_ID_TAG, "value": cursor.job_id},
            ],
        }
        found = [client.call("model-versions/create", body)["model_version"]]
    model["sent"], model["mlflow_version"] = True, str(found[0]["version"])
