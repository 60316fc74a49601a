"""Comparing runs: the pure comparison, and reading job directories the bundle compiler and
the scalar logger wrote (through trainhub.jobs.confined)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from trainhub.bundle.compile import compile_bundle
from trainhub.experiments.compare import check_ids, compare
from trainhub.experiments.compare_code import cell_diff
from trainhub.experiments.compare_scalars import parse_goals, scalar_goal
from trainhub.experiments.curves import Scalars, _parse_lines, downsample
from trainhub.experiments.runs import Run, read_run
from trainhub.jobs.directory import JobDir, write_json_atomic
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.metrics.scalars import _append_scalars

NOW = 1_800_000_000.0


def record(job_id: str, parameters: dict, *, job_dir: str = "", **fields) -> JobRecord:
    spec = parse_spec(
        {
            "name": job_id,
            "source": {"kind": "notebook", "path": "train.ipynb"},
            "parameters": parameters,
            "resources": fields.pop("resources", {}),
            "image": fields.pop("image", None),
        }
    )
    values = {
        "id": job_id,
        "name": job_id,
        "user": "ada",
        "state": JobState.SUCCEEDED,
        "gpus": spec.resources.total_gpus,
        "created_at": NOW - 100,
        "started_at": NOW - 90,
        "finished_at": NOW - 30,
        "spec": spec,
        "job_dir": job_dir,
        "priority": 1,
        **fields,
    }
    return JobRecord(**values)


def scalars(points: dict[str, list[tuple[int, float]]], t0: float = NOW - 90) -> Scalars:
    s = Scalars()
    for name, values in points.items():
        for step, value in values:
            s.add({"time": t0 + step, "step": step, "name": name, "value": value, "rank": 0})
    return s


def test_parameters_side_by_side_with_differences_marked():
    a = Run(record("a", {"lr": 0.1, "epochs": 3, "seed": 1}))
    b = Run(record("b", {"lr": 0.01, "epochs": 3}))
    c = Run(record("c", {"lr": 0.1, "epochs": 3, "seed": 1}))
    rows = {r.name: r for r in compare([a, b, c], now=NOW).parameters}
    assert rows["lr"].values == [0.1, 0.01, 0.1] and rows["lr"].differs
    assert rows["epochs"].values == [3, 3, 3] and not rows["epochs"].differs
    # A parameter one job was not given differs from one it was given, even as null.
    assert rows["seed"].values == [1, None, 1] and rows["seed"].differs
    d = Run(record("d", {"lr": None}))
    e = Run(record("e", {}))
    assert compare([d, e], now=NOW).parameters[0].differs


def test_last_and_best_of_every_scalar_by_an_explicit_rule():
    a = Run(record("a", {}), scalars=scalars({"loss": [(0, 2.0), (1, 0.5), (2, 0.7)]}))
    b = Run(
        record("b", {}),
        scalars=scalars({"loss": [(0, 1.5), (1, 0.9)], "val_accuracy": [(1, 0.6), (2, 0.8)]}),
    )
    result = compare([a, b], now=NOW)
    loss, acc = result.scalars
    assert (loss.name, loss.goal, acc.name, acc.goal) == ("loss", "min", "val_accuracy", "max")
    assert [p.step for p in loss.last] == [2, 1] and loss.last[0].value == 0.7
    assert [(p.step, p.value) for p in loss.best] == [(1, 0.5), (1, 0.9)]
    assert loss.best_job == "a"
    assert acc.last[0] is None and acc.best[1].value == 0.8 and acc.best_job == "b"
    assert loss.best[0].time == 1.0  # seconds since the job started
    # The caller's goal wins over the name's rule.
    flipped = compare([a, b], goals={"loss": "max"}, now=NOW).scalars[0]
    assert flipped.goal == "max" and flipped.best[0].value == 2.0 and flipped.best[1].value == 1.5


def test_the_goal_rule_and_its_override():
    assert [scalar_goal(n) for n in ("train/loss", "val_error", "WER", "acc", "f1_score")] == [
        "min",
        "min",
        "min",
        "max",
        "max",
    ]
    assert scalar_goal("reward", {"reward": "min"}) == "min"
    assert parse_goals(["a:b:min", "acc:max"]) == {"a:b": "min", "acc": "max"}
    with pytest.raises(SpecError) as e:
        parse_goals(["loss:smallest"])
    assert e.value.errors[0].field == "goal"


def test_the_number_of_jobs_is_checked_naming_the_field():
    assert check_ids(["a", "b", "a"]) == ["a", "b"]
    for ids in (["a"], ["a", "a"], [str(i) for i in range(11)]):
        with pytest.raises(SpecError) as e:
            check_ids(ids)
        assert e.value.errors[0].field == "ids"
    with pytest.raises(SpecError):
        compare([Run(record("a", {}))], now=NOW)


def test_a_retried_step_keeps_its_latest_value_and_other_ranks_and_nan_are_left_out():
    s = Scalars()
    for r in (
        {"time": 1.0, "step": 0, "name": "loss", "value": 3.0, "rank": 0},
        {"time": 2.0, "step": 0, "name": "loss", "value": 2.5, "rank": 0, "attempt": 1},
        {"time": 2.0, "step": 1, "name": "loss", "value": 0.1, "rank": 1},
        {"time": 3.0, "step": 2, "name": "loss", "value": None, "nonfinite": "nan"},
        {"time": 3.0, "step": True, "name": "loss", "value": 1.0},
        "not a record",
    ):
        s.add(r)
    curve = s.curve("loss")
    assert (curve.steps, curve.values, curve.times) == ([0], [2.5], [2.0])


def test_resources_elapsed_and_verdicts():
    failed = record(
        "f",
        {},
        state=JobState.FAILED,
        resources={"workers": 2, "gpus_per_worker": 1},
        verdict=Verdict(failure_class=FailureClass.CODE, reason="cell 3 raised ValueError"),
        attempt=1,
    )
    running = record("r", {}, state=JobState.RUNNING, finished_at=None)
    queued = record("q", {}, state=JobState.QUEUED, started_at=None, finished_at=None)
    result = compare([Run(failed), Run(running), Run(queued)], now=NOW)
    assert [j.elapsed_s for j in result.jobs] == [60.0, 90.0, None]
    assert result.jobs[0].failure_class == FailureClass.CODE
    assert result.jobs[0].verdict.reason == "cell 3 raised ValueError"
    assert result.jobs[1].verdict is None
    resources = {r.name: r for r in result.resources}
    assert resources["GPUs"].values == [2, 0, 0] and resources["GPUs"].differs
    outcome = {r.name: r for r in result.outcome}
    assert outcome["state"].values == ["failed", "running", "queued"]
    assert outcome["attempts"].values == [2, 1, 1]


def test_lineage_differences():
    def lineage(commit, dirty, diff, packages, datasets):
        return {
            "notebook_sha256": "n-" + commit,
            "content_hash": "c-" + commit,
            "git": {"commit": commit, "branch": "main", "dirty": dirty, "diff": diff},
            "python": {"version": "3.11.9"},
            "packages": packages,
            "datasets": datasets,
        }

    ds = {"name": "mnist", "path": "/data/mnist", "fingerprint": {"files": 4, "bytes": 10}}
    ds2 = {**ds, "fingerprint": {"files": 5, "bytes": 12}}
    a = Run(
        record("a", {}, image="img:1"),
        lineage=lineage("1111", False, "", {"torch": "2.4", "numpy": "2.0", "six": "1"}, [ds]),
    )
    b = Run(
        record("b", {}, image="img:2"),
        lineage=lineage("2222", True, "diff --git a", {"torch": "2.5", "numpy": "2.0"}, [ds2]),
    )
    result = compare([a, b], now=NOW)
    rows = {r.name: r for r in result.lineage}
    assert rows["git commit"].values == ["1111", "2222"] and rows["git commit"].differs
    assert rows["git dirty"].values == [False, True]
    assert rows["git uncommitted diff"].values[0] is None
    assert rows["git uncommitted diff"].values[1].startswith("sha256:")
    assert rows["image"].values == ["img:1", "img:2"]
    assert rows["notebook sha256"].differs and not rows["python"].differs
    assert {p.name: p.values for p in result.packages} == {
        "six": ["1", None],
        "torch": ["2.4", "2.5"],
    }
    assert result.packages_same == 1
    (mnist,) = result.datasets
    assert mnist.name == "mnist" and mnist.differs and "5 files" in mnist.values[1]


def test_cell_level_code_diff():
    before = [(0, "import torch"), (1, "lr = 0.1\nepochs = 3"), (2, "train(lr)"), (3, "plot()")]
    after = [(0, "import torch"), (1, "lr = 0.1\nepochs = 5"), (2, "train(lr)"), (4, "save()")]
    changes = cell_diff(before, after)
    assert [(c.change, c.before, c.after) for c in changes] == [
        ("changed", 1, 1),
        ("changed", 3, 4),
    ]
    assert "-epochs = 3\n+epochs = 5" in changes[0].diff
    assert changes[0].diff.startswith("--- cell 2\n+++ cell 2\n")
    added = cell_diff(before[:2], before)
    assert [(c.change, c.after) for c in added] == [("added", 2), ("added", 3)]
    assert added[0].diff == "added cell 3\n+train(lr)\n"
    removed = cell_diff(before, before[1:])
    assert [(c.change, c.before) for c in removed] == [("removed", 0)]
    assert cell_diff(before, list(before)) == []


def test_code_compared_against_the_first_job():
    a = Run(record("a", {}), cells=[(0, "x = 1"), (1, "print(x)")])
    b = Run(record("b", {}), cells=[(0, "x = 2"), (1, "print(x)")])
    c = Run(record("c", {}), cells=[(0, "x = 1"), (1, "print(x)")])
    d = Run(record("d", {}), cells=None)
    code = compare([a, b, c, d], now=NOW).code
    assert [(x.job_id, x.against, x.identical) for x in code] == [
        ("b", "a", False),
        ("c", "a", True),
        ("d", "a", False),
    ]
    assert code[0].changes[0].diff.endswith("-x = 1\n+x = 2\n")
    assert code[2].note == "the code of d could not be read"


def test_series_for_overlaid_curves_downsampled_on_request():
    long = [(i, float((i * 7919) % 1000)) for i in range(10_000)]
    long[5_000] = (5_000, -1e6)  # a spike uniform thinning would skip
    a = Run(record("a", {}), scalars=scalars({"loss": long}))
    b = Run(record("b", {}), scalars=scalars({"loss": [(0, 1.0), (1, 0.5)]}))
    full = compare([a, b], now=NOW).series
    assert [(s.job_id, s.name, s.total, len(s.points)) for s in full] == [
        ("a", "loss", 10_000, 10_000),
        ("b", "loss", 2, 2),
    ]
    assert full[1].points == [(0, 0.0, 1.0), (1, 1.0, 0.5)]  # step, seconds, value
    thin = compare([a, b], points=500, now=NOW).series[0]
    assert thin.total == 10_000 and len(thin.points) <= 500
    steps = [p[0] for p in thin.points]
    assert steps == sorted(steps) and steps[0] == 0 and steps[-1] == 9_999
    assert (5_000, 5_000.0, -1e6) in thin.points
    assert compare([a, b], series=False, now=NOW).series == []


def test_downsample_keeps_ends_and_extremes_in_order():
    values = [0.0, 5.0, 1.0, 9.0, 2.0, 3.0, -4.0, 8.0, 1.0]
    picked = downsample(values, 6)
    assert picked[0] == 0 and picked[-1] == 8 and picked == sorted(picked)
    assert 3 in picked and 6 in picked and len(picked) <= 6
    assert downsample(values, 100) == list(range(9))
    assert downsample(values, 2) == [0, 8]


# --- job directories as trainhub writes them --------------------------------------------


def notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cells[0], metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells[1:]]
    nbformat.write(nb, path)


def job(tmp_path: Path, job_id: str, cells: list[str], parameters: dict) -> JobRecord:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    notebook(ws / "train.ipynb", cells)
    jobdir = JobDir(tmp_path / "jobs" / job_id).create()
    rec = record(job_id, parameters, job_dir=str(jobdir.root))
    compile_bundle(rec.spec, ws, jobdir.bundle)
    write_json_atomic(jobdir.lineage, {"git": None, "packages": {"torch": "2.4"}})
    for step in range(5):
        _append_scalars(jobdir, step, {"loss": 1.0 / (step + 1), "acc": step / 10}, 0, 0)
    return rec


def test_read_run_from_a_compiled_bundle_and_logged_scalars(tmp_path):
    a = read_run(job(tmp_path, "a", ["lr = 0.1", "print(lr)"], {"lr": 0.2}))
    b = read_run(job(tmp_path, "b", ["lr = 0.1", "print(lr * 2)"], {"lr": 0.3}))
    assert a.notes == [] and a.cells == [(0, "lr = 0.1"), (1, "print(lr)")]  # injected: out
    assert a.scalars.curve("loss").values == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    result = compare([a, b], points=3, now=NOW)
    (change,) = result.code[0].changes
    assert (change.before, change.after) == (1, 1) and "+print(lr * 2)" in change.diff
    assert [r.values for r in result.parameters] == [[0.2, 0.3]]
    assert [s.name for s in result.scalars] == ["acc", "loss"]


def test_appended_scalars_are_read_on_the_next_comparison(tmp_path):
    rec = job(tmp_path, "a", ["lr = 0.1", "print(lr)"], {"lr": 0.2})
    assert len(read_run(rec).scalars.curve("loss").steps) == 5
    jobdir = JobDir(rec.job_dir)
    _append_scalars(jobdir, 5, {"loss": 0.01}, 0, 0)
    with open(jobdir.metrics / "scalars.jsonl", "ab") as f:
        f.write(b'{"time": 1, "step": 6, "name": "lo')  # still being written
    curve = read_run(rec).scalars.curve("loss")
    assert curve.steps == [0, 1, 2, 3, 4, 5] and curve.values[-1] == 0.01
    with open(jobdir.metrics / "scalars.jsonl", "ab") as f:
        f.write(b'ss", "value": 0.001}\n')
    assert read_run(rec).scalars.curve("loss").steps[-1] == 6


def test_links_in_a_job_directory_are_notes_not_reads(tmp_path):
    rec = job(tmp_path, "a", ["lr = 0.1", "print(lr)"], {"lr": 0.2})
    jobdir = JobDir(rec.job_dir)
    other = tmp_path / "other.jsonl"  # e.g. another user's scalars
    other.write_text(json.dumps({"time": 1, "step": 0, "name": "stolen", "value": 1}) + "\n")
    (jobdir.metrics / "scalars.jsonl").unlink()
    (jobdir.metrics / "scalars.jsonl").symlink_to(other)
    (jobdir.bundle / "cells.json").unlink()
    (jobdir.bundle / "cells.json").symlink_to("/etc/passwd")
    os.mkfifo(jobdir.lineage.with_suffix(".fifo"))
    jobdir.lineage.unlink()
    os.replace(jobdir.lineage.with_suffix(".fifo"), jobdir.lineage)
    run = read_run(rec)
    assert run.scalars.names == [] and run.cells is None and run.lineage is None
    assert [n.split(":")[0] for n in run.notes] == ["lineage", "code", "scalars"]
    assert all("symbolic link" in n or "FIFO" in n for n in run.notes)
    other = read_run(job(tmp_path, "b", ["lr = 0.1"], {"lr": 0.3}))
    assert compare([run, other], now=NOW).jobs[0].notes == run.notes


def test_scalars_file_read_as_the_writer_wrote_it(tmp_path):
    rec = job(tmp_path, "a", ["lr = 0.1", "print(lr)"], {"lr": 0.2})
    jobdir = JobDir(rec.job_dir)
    (jobdir.metrics / "scalars.jsonl").unlink()
    for step in range(4):
        _append_scalars(jobdir, step, {"loss": 4.0 - step}, 0, 0)
    _append_scalars(jobdir, 2, {"loss": 0.5}, 1, 0)  # another rank's: left out
    _append_scalars(jobdir, 4, {"loss": float("nan")}, 0, 0)  # logged as null: no point
    for step in (2, 3):
        _append_scalars(jobdir, step, {"loss": 10.0 + step}, 0, 1)  # the retry logs again
    with open(jobdir.metrics / "scalars.jsonl", "ab") as f:
        f.write(b'{"time":1,"step":9,"name":"loss","value":1e999,"rank":0,"attempt":1}\n')
        f.write(b'{"time": 1, "step": 5, "name": "lo\\u00df", "value": 2}\n')  # not the writer's
    run = read_run(rec)
    curve = run.scalars.curve("loss")
    assert (curve.steps, curve.values) == ([0, 1, 2, 3], [4.0, 3.0, 12.0, 13.0])
    assert curve.times == sorted(curve.times)
    assert run.scalars.curve("loß").values == [2.0]
    # Only the writer's own lines: the fast path gives the same as the checks of each record.
    only = tmp_path / "only.jsonl"
    lines = (jobdir.metrics / "scalars.jsonl").read_bytes().splitlines(keepends=True)[:4]
    only.write_bytes(b"".join(lines))
    fast, slow = Scalars(), Scalars()
    _parse_lines(only.read_bytes(), fast)
    for line in lines:
        slow.add(json.loads(line))
    assert fast.columns == slow.columns
