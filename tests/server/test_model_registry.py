"""The model registry's routes on a real Jupyter server with the real local backend: register
a job's output and its outputs folder, read models, versions (metrics, lineage) and the audit
log, move aliases, archive; a protected alias refused naming the role; bad input names the
field; another user's job is not found."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import OTHER, USER, insert_job
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


def job_with_outputs(service: JobService, user: str = USER) -> str:
    record = insert_job(service, user=user, state=JobState.SUCCEEDED, name="train")
    root = Path(record.job_dir)
    (root / "outputs").mkdir(exist_ok=True)
    (root / "outputs" / "model.pt").write_bytes(b"weights")
    (root / "metrics").mkdir(exist_ok=True)
    (root / "metrics" / "scalars.jsonl").write_text(
        json.dumps({"step": 5, "name": "val_acc", "value": 0.75, "rank": 0}) + "\n"
    )
    return record.id


@pytest.fixture
def models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "models.yaml"
    monkeypatch.setenv("TRAINHUB_MODELS_FILE", str(path))
    return path


def name() -> str:
    return f"clf-{os.urandom(3).hex()}"


async def put_alias(api: Any, model: str, alias: str, body: dict[str, Any]) -> tuple[int, Any]:
    """PUT registry/models/<model>/aliases/<alias>: the status and the answer."""
    status, answer, _ = await api("PUT", "registry", "models", model, "aliases", alias, body=body)
    return status, answer


async def test_register_read_move_aliases_and_archive(
    api: Any, server_service: JobService, models_file: Path
) -> None:
    job = job_with_outputs(server_service)
    model = name()
    status, one, _ = await api(
        "POST", "registry", "models", body={"name": model, "from": f"{job}:model.pt"}
    )
    assert status == 201, one
    assert (one["version"], one["user"], one["source"]["kind"]) == (1, USER, "output")
    assert one["files"] == {**one["files"], "files": 1, "linked": 1, "single": "model.pt"}
    assert one["metrics"] == {"val_acc": 0.75} and one["lineage"]["job"]["id"] == job
    status, two, _ = await api(
        "POST", "registry", "models", body={"name": model, "from": job, "description": "all"}
    )
    assert status == 201 and two["version"] == 2 and two["source"]["kind"] == "outputs"

    status, listed, _ = await api("GET", "registry", "models")
    assert status == 200
    assert {"name": model, "versions": 2, "latest": 2} in [
        {k: m[k] for k in ("name", "versions", "latest")} for m in listed["models"]
    ]
    status, version, _ = await api("GET", "registry", "models", model, "versions", "1")
    assert status == 200 and version["load"] == f"trainhub.models.load('{model}/1')"

    status, moved = await put_alias(api, model, "staging", {"version": 1, "reason": "ok"})
    assert status == 200 and moved["aliases"] == {"staging": 1}

    # production is the admin's to grant: alice does not hold the role.
    models_file.write_text("models:\n  roles: {model-approver: [bob]}\n")
    status, refused = await put_alias(api, model, "production", {"version": 2})
    assert status == 403
    assert (
        "needs the role model-approver" in refused["message"]
        and "held by bob" in refused["message"]
    )
    models_file.write_text(f"models:\n  roles: {{model-approver: [bob, {USER}]}}\n")
    status, moved = await put_alias(api, model, "production", {"version": 2, "reason": "ship"})
    assert status == 200 and moved["aliases"] == {"production": 2, "staging": 1}

    status, conflict, _ = await api(
        "POST", "registry", "models", model, "versions", "1", "archive", body={"reason": "old"}
    )
    assert status == 409 and "@staging" in conflict["message"]
    status, _ = await put_alias(api, model, "staging", {"version": None})
    assert status == 200
    status, archived, _ = await api(
        "POST", "registry", "models", model, "versions", "1", "archive", body={"reason": "old"}
    )
    assert status == 200 and [v["archived"] for v in archived["versions"]] == [False, True]
    audit = [(a["event"], a.get("alias"), a["previous"], a["version"]) for a in archived["audit"]]
    assert audit == [
        ("version", None, None, 1),
        ("version", None, None, 2),
        ("alias", "staging", None, 1),
        ("alias", "production", None, 2),
        ("alias", "staging", 1, 0),
        ("archive", None, None, 1),
    ]
    assert all(a["user"] == USER for a in archived["audit"])


async def test_bad_input_names_the_field_and_others_jobs_are_not_found(
    api: Any, server_service: JobService
) -> None:
    job = job_with_outputs(server_service)
    status, bad, _ = await api("POST", "registry", "models", body={"name": "a.b", "from": job})
    assert status == 400 and bad["errors"][0]["field"] == "name"
    status, bad, _ = await api("POST", "registry", "models", body={"name": "x", "from": "No"})
    assert status == 400 and bad["errors"][0]["field"] == "from"
    status, bad, _ = await api("POST", "registry", "models", body={"name": "x"})
    assert status == 400 and bad["errors"][0]["field"] == "from"
    status, missing, _ = await api(
        "POST", "registry", "models", body={"name": "x", "from": f"{job}:nothing.pt"}
    )
    assert status == 404 and "no output nothing.pt" in missing["message"]
    theirs = job_with_outputs(server_service, user=OTHER)
    status, _, _ = await api("POST", "registry", "models", body={"name": "x", "from": theirs})
    assert status == 404
    status, bad, _ = await api("GET", "registry", "models", "x", "versions", "v1")
    assert status == 400 and bad["errors"][0]["field"] == "version"
    status, _, _ = await api("GET", "registry", "models", name())
    assert status == 404
    status, bad = await put_alias(api, "x", "Prod", {"version": 1})
    assert status == 400 and bad["errors"][0]["field"] == "alias"
