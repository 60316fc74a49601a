"""Team visibility through the real hub: bo and cy (team nlp) and ada (team vision), each on a
session server the hub spawned, each request a real HTTP request through the proxy.

bo's job is private until bo shares it; then cy reads it (list, job, logs, metrics,
checkpoints, executed notebook, compare), runs it again as a job of cy's own, and is refused
(403) anything that changes it; ada never sees it (404, the sentence an unknown id gets).
kwok runs no containers, so the test writes what the job's rank 0 would (a log line, a scalar,
a checkpoint, the executed notebook) into the job directory on the team's volume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
import requests
import torch
import yaml
from nbformat.v4 import new_code_cell, new_notebook, new_output

import trainhub.checkpoint as ckpt
from tests.hub.conftest import HubWorld
from trainhub.jobs.directory import JobDir, append_jsonl

pytestmark = pytest.mark.timeout(600)
SERVER = "share"  # a named server each: the e2e tests' default servers are left alone
TEAMS = {"bo": "nlp", "cy": "nlp", "ada": "vision"}
NOTEBOOK = "tiny.ipynb"


class Session:
    """One user's requests to their own session server, through the hub's proxy."""

    def __init__(self, world: HubWorld, user: str):
        self.user = user
        self.base = f"{world.hub.url}/user/{user}/{SERVER}"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {world.hub.user_token(user)}"

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.http.request(method, f"{self.base}/trainhub/api/{path}", timeout=60, **kwargs)

    def put_notebook(self) -> None:
        nb = new_notebook(cells=[new_code_cell("import trainhub\ntrainhub.log(step=1, loss=0.5)")])
        r = self.http.put(
            f"{self.base}/api/contents/{NOTEBOOK}",
            json={"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))},
            timeout=60,
        )
        assert r.status_code in (200, 201), r.text

    def submit(self, name: str) -> str:
        r = self.api(
            "POST", "jobs", json={"name": name, "source": {"path": NOTEBOOK}, "resources": {}}
        )
        assert r.status_code == 201, r.text
        assert r.json()["user"] == self.user and r.json()["shared"] == "private"
        return r.json()["id"]

    def listed(self) -> dict[str, dict[str, Any]]:
        r = self.api("GET", "jobs")
        assert r.status_code == 200, r.text
        return {j["id"]: j for j in r.json()["jobs"]}


@pytest.fixture(scope="module")
def sessions(hub_world: HubWorld) -> dict[str, Session]:
    """A session server without GPUs for each of the three users, in their team's namespace."""
    hub = hub_world.hub
    for user, team in TEAMS.items():
        r = hub.api(
            "POST",
            f"/users/{user}/servers/{SERVER}",
            json={"profile": f"{team}.t4", "gpus": "0"},
        )
        assert r.status_code in (201, 202), r.text
    for user in TEAMS:
        hub.wait_ready(user, SERVER)
    out = {user: Session(hub_world, user) for user in TEAMS}
    for s in out.values():
        s.put_notebook()
    yield out
    for user in TEAMS:
        hub.api("DELETE", f"/users/{user}/servers/{SERVER}")


def jobs_root(world: HubWorld, team: str) -> Path:
    teams = yaml.safe_load(world.teams_file.read_text())["teams"]
    mount = next(t for t in teams if t["name"] == team)["shared_volume"]["mount_path"]
    return Path(mount) / "jobs"


