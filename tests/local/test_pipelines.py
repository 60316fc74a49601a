"""Pipelines on the local backend with real torchrun jobs: three notebooks passing outputs
along as one run; a second run of unchanged inputs reuses every result, a changed parameter
runs its step and those after it again, ``--no-cache`` runs everything; cancelling stops the
running step; a failed step stops what follows and a retry reruns from it, keeping what
succeeded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.local.conftest import Trainhub, job_processes, wait_for

pytestmark = pytest.mark.slow

PIPELINE = """\
parameters: {rows: 3, scale: 2, pause: 0, flag: ""}
steps:
  prepare:
    notebook: prepare.ipynb
    pipeline_parameters: [rows, pause]
    outputs: [data]
  train:
    notebook: train.ipynb
    pipeline_parameters: [scale]
    inputs: {data: prepare.data}
    outputs: [model.txt]
  evaluate:
    notebook: evaluate.ipynb
    pipeline_parameters: [flag]
    inputs: {model: train.model.txt}
    outputs: [score.txt]
"""

PREPARE = """\
import time, trainhub
time.sleep(pause)
out = trainhub.outputs.path() / "data"
out.mkdir()
(out / "rows.txt").write_text(str(rows))
print("prepared", rows)
"""
TRAIN = """\
import trainhub
rows = int((trainhub.datasets.path("data") / "rows.txt").read_text())
(trainhub.outputs.path() / "model.txt").write_text(str(rows * scale))
print("trained", rows * scale)
"""
EVALUATE = """\
import os, trainhub
if flag and os.path.exists(flag):
    raise RuntimeError("the flag file is there")
