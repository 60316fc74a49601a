"""Schedules of a pipeline file on the local backend, on a fake clock, with real jobs: a due
time starts a pipeline run from the workspace frozen at creation, its steps succeed and the
outcome fills the history; forbid skips a time while a run is active and replace cancels it;
a claim whose submitter died is matched to its run by the tag, never started twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local.conftest import wait_for
from tests.local.test_alerts import Receiver
from tests.local.test_pipelines import write_pipeline
from tests.local.test_schedules import Env, at, claim_as, ended_process_claimer, isolated_env
from trainhub.jobs.spec import SpecError
from trainhub.schedules.model import Run, RunState, run_tag
from trainhub.schedules.service import Schedules

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    made = isolated_env(tmp_path, monkeypatch)
    write_pipeline(made.workspace)
    return made


def request(name: str = "flow", **fields: object) -> dict[str, object]:
    return {
        "name": name,
        "target": {"kind": "pipeline", "file": "flow.pipeline.yaml", "parameters": {"rows": 4}},
        "cron": "0 * * * *",
        "timezone": "Europe/Berlin",
        **fields,
    }


def run_ends(s: Schedules, run_id: str, states: tuple[str, ...] = ("succeeded",)):
    def ended():
        s.service.backend.reconcile()
        s.service.pipelines.advance_all()
        run = s.service.pipelines.records.get(run_id)
        return run if run is not None and run.state.value in states else None

    return wait_for(ended, timeout=240, what=f"pipeline run {run_id} to be {states}")


def test_a_due_time_starts_a_pipeline_run_from_the_frozen_workspace(env: Env):
    s = env.schedules()
    created = s.create(request(), user="ada")
    assert created.target.kind == "pipeline"
    # Changed after creation: the runs run the pipeline and notebooks as they were.
    (env.workspace / "flow.pipeline.yaml").write_text("steps: {}\n")
    (env.workspace / "train.ipynb").unlink()
    env.clock.now = at(1, 13) + 1
    s.tick(created.id)
    run = s.describe(created.id, user="ada").runs[0]
    assert run.state == RunState.SUBMITTED and run.pipeline_run and run.job_id is None
    ended = run_ends(s, run.pipeline_run)
    assert ended.tag == run_tag(created.id, Run(at=at(1, 13), state=RunState.SUBMITTED))
    assert ended.parameters["rows"] == 4
    score = s.service.backend.get(ended.steps["evaluate"].job_id)
    assert (Path(score.job_dir) / "outputs" / "score.txt").read_text() == "9"  # 4 * 2 + 1
    # Its outcome fills the history, as a job's does; ticking again starts nothing more.
    env.schedules().tick(created.id)
    runs = s.describe(created.id, user="ada").runs
    assert [(r.at, r.outcome) for r in runs] == [(at(1, 13), "succeeded")]


def test_creation_checks_the_pipeline_and_names_the_fields(env: Env):
    s = env.schedules()
    bad = request()
    bad["target"] = {"kind": "pipeline", "file": "flow.pipeline.yaml", "parameters": {"nope": 1}}
    with pytest.raises(SpecError) as e:
        s.create(bad, user="ada")
    assert [x.field for x in e.value.errors] == ["target.pipeline.parameters.nope"]
    bad["target"] = {"kind": "pipeline", "file": "gone.pipeline.yaml"}
    with pytest.raises(SpecError, match=r"target\.pipeline\.file: no such file"):
        s.create(bad, user="ada")
    assert s.records.list() == []


def test_forbid_skips_while_a_run_is_active_and_a_dead_claim_is_matched_to_its_run(env: Env):
    s = env.schedules()
    slow = request()
    slow["target"] = {**slow["target"], "parameters": {"pause": 300}, "cache": False}
    sid = s.create(slow, user="ada").id
    made = s.create(request(name="made"), user="ada").id
    env.clock.now = at(1, 13) + 1
    s.tick(sid)
    first = s.describe(sid, user="ada").runs[0].pipeline_run
    # A scheduler that died after starting the run, before noting it.
    run = claim_as(s, made, at(1, 13), ended_process_claimer())
    record = s.records.get(made)
    started = s.service.pipelines.start(
        user="ada",
        pipeline=record.pipeline,
        parameters=record.request.target.parameters,
        tag=run_tag(made, run),
    )
    env.clock.now = at(1, 14) + 1
    restarted = env.schedules()
    restarted.tick_all()
    skipped = restarted.describe(sid, user="ada").runs[0]
    assert skipped.state == RunState.SKIPPED and first in skipped.reason
    runs = restarted.describe(made, user="ada").runs
    assert [(r.at, r.state, r.pipeline_run) for r in runs][-1] == (
        at(1, 13),
        RunState.SUBMITTED,
        started.id,
    )
    tags = [r.tag for r in s.service.pipelines.records.list("ada")]
    assert tags.count(run_tag(made, run)) == 1  # matched, not started again
    s.service.pipelines.cancel(first, user="ada", reason="the test is over")
    for r in s.service.pipelines.records.list("ada"):
        if r.state.value == "running":
            run_ends(s, r.id)
    s.tick_all()
    assert restarted.describe(sid, user="ada").runs[1].outcome == "cancelled"


def test_the_python_api_schedules_a_pipeline_file(env: Env, monkeypatch: pytest.MonkeyPatch):
    from trainhub.schedules import api

    s = env.schedules()
    monkeypatch.setattr(api, "service", lambda: s.service)
    monkeypatch.setattr(api.getpass, "getuser", lambda: "ada")
    with pytest.raises(ValueError, match="gpus: job fields"):
        api.schedule("flow.pipeline.yaml", cron="0 2 * * *", gpus=1)
    made = api.schedule("flow.pipeline.yaml", cron="0 2 * * *", parameters={"rows": 2}, cache=False)
    target = made.describe().target
    assert made.describe().name == "flow"
    assert (target.kind, target.parameters, target.cache) == ("pipeline", {"rows": 2}, False)
    started = made.run_now()
    assert isinstance(started, api.PipelineRun)
    run_ends(s, started.id)


def test_replace_cancels_the_active_run_and_a_failed_run_is_announced(
    env: Env, monkeypatch: pytest.MonkeyPatch
):
    receiver = Receiver()
    try:
        s = env.announcing_schedules(receiver.url, monkeypatch)
        slow = request(concurrency="replace")
        slow["target"] = {**slow["target"], "parameters": {"pause": 300}, "cache": False}
        replace = s.create(slow, user="ada").id
        (env.workspace / "flag").write_text("")
        failing = request(name="failing")
        failing["target"] = {
            **failing["target"],
            "parameters": {"flag": str(env.workspace / "flag")},
        }
        failing = s.create(failing, user="ada").id
        env.clock.now = at(1, 13) + 1
        s.tick_all()
        first = s.describe(replace, user="ada").runs[0].pipeline_run
        failed = s.describe(failing, user="ada").runs[0].pipeline_run
        run_ends(s, failed, states=("failed",))

        env.clock.now = at(1, 14) + 1
        s.tick_all()
        cancelled = s.service.pipelines.records.get(first)
        assert cancelled.state.value == "cancelled"
        assert "replaced by the run of schedule" in cancelled.cancel_reason
        runs = s.describe(replace, user="ada").runs
        assert runs[0].pipeline_run not in (None, first) and runs[0].at == at(1, 14)
        s.service.pipelines.cancel(runs[0].pipeline_run, user="ada", reason="the test is over")

        history = s.describe(failing, user="ada").runs
        assert history[-1].outcome == "failed"
        wait_for(lambda: receiver.posts, timeout=60, what="the alert")
        s.tick_all()  # announced once
        texts = [body["text"] for _, body in receiver.posts]
        assert len(texts) == 1 and failing in texts[0] and failed in texts[0], texts
        assert "failed" in texts[0]
    finally:
        receiver.close()
