"""A sweep on a cluster runs to its end with nobody logged in: a session creates it (it sees
the workspace, and freezes it beside the jobs), then the controller alone submits every later
trial from that frozen workspace; the session's workspace is gone by then. kwok plays the pods."""

from __future__ import annotations

import json
import shutil
from typing import Any

import nbformat

from tests.k8s import test_controller as controller
from tests.k8s.test_backend import Team, wait_for
from trainhub.experiments.records import SweepState, sweeps_home
from trainhub.jobs.states import JobState

world = controller.world  # the team, and the controller's objects applied from the teams file


def notebook(team: Team) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("lr = 0.1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print('original', lr)")]
    nbformat.write(nb, team.service.workspace_root / "train.ipynb")  # type: ignore[operator]


def test_with_nobody_logged_in_a_four_trial_sweep_runs_to_its_end(
    world: tuple[Team, controller.Deployment],
) -> None:
    team, deployment = world
    notebook(team)
    created = team.service.create_sweep(
        {
            "job": {
                "name": "lr",
                "source": {"path": "train.ipynb"},
                "team": team.ns,
                "resources": {"workers": 1, "gpus_per_worker": 1},
            },
            "sweep": {
                "space": {"lr": {"kind": "list", "values": [0.1, 0.2, 0.3, 0.4]}},
                "max_running": 2,
            },
        },
        user="ada",
    )
    assert created.trials == 4 and created.submitted == 2  # the rest are the controller's
    shutil.rmtree(team.service.workspace_root)  # type: ignore[arg-type]
    home = sweeps_home(team.backend)
    assert (home / created.id / "source" / "train.ipynb").is_file()
    deployment.start("solo")

    ended: set[str] = set()

    def finished() -> Any:
        record = team.service.sweeps.records.get(created.id)
        assert record is not None
        for trial in record.trials:
            assert trial.error is None, trial.error
            if trial.job_id and trial.job_id not in ended and team.pods(trial.job_id):
                team.end_pods(trial.job_id, result="Succeeded")
                ended.add(trial.job_id)
        return record if record.state == SweepState.FINISHED else None

    record = wait_for("the sweep to finish", finished, 240)
    assert [t.parameters["lr"] for t in record.trials] == [0.1, 0.2, 0.3, 0.4]
    for trial in record.trials:
        assert trial.job_id is not None
        controller.recorded(team, trial.job_id, JobState.SUCCEEDED)
        jobdir = team.backend.jobs_root / trial.job_id
        cells = json.loads((jobdir / "bundle" / "cells.json").read_text())
        code = "\n".join(c["source"] for c in cells)
        assert f"lr = {trial.parameters['lr']}" in code and "print('original', lr)" in code
        lineage = json.loads((jobdir / "lineage.json").read_text())
        assert lineage["parameters"] == {"lr": trial.parameters["lr"]}
        assert lineage["frozen_workspace"] == record.source.digest  # type: ignore[union-attr]
    assert not (home / created.id).exists()  # the frozen workspace went with the sweep
