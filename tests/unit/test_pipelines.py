"""Pipelines as pure functions: the file's schema and its refusals naming step and field, the
wiring (cycles, missing outputs, unknown steps and parameters), the order, where a run stands
and what it starts next, the cache key, the claims; and the checks before a run against a real
local backend (an unknown notebook, a request over the machine)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest

from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.records import CLAIM_SECONDS, GAVE_UP, repair_claims
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.pipelines import spec as pipeline_spec
from trainhub.pipelines.cache import cache_key
from trainhub.pipelines.checks import check
from trainhub.pipelines.graph import dependencies, downstream, order, wiring_errors
from trainhub.pipelines.plan import StepStatus, plan, statuses
from trainhub.pipelines.records import RunRecord, RunState, StepRun
from trainhub.pipelines.spec import PipelineError, parse_pipeline, read_pipeline
from trainhub.pipelines.steps import job_name, step_spec

FLOW = """\
parameters: {rows: 4, epochs: 2}
steps:
  prepare:
    notebook: prepare.ipynb
    pipeline_parameters: [rows]
    outputs: [data]
  train:
    notebook: train.ipynb
    inputs: {data: prepare.data}
    pipeline_parameters: [epochs]
    parameters: {lr: 0.1}
    resources: {workers: 1, processes_per_worker: 2}
    outputs: [model]
  evaluate:
    notebook: evaluate.ipynb
    inputs: {model: train.model}
  report:
    notebook: report.ipynb
    depends_on: [prepare]
