"""A pipeline on the real node: three notebook steps, each an ordinary Kueue-queued job whose
pod runs the curated pytorch-cpu image; the first step's output reaches the second as a
read-only dataset on the team's volume, the second's the third, and the run ends succeeded
with every step's result where the next one read it. The train step registers its model in
the team's registry from inside its pod, and the evaluate step loads "the model the train step
registered" by name, which its lineage records as an input. The test's service (root) advances the
run as a session's reconcile does, and hands each new job directory to the pods' user, as
tests/k8s/test_real_jobs.py does for a submit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

from tests.k8s import test_real_jobs
from tests.k8s.test_backend import wait_for
from tests.k8s.test_real_jobs import RealTeam
from trainhub.jobs.states import JobState
from trainhub.pipelines.records import RunState

# The fixtures: the curated image imported into the node, a team whose pool is the node.
pytorch_image, open_umask = test_real_jobs.pytorch_image, test_real_jobs.open_umask
real_team = test_real_jobs.real_team

SMALL = "resources: {cpu: 0.25, memory: 1Gi}"
PIPELINE = f"""\
parameters: {{rows: 3}}
steps:
  prepare:
    notebook: prepare.ipynb
    pipeline_parameters: [rows]
    {SMALL}
    outputs: [data]
  train:
    notebook: train.ipynb
    inputs: {{data: prepare.data}}
    {SMALL}
    outputs: [model.txt]
  evaluate:
    notebook: evaluate.ipynb
    inputs: {{model: train.model.txt}}
    {SMALL}
    outputs: [score.txt]
"""
CODE = {
    "prepare": (
        "rows = 1",
        "import trainhub\n"
        "out = trainhub.outputs.path() / 'data'\n"
        "out.mkdir()\n"
        "(out / 'rows.txt').write_text(str(rows))\n",
    ),
    "train": (
        "",
        "import trainhub\n"
        "rows = int((trainhub.datasets.path('data') / 'rows.txt').read_text())\n"
        "(trainhub.outputs.path() / 'model.txt').write_text(str(rows * 2))\n"
        "trainhub.models.register('scorer', path='model.txt', description='rows x 2')\n",
    ),
    "evaluate": (
        "",
        "import trainhub\n"
        "model = int(trainhub.datasets.path('model').read_text())\n"
        "assert int(trainhub.models.path('scorer').read_text()) == model\n"
        "(trainhub.outputs.path() / 'score.txt').write_text(str(model + 1))\n",
    ),
}


def write_pipeline(workspace: Path) -> None:
    for name, (params, code) in CODE.items():
        nb = nbformat.v4.new_notebook()
        cells = [nbformat.v4.new_code_cell(code)]
        if params:
            cell = nbformat.v4.new_code_cell(params)
            cell.metadata["tags"] = ["parameters"]
            cells.insert(0, cell)
        nb.cells = cells
        nbformat.write(nb, workspace / f"{name}.ipynb")
    (workspace / "flow.pipeline.yaml").write_text(PIPELINE)


def test_a_three_step_pipeline_runs_on_the_real_node(real_team: RealTeam) -> None:
    t = real_team
    write_pipeline(t.workspace)
    started = t.service.pipelines.start(
        user=t.user, file="flow.pipeline.yaml", parameters={"rows": 5}
    )
    handed: set[str] = set()

    def advanced() -> Any:
        t.service.reconcile()  # what a session's server does every few seconds
        record = t.service.pipelines.records.get(started.id)
        assert record is not None
        for attempt in record.steps.values():
            assert attempt.error is None, attempt.error
            if attempt.job_id and attempt.job_id not in handed:
                t.hand_over(attempt.job_id)
                handed.add(attempt.job_id)
        return record if record.state != RunState.RUNNING else None

    record = wait_for("the run to end", advanced, 600)
    logs = {step: t.rank_log(a.job_id, 0)[-2000:] for step, a in record.steps.items() if a.job_id}
    assert record.state == RunState.SUCCEEDED, logs
    jobs = {step: t.service.describe(a.job_id, user=t.user) for step, a in record.steps.items()}
    assert all(j.state == JobState.SUCCEEDED for j in jobs.values()), logs
    # Each step's result is the one the next step computed from.
    outputs = {step: t.backend.jobs_root / j.id / "outputs" for step, j in jobs.items()}
    assert (outputs["prepare"] / "data" / "rows.txt").read_text() == "5"
    assert (outputs["train"] / "model.txt").read_text() == "10"
    assert (outputs["evaluate"] / "score.txt").read_text() == "11"
    (data,) = jobs["train"].spec.datasets
    assert data.name == "data" and data.path == str(outputs["prepare"] / "data")

    # The registry: version 1 of scorer, made in train's pod with its lineage, its file kept
    # apart from the job's outputs; evaluate's lineage names it as an input.
    version = t.service.registry.version("scorer")
    assert version.version == 1 and version.source.job == jobs["train"].id
    assert version.lineage["pipeline"]["step"] == "train"
    assert t.service.registry.files(version).read_text() == "10"
    evaluated = t.service.describe(jobs["evaluate"].id, user=t.user)
    (used,) = evaluated.lineage["models"]
    assert used["model"] == "scorer" and used["version"] == 1
