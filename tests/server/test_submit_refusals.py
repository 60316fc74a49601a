"""What a researcher sees when a submit is refused, through the real server: the field or file
named, never a path of the server's, and nothing the refusal could tell about files outside
the workspace."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.server.conftest import NOTEBOOK, spec
from trainhub.bundle.layout import MANIFEST
from trainhub.jobs.service import JobService
from trainhub_server.error_map import error_response

# An absolute path in a sentence (not "0/1", not "http://x/y").
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/[\w.-]+/")


async def dry_run(api: Any, body: Any) -> tuple[int, Any]:
    status, answer, _ = await api("POST", "jobs", body=body, params={"dry_run": "1"})
    return status, answer


def fields(error: dict[str, Any]) -> dict[str, str]:
    return {e["field"]: e["message"] for e in error["errors"]}


async def test_refusals_carry_no_server_path(
    api: Any, workspace: Path, tmp_path: Path, trainhub_home: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), outside / "nb.ipynb")
    (workspace / "escape.ipynb").symlink_to(outside / "nb.ipynb")
    nbformat.write(
        new_notebook(cells=[new_code_cell(f"%pip install -r {outside}/requirements.txt")]),
        workspace / "pip.ipynb",
    )
    bodies = [
        spec("missing.ipynb"),
        spec("../outside/nb.ipynb"),
        spec("escape.ipynb"),
        spec("pip.ipynb"),
        spec(datasets=[{"name": "d", "path": str(outside)}]),
        spec(datasets=[{"name": "d", "path": str(workspace / "absent")}]),
        spec(parameters={"learning_rate": 0.1}),
        spec(fork_from={"job_id": "no-such-job"}),
        spec(resume_from={"job_id": "no-such-job"}),  # its older spelling
    ]
    for body in bodies:
        status, error = await dry_run(api, body)
        assert status in (400, 404), (body, status, error)
        text = json.dumps(error)
        for server_path in (str(tmp_path), str(workspace), str(trainhub_home)):
            assert server_path not in text, (body, error)
        assert not ABSOLUTE.search(text), (body, error)
    for parts in (("jobs", "no-such-job"), ("jobs", "no-such-job", "logs", "0")):
        status, error, _ = await api("GET", *parts)
        assert status == 404 and not ABSOLUTE.search(json.dumps(error)), error


def test_the_error_map_cuts_any_server_path_left_in_a_sentence() -> None:
    status, body, _ = error_response(ValueError("'/srv/trainhub/jobs/x-1/spec.json' is broken"))
    assert status == 400 and body["message"] == "'spec.json' is broken"


async def test_a_dataset_outside_the_roots_is_refused_alike_whether_it_exists_or_not(
    api: Any, workspace: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    monkeypatch.setenv("TRAINHUB_DATASET_ROOTS", str(data))
    answers = []
    for path in ("/etc/passwd", "/etc/no-such-file-anywhere", f"{data}/../../../etc/passwd"):
        status, error = await dry_run(api, spec(datasets=[{"name": "d", "path": path}]))
        assert status == 400, error
        answers.append(error)
    assert answers[0] == answers[1] == answers[2]
    message = fields(answers[0])["datasets.0.path"]
    assert "outside the dataset roots" in message and "etc" not in message
    assert str(data) in message  # the roots an admin names are for users to know

    for path in (str(data / "train"), str(workspace)):
        status, answer = await dry_run(api, spec(datasets=[{"name": "d", "path": path}]))
        assert (status, answer) == (200, {"valid": True, "warnings": []}), answer
    status, error = await dry_run(api, spec(datasets=[{"name": "d", "path": f"{data}/none"}]))
    assert status == 400 and fields(error)["datasets.0.path"] == (
        f"dataset d: no such path {data}/none"
    )


async def test_an_unknown_parameter_is_refused_with_the_names_the_notebook_assigns(
    api: Any,
) -> None:
    status, error = await dry_run(api, spec(parameters={"lr": 0.2, "learning_rate": 0.1}))
    assert status == 400, error
    message = fields(error)["parameters.learning_rate"]
    assert "which assigns epochs, lr, shape" in message and "allow_new_parameters" in message
    status, answer = await dry_run(
        api, spec(parameters={"learning_rate": 0.1}, allow_new_parameters=True)
    )
    assert status == 200, answer
    (warning,) = answer["warnings"]  # allowed, and the dry run still says so
    assert "parameter 'learning_rate' is not assigned" in warning
    status, answer = await dry_run(api, spec(parameters={"lr": 0.2, "epochs": 1}))
    assert (status, answer) == (200, {"valid": True, "warnings": []})


async def test_a_notebook_of_another_kernel_is_refused_naming_it(api: Any, workspace: Path) -> None:
    nb = new_notebook(cells=[new_code_cell("x <- 1")])
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    nbformat.write(nb, workspace / "analysis.ipynb")
    status, error = await dry_run(api, spec("analysis.ipynb"))
    assert status == 400, error
    assert fields(error)["source"] == (
        "analysis.ipynb is a notebook for the 'R' kernel (R); trainhub runs Python notebooks only"
    )
    status, error, _ = await api("GET", "notebook", "parameters", params={"path": "analysis.ipynb"})
    assert status == 400 and "'R' kernel" in error["message"]


async def test_parameter_names_and_values_are_refused_naming_the_field(api: Any) -> None:
    for parameters, words in (
        ({"class": 1}, "'class' is a Python keyword"),
        ({"not-a-name": 1}, "is not a Python identifier"),
        ({"lr": float("inf")}, "lr: NaN and infinity"),
    ):
        status, error = await dry_run(api, json.dumps(spec(parameters=parameters)))
        assert status == 400 and words in fields(error)["parameters"], error


async def test_a_link_at_the_workspace_root_is_left_out_and_noted(
    api: Any, workspace: Path, tmp_path: Path, server_service: JobService
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("not for the job")
    (workspace / "data").symlink_to(elsewhere)
    (workspace / "notes.txt").symlink_to(elsewhere / "secret.txt")
    status, answer = await dry_run(api, spec())
    assert status == 200 and answer["valid"] is True, answer
    # The researcher reads the notes before submitting, not only in the job's bundle.
    assert "data is a link to a directory; not followed" in answer["warnings"]
    assert "notes.txt is a link out of the workspace; left out" in answer["warnings"]

    status, job, _ = await api("POST", "jobs", body=spec())
    assert status == 201, job
    bundle = server_service.jobdir(job["id"]).bundle
    warnings = json.loads((bundle / MANIFEST).read_text())["warnings"]
    assert "data is a link to a directory; not followed" in warnings
    assert "notes.txt is a link out of the workspace; left out" in warnings
    copied = {p.name for p in (bundle / "workspace").rglob("*")}
    assert copied.isdisjoint({"data", "notes.txt", "secret.txt", NOTEBOOK})
    await api("POST", "jobs", job["id"], "cancel", body={})


async def test_an_image_the_policy_does_not_allow_is_refused_with_a_403_and_makes_no_job(
    api: Any, tmp_path: Path, trainhub_home: Path, monkeypatch: Any
) -> None:
    images_file = tmp_path / "images.yaml"
    images_file.write_text(
        "images: [{name: base, image: 'ghcr.io/trainhub/base:0.1.0'}]\n"
        "image_policy: {policy: catalog}\n"
    )
    monkeypatch.setenv("TRAINHUB_IMAGES_FILE", str(images_file))
    jobs = trainhub_home / "jobs"
    before = sorted(jobs.iterdir()) if jobs.exists() else []
    sentence = (
        "image 'docker.io/evil/miner:1' is not allowed: this installation allows its catalog "
        "images only (base)"
    )
    for params in ({"dry_run": "1"}, {}):
        status, error, _ = await api(
            "POST", "jobs", body=spec(image="docker.io/evil/miner:1"), params=params
        )
        assert (status, error["message"]) == (403, sentence)
    assert (sorted(jobs.iterdir()) if jobs.exists() else []) == before
    status, _ = await dry_run(api, spec(image="base"))
    assert status == 200
    # The dialog offers the local catalog's images, less one whose scan failed.
    images_file.write_text(
        "images:\n  - {name: base, image: 'ghcr.io/trainhub/base:0.1.0', description: B}\n"
        "  - {name: old, image: 'ghcr.io/trainhub/old:1', scan: {status: failed}}\n"
    )
    status, config, _ = await api("GET", "config")
    assert status == 200
    assert config["images"] == [
        {"name": "base", "image": "ghcr.io/trainhub/base:0.1.0", "description": "B"}
    ]


async def test_memory_beyond_the_machine_is_a_400_naming_the_field(api: Any) -> None:
    status, error = await dry_run(api, spec(resources={"memory": "1e30Ti"}))
    assert status == 400 and "resources.memory" in fields(error), error  # not a quantity
    status, error = await dry_run(
        api, spec(resources={"processes_per_worker": 1, "memory": "999999Ti"})
    )
    assert status == 400, error
    assert (
        fields(error)["resources.memory"]
        == "'999999Ti' is more than 1Pi, more than any machine has"
    )
    status, error = await dry_run(
        api, spec(resources={"processes_per_worker": 1, "memory": "900Ti"})
    )
    assert status == 400, error
    assert "more than this machine offers one worker" in fields(error)["resources.memory"]
    status, error = await dry_run(api, spec(resources={"processes_per_worker": 1, "memory": "1Gi"}))
    assert status == 200, error