model = int(trainhub.datasets.path("model").read_text())
(trainhub.outputs.path() / "score.txt").write_text(str(model + 1))
print("evaluated", model)
"""


WAIT = """\
import trainhub
run = trainhub.PipelineRun("{run_id}").wait(timeout=240, interval=1)
print(run.state.value, run.retries)
"""


def write_pipeline(workspace: Path) -> str:
    for name, params, code in (
        ("prepare", "rows = 1\npause = 0", PREPARE),
        ("train", "scale = 1", TRAIN),
        ("evaluate", "flag = ''", EVALUATE),
    ):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell(params)
        cell.metadata["tags"] = ["parameters"]
        nb.cells = [cell, nbformat.v4.new_code_cell(code)]
        nbformat.write(nb, workspace / f"{name}.ipynb")
    (workspace / "flow.pipeline.yaml").write_text(PIPELINE)
    return "flow.pipeline.yaml"


def ended(th: Trainhub, run_id: str) -> dict[str, Any]:
    """The run once it ended; every CLI call reconciles, which advances it."""

    def done() -> dict[str, Any] | None:
        run = th.json("pipeline", "describe", run_id)
        return run if run["state"] != "running" else None

    return wait_for(done, timeout=300, what=f"pipeline run {run_id} to end", interval=1.0)


def steps_of(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["step"]: v for v in run["step_views"]}


def score(th: Trainhub, job_id: str) -> str:
    return (th.job_dir(job_id) / "outputs" / "score.txt").read_text()


def test_a_pipeline_runs_its_steps_as_jobs_and_reuses_unchanged_results(trainhub_env: Trainhub):
    th = trainhub_env
    file = write_pipeline(th.workspace)
    started = th.json("pipeline", "run", file, "-p", "rows=4")
    run_id = started["id"]
    assert [v["status"] for v in started["step_views"]] == ["active", "waiting", "waiting"]
    assert steps_of(started)["train"]["reason"] == "waits for prepare"

    first = steps_of(ended(th, run_id))
    assert [first[s]["status"] for s in ("prepare", "train", "evaluate")] == ["succeeded"] * 3
    assert score(th, first["evaluate"]["job_id"]) == "9"  # 4 rows * 2 + 1: outputs went along
    # Every step is an ordinary job, linked to its run, with the run in its lineage.
    jobs = [j for j in th.json("jobs")["jobs"] if j["pipeline_run"] == run_id]
    assert sorted(j["id"] for j in jobs) == sorted(v["job_id"] for v in first.values())
    train = th.describe(first["train"]["job_id"])
    assert train["spec"]["pipeline"] == {"run": run_id, "step": "train", "name": "flow"}
    assert train["lineage"]["pipeline"] == {"run": run_id, "step": "train", "name": "flow"}
    assert train["spec"]["parameters"] == {"scale": 2}
    assert "trained 8" in th.logs(first["train"]["job_id"])
    # An input is read-only, as a dataset is: the upstream step's result is kept as it was.
    assert train["lineage"]["datasets"][0]["name"] == "data"

    # Unchanged inputs: every step reuses the first run's results, no job is made.
    again = th.json("pipeline", "run", file, "-p", "rows=4")
    assert again["state"] == "succeeded"
    views = steps_of(again)
    for step in ("prepare", "train", "evaluate"):
        assert views[step]["status"] == "reused"
        assert views[step]["reused_from"] == first[step]["job_id"]
        assert views[step]["reason"] == f"reused from {first[step]['job_id']}"
    assert again["reused"] == ["prepare", "train", "evaluate"]
    assert not [j for j in th.json("jobs")["jobs"] if j["pipeline_run"] == again["id"]]
    # Run again by the run's id: its pipeline and parameters, so its results are reused too.
    rerun = th.json("pipeline", "run", "--from", run_id)
    assert rerun["started_from"] == run_id and rerun["parameters"] == again["parameters"]
    assert rerun["reused"] == ["prepare", "train", "evaluate"]
    refused = th.run("pipeline", "run", file, "--from", run_id, check=False)
    assert refused.returncode != 0 and "or --from an earlier run" in refused.stderr

    # A parameter of train changed: prepare is reused, train and evaluate run again.
    changed = ended(th, th.json("pipeline", "run", file, "-p", "rows=4", "-p", "scale=3")["id"])
    views = steps_of(changed)
    assert views["prepare"]["status"] == "reused"
    assert views["train"]["status"] == views["evaluate"]["status"] == "succeeded"
    assert score(th, views["evaluate"]["job_id"]) == "13"
    listed = th.run("pipeline", "list").stdout
    assert changed["id"] in listed and "prepare,train,evaluate" in listed

    # No cache: the first step runs again, and cancelling the run stops it.
    fresh = th.json("pipeline", "run", file, "-p", "rows=4", "-p", "pause=60", "--no-cache")
    prepare = steps_of(fresh)["prepare"]
    assert prepare["status"] == "active" and prepare["job_id"] != first["prepare"]["job_id"]
    wait_for(
        lambda: th.describe(prepare["job_id"])["state"] == "running",
        timeout=120,
        what="the step to run",
    )
    cancelled = th.json("pipeline", "cancel", fresh["id"])
    assert cancelled["state"] == "cancelled"
    job = th.wait(prepare["job_id"])
    assert job["state"] == "cancelled" and not job_processes(prepare["job_id"])
    after = th.json("pipeline", "describe", fresh["id"])  # reconciled: nothing more started
    views = steps_of(after)
    assert views["prepare"]["status"] == "cancelled"
    assert views["train"]["status"] == "not_run"
    assert views["train"]["reason"] == "not run: step prepare did not finish"


def test_a_failed_step_stops_what_follows_and_a_retry_reruns_from_it(
    trainhub_env: Trainhub, tmp_path: Path
):
    th = trainhub_env
    file = write_pipeline(th.workspace)
    flag = tmp_path / "flag"
    flag.write_text("fail")
    run_id = th.json("pipeline", "run", file, "-p", f"flag={flag}")["id"]
    failed = ended(th, run_id)
    assert failed["state"] == "failed" and failed["failed"] == ["evaluate"]
    views = steps_of(failed)
    assert views["evaluate"]["failure_class"] == "code"
    assert "the flag file is there" in views["evaluate"]["reason"]
    kept = {s: views[s]["job_id"] for s in ("prepare", "train")}

    flag.unlink()  # what made it fail is gone
    retried = th.json("pipeline", "retry", run_id)
    assert retried["state"] == "running" and retried["retries"] == 1
    # The Python API follows it to its end (reconciling as the CLI does).
    waited = subprocess.run(
        [sys.executable, "-c", WAIT.format(run_id=run_id)],
        cwd=th.workspace,
        env=th.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert waited.returncode == 0 and waited.stdout.split() == ["succeeded", "1"], waited.stderr
    done = steps_of(th.json("pipeline", "describe", run_id))
    assert {s: done[s]["job_id"] for s in ("prepare", "train")} == kept  # kept, not rerun
    assert done["evaluate"]["status"] == "succeeded"
    assert done["evaluate"]["job_id"] != views["evaluate"]["job_id"]
    assert score(th, done["evaluate"]["job_id"]) == "7"
    refused = th.run("pipeline", "retry", run_id, check=False)
    assert refused.returncode == 1 and "only a failed or cancelled run is retried" in refused.stderr
