"""A pipeline run on a cluster runs to its end with nobody logged in: a session starts it (it
sees the workspace, and freezes it beside the jobs), then the controller alone starts the next
step from that frozen workspace once the first has ended, passing the first step's output to
it. kwok plays the pods; the test writes what the first step's rank would have written. Shared
with the team, a teammate reads the run, cannot change it, and runs it again as their own with
their own parameters, from the workspace it froze."""

from __future__ import annotations

import shutil
from typing import Any

import nbformat
import pytest

from tests.k8s import test_controller as controller
from tests.k8s.test_backend import Team, wait_for
from trainhub.backends.kubernetes.manifests import PIPELINE_RUN_LABEL
from trainhub.errors import NotFound, ReadOnly
from trainhub.jobs.sharing import Sharing
from trainhub.jobs.states import JobState
from trainhub.pipelines.records import RunState, runs_home

world = controller.world  # the team, and the controller's objects applied from the teams file

PIPELINE = """\
parameters: {rows: 3}
steps:
  prepare:
    notebook: prepare.ipynb
    resources: {gpus_per_worker: 1}
    pipeline_parameters: [rows]
    outputs: [data]
  train:
    notebook: train.ipynb
    resources: {gpus_per_worker: 1}
    inputs: {data: prepare.data}
"""


def workspace(team: Team) -> None:
    root = team.service.workspace_root
    assert root is not None
    for name in ("prepare", "train"):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"print('{name}')")]
        nbformat.write(nb, root / f"{name}.ipynb")
    (root / "flow.pipeline.yaml").write_text(PIPELINE)


def test_with_nobody_logged_in_a_two_step_run_runs_to_its_end(
    world: tuple[Team, controller.Deployment],
) -> None:
    team, deployment = world
    workspace(team)
    started = team.service.pipelines.start(user="ada", file="flow.pipeline.yaml")
    first = started.step_views[0]
    assert first.status.value == "active" and first.job_id is not None
    assert started.step_views[1].status.value == "waiting"
    with pytest.raises(NotFound):  # private: a teammate sees nothing of it
        team.service.pipelines.describe(started.id, user="bo")
    team.service.pipelines.share(started.id, Sharing.TEAM, user="ada")
    shutil.rmtree(team.service.workspace_root)  # type: ignore[arg-type]
    home = runs_home(team.backend)
    assert (home / started.id / "source" / "train.ipynb").is_file()
    job = controller.current_job(team, first.job_id)
    assert job.metadata.labels[PIPELINE_RUN_LABEL] == started.id
    deployment.start("solo")

    ended: set[str] = set()

    def finished() -> Any:
        record = team.service.pipelines.records.get(started.id)
        assert record is not None
        for attempt in record.steps.values():
            assert attempt.error is None, attempt.error
            job_id = attempt.job_id
            if job_id and job_id not in ended and team.pods(job_id):
                if attempt.step == "prepare":  # what its rank would have written
                    data = team.backend.jobs_root / job_id / "outputs" / "data"
                    data.mkdir(parents=True)
                    (data / "rows.txt").write_text("3")
                team.end_pods(job_id, result="Succeeded")
                ended.add(job_id)
        return record if record.state != RunState.RUNNING else None

    record = wait_for("the run to end", finished, 240)
    assert record.state == RunState.SUCCEEDED
    prepare, train = record.steps["prepare"], record.steps["train"]
    assert prepare.job_id and train.job_id
    for job_id in (prepare.job_id, train.job_id):
        controller.recorded(team, job_id, JobState.SUCCEEDED)
    described = team.service.record(train.job_id)
    (data,) = described.spec.datasets
    assert data.name == "data"
    assert data.path == str(team.backend.jobs_root / prepare.job_id / "outputs" / "data")
    assert described.spec.pipeline is not None and described.spec.pipeline.step == "train"
    assert (home / started.id / "source").is_dir()  # shared: kept, to be run again from

    # Shared with the team, a teammate reads the run and its steps' jobs, and changes nothing...
    seen = team.service.pipelines.describe(started.id, user="bo")
    assert seen.shared == Sharing.TEAM and seen.state == RunState.SUCCEEDED
    assert team.service.readable(train.job_id, "bo").shared == Sharing.TEAM
    with pytest.raises(ReadOnly, match="only ada can retry it"):
        team.service.pipelines.retry(started.id, user="bo")
    assert started.id in [r.id for r in team.service.pipelines.list(user="bo").runs]

    # ...but runs it again as theirs: ada's code as it was frozen (ada's workspace is gone),
    # bo's parameter over ada's, bo's jobs in bo's quota.
    again = team.service.pipelines.start_again(started.id, user="bo", parameters={"rows": 5})
    assert again.user == "bo" and again.started_from == started.id
    assert again.parameters == {"rows": 5} and again.id != started.id
    bos = team.service.record(again.step_views[0].job_id)  # type: ignore[arg-type]
    assert bos.user == "bo" and bos.spec.parameters == {"rows": 5}
    assert bos.spec.pipeline is not None and bos.spec.pipeline.run == again.id
    team.service.pipelines.cancel(again.id, user="bo")

    # Private again, the run is ada's alone, and its frozen workspace goes as a private one's.
    team.service.pipelines.share(started.id, Sharing.PRIVATE, user="ada")
    assert not (home / started.id).exists()
    with pytest.raises(NotFound):
        team.service.pipelines.start_again(started.id, user="bo")
