"""A schedule on a cluster fires with nobody logged in: a session creates it (it sees the
workspace, and freezes it beside the jobs), then the controller alone fires each due minute
from that frozen workspace, once; the session's workspace is gone by then. A run refused (a
frozen workspace changed since) is announced to the owner's channels. kwok plays the pods."""

from __future__ import annotations

import json
import shutil
import time
from typing import Any

from tests.k8s import test_controller as controller
from tests.k8s.test_backend import Team, wait_for
from tests.k8s.test_controller_sweeps import notebook
from tests.local.test_alerts import Receiver
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.states import JobState
from trainhub.schedules.model import RunState, run_tag
from trainhub.schedules.service import schedules_home

world = controller.world  # the team, and the controller's objects applied from the teams file


def test_with_nobody_logged_in_the_controller_fires_each_minute_once(
    world: tuple[Team, controller.Deployment],
) -> None:
    team, deployment = world
    notebook(team)
    hook = Receiver()
    controller.member_webhook(team, "ada", hook.url)

    def create(name: str) -> Any:
        job = {
            "name": name,
            "source": {"path": "train.ipynb"},
            "team": team.ns,
            "parameters": {"lr": 0.5},
            "resources": {"workers": 1, "gpus_per_worker": 1},
        }
        return team.service.schedules.create(
            {
                "name": name,
                "target": {"kind": "notebook", "job": job},
                "cron": "* * * * *",
                "timezone": "America/New_York",
            },
            user="ada",
        )

    created, tampered = create("nightly"), create("tampered")
    started = time.time()
    shutil.rmtree(team.service.workspace_root)  # type: ignore[arg-type]
    home = schedules_home(team.backend)
    assert (home / f"{created.id}.json").is_file()  # the record, on the team's volume
    assert (home / created.id / "source" / "train.ipynb").is_file()
    (home / tampered.id / "source" / "train.ipynb").write_text("{}")  # as job code could
    deployment.start("solo")

    ended: set[str] = set()

    def two_runs() -> Any:
        record = team.service.schedules.records.get(created.id)
        assert record is not None
        for run in record.runs:
            assert run.state != RunState.REFUSED, run.reason
            if run.job_id and run.job_id not in ended and team.pods(run.job_id):
                team.end_pods(run.job_id, result="Succeeded")
                ended.add(run.job_id)
        done = [r for r in record.runs if r.state == RunState.SUBMITTED and r.job_id in ended]
        return record if len(done) >= 2 else None

    record = wait_for("two minutes fired by the controller", two_runs, 200)
    times = [r.at for r in record.runs if r.at is not None]
    assert times == sorted(set(times)) and all(t > started - 60 for t in times)
    for run in record.runs:
        if run.job_id not in ended:
            continue
        # Claimed within its own minute, before the next one fell due (how soon within it is
        # timed by benchmarks/schedule_firing.py; a loaded two-core run took over 5 s).
        assert run.claimed_by is not None and run.claimed_at - run.at < 60
        controller.recorded(team, run.job_id, JobState.SUCCEEDED)
        jobdir = team.backend.jobs_root / run.job_id
        cells = json.loads((jobdir / "bundle" / "cells.json").read_text())
        assert "lr = 0.5" in "\n".join(c["source"] for c in cells)
        lineage = json.loads((jobdir / "lineage.json").read_text())
        assert lineage["frozen_workspace"] == record.source.digest  # type: ignore[union-attr]
        found = team.backend.list_jobs(
            JobFilter(user="ada", search=run_tag(created.id, run)), limit=10
        )
        assert [j.id for j in found] == [run.job_id]
    try:
        wait_for("the refusal's alert", lambda: hook.posts, 60)
        refused = team.service.schedules.records.get(tampered.id)
        assert refused is not None and refused.runs[0].state == RunState.REFUSED
        text = hook.posts[0][1]["text"]
        assert tampered.id in text and "was refused" in text and "changed after" in text
        assert all(tampered.id in body["text"] for _, body in hook.posts)  # none for the jobs
    finally:
        hook.close()
    for schedule in (created, tampered):
        team.service.schedules.delete(schedule.id, user="ada")
        assert not (home / schedule.id).exists()


def test_the_controller_fires_a_pipeline_schedule_from_its_frozen_workspace(
    world: tuple[Team, controller.Deployment],
) -> None:
    from tests.k8s.test_controller_pipelines import workspace

    team, deployment = world
    workspace(team)
    created = team.service.schedules.create(
        {
            "name": "flow",
            "target": {"kind": "pipeline", "file": "flow.pipeline.yaml"},
            "cron": "* * * * *",
        },
        user="ada",
    )
    shutil.rmtree(team.service.workspace_root)  # type: ignore[arg-type]
    deployment.start("solo")
    ended: set[str] = set()

    def succeeded() -> Any:
        record = team.service.schedules.records.get(created.id)
        assert record is not None
        for run in record.runs:
            assert run.state != RunState.REFUSED, run.reason
        started = [r for r in record.runs if r.pipeline_run]
        if not started:
            return None
        pipeline = team.service.pipelines.records.get(started[0].pipeline_run)
        assert pipeline is not None and pipeline.tag == run_tag(created.id, started[0])
        for attempt in pipeline.steps.values():
            assert attempt.error is None, attempt.error
            if attempt.job_id and attempt.job_id not in ended and team.pods(attempt.job_id):
                if attempt.step == "prepare":  # what its rank would have written
                    data = team.backend.jobs_root / attempt.job_id / "outputs" / "data"
                    data.mkdir(parents=True)
                team.end_pods(attempt.job_id, result="Succeeded")
                ended.add(attempt.job_id)
        return started[0] if started[0].outcome == "succeeded" else None

    run = wait_for("the scheduled pipeline run to succeed", succeeded, 240)
    assert run.claimed_by is not None and len(ended) == 2
    team.service.schedules.pause(created.id, user="ada")