def write_rank_files(job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What rank 0 of the job writes, with the library the ranks use where it has one."""
    jobdir = JobDir(job_dir)
    jobdir.logs.mkdir(parents=True, exist_ok=True)
    (jobdir.rank_log(0)).write_text("hello from bo's job\n")
    append_jsonl(jobdir.metrics / "scalars.jsonl", {"step": 1, "name": "loss", "value": 0.5})
    monkeypatch.delenv("TRAINHUB_JOB_DIR", raising=False)
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(jobdir.checkpoints))
    ckpt.save({"w": torch.ones(3)}, 1, metrics={"loss": 0.5})
    cell = new_code_cell("print('hi')", execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text="hi\n")]
    nbformat.write(new_notebook(cells=[cell]), job_dir / "notebook.ipynb")


def test_a_job_is_private_until_shared_then_read_only_for_the_team_only(
    hub_world: HubWorld, sessions: dict[str, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    bo, cy, ada = sessions["bo"], sessions["cy"], sessions["ada"]
    job = bo.submit("shared-run")
    mine = cy.submit("cy-run")
    job_dir = jobs_root(hub_world, "nlp") / job
    assert job_dir.is_dir()
    write_rank_files(job_dir, monkeypatch)

    # private by default: the teammate and the other team alike see nothing
    for other in (cy, ada):
        r = other.api("GET", f"jobs/{job}")
        assert r.status_code == 404 and r.json()["message"] == f"No job {job}."
        assert job not in other.listed()
    assert mine not in bo.listed()

    # only the owner shares it
    r = cy.api("PATCH", f"jobs/{job}", json={"shared": "team"})
    assert r.status_code == 404, r.text
    r = bo.api("PATCH", f"jobs/{job}", json={"shared": "team"})
    assert r.status_code == 200, r.text
    assert r.json()["shared"] == "team"
    assert json.loads((job_dir / "edits.json").read_text())["shared"] == "team"

    # the teammate reads everything of it
    listed = cy.listed()
    assert listed[job]["user"] == "bo" and listed[job]["shared"] == "team"
    assert listed[mine]["user"] == "cy" and listed[mine]["shared"] == "private"
    r = cy.api("GET", f"jobs/{job}")
    assert r.status_code == 200 and r.json()["user"] == "bo"
    r = cy.api("GET", f"jobs/{job}/logs/0")
    assert r.status_code == 200 and r.json()["text"] == "hello from bo's job\n"
    r = cy.api("GET", f"jobs/{job}/metrics/scalars")
    assert r.status_code == 200
    assert [(m["name"], m["value"]) for m in r.json()["records"]] == [("loss", 0.5)]
    r = cy.api("GET", f"jobs/{job}/checkpoints")
    assert r.status_code == 200 and [c["step"] for c in r.json()["checkpoints"]] == [1]
    r = cy.api("GET", f"jobs/{job}/checkpoints/1/files/state.pt")
    assert r.status_code == 200
    assert r.content == (job_dir / "checkpoints" / "0000000001" / "state.pt").read_bytes()
    assert r.headers["Content-Disposition"] == "attachment; filename*=UTF-8''state.pt"
    r = cy.api("GET", f"jobs/{job}/notebook")
    assert r.status_code == 200
    assert "".join(r.json()["cells"][0]["outputs"][0]["text"]) == "hi\n"
    r = cy.api("GET", "compare", params={"ids": f"{job},{mine}"})
    assert r.status_code == 200, r.text
    assert [j["id"] for j in r.json()["jobs"]] == [job, mine]

    # ... and changes nothing of it
    before = (job_dir / "edits.json").read_bytes()
    for method, path, body in (
        ("POST", f"jobs/{job}/cancel", {}),
        ("PATCH", f"jobs/{job}", {"tags": ["mine"]}),
        ("PATCH", f"jobs/{job}", {"shared": "private"}),
        ("DELETE", f"jobs/{job}/checkpoints/1", None),
    ):
        r = cy.api(method, path, json=body)
        assert r.status_code == 403, (method, path, r.text)
        assert f"Job {job} is bo's, shared with team nlp to read" in r.json()["message"]
    assert (job_dir / "edits.json").read_bytes() == before
    assert (job_dir / "checkpoints" / "0000000001").is_dir()
    assert bo.api("GET", f"jobs/{job}").json()["state"] != "cancelled"

    # running it again makes a job of the teammate's own
    r = cy.api("POST", f"jobs/{job}/resubmit", json={})
    assert r.status_code == 201, r.text
    again = r.json()
    assert again["user"] == "cy" and again["resubmitted_from"] == job
    assert again["shared"] == "private" and again["name"] == "shared-run-2"
    assert again["id"] not in bo.listed()

    # the other team: not a word of it, whatever it asks
    for method, path in (
        ("GET", f"jobs/{job}"),
        ("GET", f"jobs/{job}/logs/0"),
        ("GET", f"jobs/{job}/metrics/scalars"),
        ("GET", f"jobs/{job}/checkpoints/1/files/state.pt"),
        ("GET", f"jobs/{job}/notebook"),
        ("POST", f"jobs/{job}/resubmit"),
        ("POST", f"jobs/{job}/cancel"),
        ("PATCH", f"jobs/{job}"),
    ):
        body = {"shared": "private"} if method == "PATCH" else {}
        r = ada.api(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["message"] == f"No job {job}.", r.text
    assert job not in ada.listed()
    r = ada.api("GET", "compare", params={"ids": f"{job},{mine}"})
    assert r.status_code == 404 and job in r.json()["message"] and "bo" not in r.json()["message"]
    # nor by asking bo's server: the hub lets no one but bo in
    r = requests.get(
        f"{bo.base}/trainhub/api/jobs/{job}",
        headers={"Authorization": ada.http.headers["Authorization"]},
        timeout=60,
        allow_redirects=False,
    )
    assert r.status_code in (302, 403, 404), r.status_code
    assert "shared-run" not in r.text

    # a path in place of an id is no job, for a teammate too
    for weird in ("..", "%2e%2e", f"..%2F{job}"):
        r = cy.api("GET", f"jobs/{weird}")
        assert r.status_code == 404, (weird, r.text)

    # private again: the teammate is back to nothing
    r = bo.api("PATCH", f"jobs/{job}", json={"shared": "private"})
    assert r.status_code == 200 and r.json()["shared"] == "private"
    assert cy.api("GET", f"jobs/{job}").status_code == 404
    assert cy.api("GET", f"jobs/{job}/logs/0").status_code == 404
    assert job not in cy.listed()