"""


def flow(text: str = FLOW):
    return read_pipeline(text, "flow.pipeline.yaml")


def mistakes(data: dict, given=()) -> list[tuple[str, str]]:
    """Every refusal of ``data``: the schema's, else the wiring's."""
    try:
        pipeline = parse_pipeline(data)
    except PipelineError as e:
        return [(err.field, err.message) for err in e.errors]
    return [(err.field, err.message) for err in wiring_errors(pipeline, given)]


def steps(**named) -> dict:
    return {"steps": {n: {"notebook": f"{n}.ipynb", **s} for n, s in named.items()}}


# --- the file ---------------------------------------------------------------------------------
def test_a_file_reads_with_its_name_from_the_file_and_its_steps_in_order() -> None:
    pipeline = flow()
    assert pipeline.name == "flow"
    assert list(pipeline.steps) == ["prepare", "train", "evaluate", "report"]
    assert pipeline.steps["train"].resources.world_size == 2
    assert dependencies(pipeline) == {
        "prepare": set(),
        "train": {"prepare"},  # implied by its input
        "evaluate": {"train"},
        "report": {"prepare"},
    }
    assert order(pipeline) == ["prepare", "train", "report", "evaluate"]
    assert downstream(dependencies(pipeline), "prepare") == {"train", "evaluate", "report"}


def test_schema_mistakes_name_the_step_and_field() -> None:
    assert mistakes(
        steps(
            train={"notebook": "train.py", "resources": {"workers": 0}, "colour": "red"},
            Bad_Name={},
        )
    ) == [
        ("steps.train.notebook", "'train.py' is not a notebook (.ipynb)"),
        ("steps.train.resources.workers", "must be >= 1"),
        ("steps.train.colour", "is not a known field"),
        (
            "steps.Bad_Name.[key]",
            "use lower-case letters, digits and '-', starting and ending with a letter or digit",
        ),
    ]
    assert mistakes({"steps": {}}) == [
        ("steps", "Dictionary should have at least 1 item after validation, not 0")
    ]
    with pytest.raises(PipelineError, match=r"flow\.pipeline\.yaml: pipeline: is not valid YAML"):
        read_pipeline("steps: [", "flow.pipeline.yaml")
    # YAML keeps the last of a key given twice: a step written twice is refused, not lost.
    with pytest.raises(PipelineError, match="'train' is given twice") as e:
        read_pipeline(FLOW + "  train:\n    notebook: other.ipynb\n", "flow.pipeline.yaml")
    assert str(e.value).endswith("'train' is given twice (line 20, column 3)")


def test_wiring_mistakes_name_the_step_and_field() -> None:
    found = mistakes(
        {
            "parameters": {"lr": 0.1},
            **steps(
                a={"outputs": ["data"], "pipeline_parameters": ["epochs"]},
                b={
                    "inputs": {"data": "a.model", "raw": "nowhere.data", "odd": "a"},
                    "depends_on": ["b", "ghost"],
                    "pipeline_parameters": ["lr"],
                    "parameters": {"lr": 1},
                },
            ),
        },
        given=["batch"],
    )
    assert found == [
        ("steps.a.pipeline_parameters.0", "the pipeline has no parameter 'epochs' (it has lr)"),
        ("steps.b.depends_on.0", "a step cannot depend on itself"),
        ("steps.b.depends_on.1", "no step 'ghost' (it has a, b)"),
        ("steps.b.inputs.data", "step 'a' has no output 'model'; it declares data"),
        ("steps.b.inputs.raw", "no step 'nowhere' (it has a, b)"),
        ("steps.b.inputs.odd", "'a' is not '<step>.<output>'"),
        ("steps.b.parameters.lr", "also given as a pipeline parameter; set it in one place"),
        ("parameters.batch", "the pipeline has no parameter 'batch' (it has lr)"),
        # b depending on itself is a cycle too
        ("steps.b.depends_on", "a cycle: b -> b"),
    ]


def test_a_cycle_is_named_with_its_steps() -> None:
    found = mistakes(
        steps(
            a={"outputs": ["x"], "inputs": {"z": "c.z"}},
            b={"outputs": ["y"], "inputs": {"x": "a.x"}},
            c={"outputs": ["z"], "depends_on": ["b"]},
            d={},
        )
    )
    assert len(found) == 1
    field, message = found[0]
    assert field.startswith("steps.") and field.endswith(".depends_on")
    assert message.startswith("a cycle: ")
    assert set(message.removeprefix("a cycle: ").split(" -> ")) == {"a", "b", "c"}


def test_the_shipped_schema_is_the_models() -> None:
    assert pipeline_spec.SCHEMA_FILE.read_text() == pipeline_spec.schema_text(), (
        "stale: run python -m trainhub.pipelines.spec"
    )
    schema = json.loads(pipeline_spec.SCHEMA_FILE.read_text())
    step = schema["$defs"]["Step"]["properties"]
    assert {"notebook", "depends_on", "inputs", "outputs", "resources", "retry"} <= set(step)


# --- a step as a job ---------------------------------------------------------------------------
def test_a_step_is_a_job_spec_linked_to_its_run() -> None:
    pipeline = flow()
    data = step_spec(
        pipeline,
        "train",
        run_id="flow-abc123",
        values={"rows": 4, "epochs": 5},
        inputs={"data": "/jobs/flow-prepare-1/outputs/data"},
    )
    spec = parse_spec(data)
    assert spec.name == "flow-train" and spec.source.path == "train.ipynb"
    assert spec.parameters == {"epochs": 5, "lr": 0.1}  # the pipeline's it names, then its own
    assert [(d.name, d.path, d.read_only) for d in spec.datasets] == [
        ("data", "/jobs/flow-prepare-1/outputs/data", True)
    ]
    assert spec.pipeline is not None
    assert (spec.pipeline.run, spec.pipeline.step, spec.pipeline.name) == (
        "flow-abc123",
        "train",
        "flow",
    )
    long = job_name("a-very-long-pipeline-name-indeed-yes", "evaluate-the-model")
    assert long == "a-very-long-pipeline-evaluate-the-model"  # the step's name kept whole


# --- where a run stands -------------------------------------------------------------------------
def job(job_id: str, step: str, state: JobState, reason: str | None = None) -> JobRecord:
    spec = parse_spec(
        {
            "name": "x",
            "source": {"path": f"{step}.ipynb"},
            "pipeline": {"run": "flow-1", "step": step},
        }
    )
    verdict = Verdict(failure_class=FailureClass.CODE, reason=reason) if reason else None
    return JobRecord.of_spec(
        spec,
        id=job_id,
        user="ada",
        state=state,
        job_dir=f"/jobs/{job_id}",
        created_at=time.time(),
        verdict=verdict,
    )


def run_of(**attempts: StepRun) -> RunRecord:
    return RunRecord(
        id="flow-1", user="ada", created_at=0.0, name="flow", pipeline=flow(), steps=attempts
    )


def test_ready_steps_start_side_by_side_and_a_failure_stops_what_follows() -> None:
    fresh = run_of()
    assert plan(fresh, {}).start == ["prepare"]
    done = run_of(prepare=StepRun(step="prepare", job_id="p1"))
    jobs = {"p1": job("p1", "prepare", JobState.SUCCEEDED)}
    step = plan(done, jobs)
    assert step.start == ["train", "report"] and step.ended is None  # in parallel
    now = statuses(done, jobs)
    assert now["evaluate"].status == StepStatus.WAITING
    assert now["evaluate"].reason == "waits for train"

    failed = run_of(
        prepare=StepRun(step="prepare", job_id="p1"),
        train=StepRun(step="train", job_id="t1"),
        report=StepRun(step="report", job_id="r1"),
    )
    jobs |= {
        "t1": job("t1", "train", JobState.FAILED, "ValueError in cell 2, line 1 (rank 0): bad"),
        "r1": job("r1", "report", JobState.RUNNING),
    }
    now = statuses(failed, jobs)
    assert now["train"].status == StepStatus.FAILED and "ValueError" in (now["train"].reason or "")
    assert now["evaluate"].status == StepStatus.NOT_RUN
    assert now["evaluate"].reason == "not run: step train failed"
    assert plan(failed, jobs).ended is None  # report still runs
    jobs["r1"] = job("r1", "report", JobState.SUCCEEDED)
    assert plan(failed, jobs).ended == RunState.FAILED


def test_reused_steps_count_as_done_and_a_run_of_them_succeeds() -> None:
    reused = run_of(
        **{
            name: StepRun(step=name, reused_from=f"{name}-old")
            for name in ("prepare", "train", "evaluate", "report")
        }
    )
    now = statuses(reused, {})
    assert all(s.status == StepStatus.REUSED for s in now.values())
    assert now["train"].reason == "reused from train-old"
    assert plan(reused, {}).ended == RunState.SUCCEEDED
    refused = run_of(prepare=StepRun(step="prepare", error="no such file: prepare.ipynb"))
    assert plan(refused, {}).ended == RunState.FAILED
    claimed = run_of(prepare=StepRun(step="prepare", claimed_at=time.time()))
    assert statuses(claimed, {})["prepare"].status == StepStatus.ACTIVE


# --- the cache key ----------------------------------------------------------------------------
def test_the_cache_key_changes_with_every_input_and_only_with_them() -> None:
    base = {
        "code": "c" * 64,
        "parameters": {"lr": 0.1},
        "image": {"reference": "pytorch:2", "ran": None},
        "datasets": [{"name": "imagenet", "by_name": True, "fingerprint": {"files": 3}}],
        "inputs": {"data": "prep-1/data"},
        "outputs": ["model"],
    }
    key = cache_key(**base)
    assert key == cache_key(**{**base, "outputs": ["model"], "parameters": {"lr": 0.1}})
    # Where a dataset was read from is not its content.
    moved = [{**base["datasets"][0], "path": "/elsewhere"}]
    assert cache_key(**{**base, "datasets": moved}) == key
    for field, other in {
        "code": "d" * 64,
        "parameters": {"lr": 0.2},
        "image": {"reference": "pytorch:3", "ran": None},
        "datasets": [{"name": "imagenet", "by_name": True, "fingerprint": {"files": 4}}],
        "inputs": {"data": "prep-2/data"},
        "outputs": ["model", "metrics"],
    }.items():
        assert cache_key(**{**base, field: other}) != key, field


# --- the checks before a run, on a real local backend ------------------------------------------
def notebook(path: Path, params: str = "rows = 1") -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("print(rows)")]
    nbformat.write(nb, path)


def test_every_step_is_checked_as_its_job_before_anything_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRAINHUB_GPUS", "0")
    monkeypatch.setenv("TRAINHUB_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name in ("prepare", "train", "evaluate"):
        notebook(workspace / f"{name}.ipynb")
    backend = LocalBackend(tmp_path / "home")
    service = JobService(backend, workspace_root=workspace, jobs_root=backend.jobs_root)
    text = FLOW.replace(
        "resources: {workers: 1, processes_per_worker: 2}", "resources: {gpus_per_worker: 2}"
    )
    with pytest.raises(PipelineError) as e:
        check(service, flow(text), {}, user="ada")
    fields = {err.field: err.message for err in e.value.errors}
    assert set(fields) == {"steps.train", "steps.report.notebook"}
    assert "GPU" in fields["steps.train"]  # more than the machine has
    assert fields["steps.report.notebook"] == "no such file: report.ipynb"
    assert str(e.value).startswith("flow: ")
    assert not list(backend.jobs_root.glob("*"))  # nothing was made

    notebook(workspace / "report.ipynb")
    specs = check(service, flow(), {"epochs": 3}, user="ada")
    assert [s.pipeline.step for s in specs if s.pipeline] == [
        "prepare",
        "train",
        "evaluate",
        "report",
    ]


# --- claims -----------------------------------------------------------------------------------
def test_a_claim_whose_submitter_died_is_matched_to_its_job_or_given_up() -> None:
    now = time.time()
    found = StepRun(step="prepare", claimed_at=now)
    fresh = StepRun(step="train", claimed_at=now)
    stale = StepRun(step="evaluate", claimed_at=now - CLAIM_SECONDS - 1)
    noted = StepRun(step="report", job_id="r1", claimed_at=now - CLAIM_SECONDS - 1)
    repair_claims([found, fresh, stale, noted], lambda a: a.step, {"prepare": "p1", "report": "x"})
    assert found.job_id == "p1" and found.error is None
    assert fresh.job_id is None and fresh.error is None  # its submit may still be going on
    assert stale.job_id is None and stale.error == GAVE_UP
    assert noted.job_id == "r1"  # a noted job is never replaced
