"""GET /trainhub/api/compare over real jobs: three runs of two notebooks side by side, the
user's own jobs only, the number of jobs and the goals checked naming the field; and the CLI's
table of the same jobs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

import trainhub
from tests.server.conftest import OTHER, insert_job, spec
from tests.server.test_jobs import wait_for_state
from trainhub import cli
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState


def other_notebook(root: Path) -> None:
    """tiny.ipynb without its heading, its last cell changed (it logs a second scalar) and a
    cell added."""
    cell = new_code_cell("lr = 0.1\nepochs = 2\nshape = (3, 4)")
    cell.metadata["tags"] = ["parameters"]
    source = (
        "import trainhub\nprint('hello again', lr)\n"
        "trainhub.log(step=0, loss=1.5)\ntrainhub.log(step=1, loss=0.75, accuracy=0.5)"
    )
    cells = [cell, new_code_cell(source), new_code_cell("print('done')")]
    nbformat.write(new_notebook(cells=cells), root / "tiny2.ipynb")


async def run_jobs(api: Any, bodies: list[dict[str, Any]]) -> list[str]:
    ids = []
    for body in bodies:
        status, job, _ = await api("POST", "jobs", body=body)
        assert status == 201, job
        ids.append(job["id"])
    for job_id in ids:
        job = await wait_for_state(api, job_id, {"succeeded", "failed"}, timeout=240)
        assert job["state"] == "succeeded", job["verdict"]
    return ids


async def test_three_real_runs_side_by_side(
    api: Any, workspace: Path, server_service: JobService, capsys: Any
) -> None:
    other_notebook(workspace)
    a, b, c = await run_jobs(
        api,
        [
            spec(parameters={"lr": 0.25}),
            spec(parameters={"lr": 0.5}),
            spec("tiny2.ipynb", parameters={"lr": 0.25, "epochs": 4}),
        ],
    )
    status, result, _ = await api("GET", "compare", params={"ids": f"{a},{b},{c}"})
    assert status == 200, result
    assert [j["id"] for j in result["jobs"]] == [a, b, c]
    assert all(j["state"] == "succeeded" and j["verdict"] is None for j in result["jobs"])
    assert all(j["elapsed_s"] > 0 for j in result["jobs"])
    params = {r["name"]: r for r in result["parameters"]}
    assert params["lr"]["values"] == [0.25, 0.5, 0.25] and params["lr"]["differs"]
    assert params["epochs"]["values"] == [None, None, 4]

    lineage = {r["name"]: r for r in result["lineage"]}
    assert lineage["source"]["values"] == ["tiny.ipynb", "tiny.ipynb", "tiny2.ipynb"]
    sha = lineage["notebook sha256"]["values"]
    assert sha[0] == sha[1] != sha[2] and lineage["notebook sha256"]["differs"]
    assert not lineage["python"]["differs"] and result["packages"] == []
    assert result["packages_same"] > 10

    # Same notebook, other parameters: the same code (the injected cell is the parameters).
    same, changed = result["code"]
    assert (same["job_id"], same["against"], same["identical"]) == (b, a, True)
    assert changed["job_id"] == c and not changed["identical"]
    assert [(ch["change"], ch["before"], ch["after"]) for ch in changed["changes"]] == [
        ("changed", 2, 1),  # cell indices count the heading tiny.ipynb has and tiny2 lacks
        ("added", None, 2),
    ]
    edit = changed["changes"][0]
    assert "-print('hello from the job', lr)" in edit["diff"]
    assert "+print('hello again', lr)" in edit["diff"]

    scalars = {s["name"]: s for s in result["scalars"]}
    assert scalars["loss"]["goal"] == "min" and scalars["loss"]["best_job"] == c
    assert [p["value"] for p in scalars["loss"]["last"]] == [1.5, 1.5, 0.75]
    assert scalars["accuracy"]["goal"] == "max"
    assert scalars["accuracy"]["last"][:2] == [None, None]
    series = {(s["job_id"], s["name"]): s for s in result["series"]}
    assert [p[0] for p in series[(c, "loss")]["points"]] == [0, 1]
    assert series[(a, "loss")]["points"][0][2] == 1.5

    # A quick answer without scalars (the view's first paint), the rest alike.
    status, quick, _ = await api(
        "GET", "compare", params={"ids": f"{a},{b},{c}", "scalars": "false"}
    )
    assert status == 200 and quick["scalars"] == [] and quick["series"] == []
    assert quick["parameters"] == result["parameters"] and quick["code"] == result["code"]

    # Goals overridable; curves left out on request.
    status, flipped, _ = await api(
        "GET", "compare", params={"ids": f"{a},{c}", "goal": "loss:max", "series": "false"}
    )
    assert status == 200, flipped
    assert flipped["series"] == [] and flipped["scalars"][-1]["best_job"] == a

    # The Python API answers the same comparison.
    same_again = trainhub.compare(a, b, c, goals={"loss": "max"}, points=4)
    assert [j.id for j in same_again.jobs] == [a, b, c]
    assert same_again.scalars[-1].goal == "max" and same_again.scalars[-1].best_job == a

    # The CLI says the same, differing rows first.
    assert cli.main(["compare", a, b, c]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    lr = next(line for line in lines if line.strip().startswith("lr"))
    assert "≠" in lr and "0.25" in lr and "0.5" in lr
    param_rows = lines[lines.index("PARAMETERS") + 1 :]
    assert param_rows[0].strip().startswith(("epochs", "lr"))  # differing first
    assert "1 changed, 1 added" in table


async def test_only_the_users_own_jobs_and_two_to_ten(
    api: Any, server_service: JobService, finished_job: str
) -> None:
    theirs = insert_job(server_service, user=OTHER, state=JobState.SUCCEEDED, name="secretive")
    status, error, _ = await api("GET", "compare", params={"ids": f"{finished_job},{theirs.id}"})
    assert status == 404, error
    assert error["message"] == f"No job {theirs.id}."
    assert OTHER not in str(error) and str(theirs.job_dir) not in str(error)

    for ids in (
        finished_job,
        f"{finished_job},{finished_job}",
        ",".join(["x"] * 3 + list("abcdefghij")),
    ):
        status, error, _ = await api("GET", "compare", params={"ids": ids})
        assert status == 400, (ids, error)
        assert [e["field"] for e in error["errors"]] == ["ids"]
    bad = {"goal": ("loss:least", "goal"), "points": ("2", "points"), "ids": ("", "ids")}
    for name, (value, field) in bad.items():
        params = {"ids": f"{finished_job},x", name: value}
        status, error, _ = await api("GET", "compare", params=params)
        assert status == 400, (name, error)
        assert [e["field"] for e in error["errors"]] == [field]
    await asyncio.sleep(0)
