"""Sweeps as pure functions: dimensions, sampling, the command-line syntax, the early-stopping
rules on synthetic curves, and the controller's step."""

from __future__ import annotations

import math

import pytest

from trainhub.experiments import early_stop
from trainhub.experiments.controller import plan
from trainhub.experiments.models import best_trial, curve, describe, scalar_stats
from trainhub.experiments.records import SweepRecord, Trial
from trainhub.experiments.sweep import (
    EarlyStop,
    SweepSpec,
    grid_size,
    parse_early_stop,
    parse_parameter,
    parse_sweep,
    trial_parameters,
)
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.verdict import cancel_verdict, stop_reason_of_rule

JOB = {"name": "train", "source": {"path": "train.ipynb"}}


def sweep(**fields) -> SweepSpec:
    return SweepSpec.model_validate(fields)


def refused(data: dict) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as e:
        parse_sweep(data)
    return [(err.field, err.message) for err in e.value.errors]


# --- dimensions -------------------------------------------------------------------------------
def test_ranges_walk_linear_and_log_steps_with_their_stop_included() -> None:
    s = sweep(
        space={
            "epochs": {"kind": "range", "start": 1, "stop": 7, "step": 3},
            "lr": {"kind": "range", "start": 1e-4, "stop": 1e-1, "step": 10, "scale": "log"},
            "dropout": {"kind": "range", "start": 0.1, "stop": 0.3, "step": 0.1},
        }
    )
    assert s.space["epochs"].grid() == [1, 4, 7]
    assert s.space["lr"].grid() == [1e-4, 1e-3, 1e-2, 1e-1]
    assert s.space["dropout"].grid() == [0.1, 0.2, 0.3]  # not 0.30000000000000004, not dropped
    assert grid_size(s) == 36
    wide = sweep(
        space={"x": {"kind": "range", "start": 1e-300, "stop": 1e300, "step": 10, "scale": "log"}}
    )
    assert wide.space["x"].grid()[::300] == [1e-300, 1.0, 1e300]  # no overflow on the way


def test_bad_dimensions_are_refused_naming_the_field() -> None:
    assert refused(
        {
            "job": JOB,
            "sweep": {"space": {"lr": {"kind": "range", "start": 1, "stop": 0, "step": 1}}},
        }
    ) == [("sweep.space.lr.range", "stop must be at least start")]
    errors = refused(
        {
            "job": JOB,
            "sweep": {
                "space": {"lr": {"kind": "loguniform", "low": 0, "high": 1}},
                "sampler": "random",
            },
        }
    )
    assert errors == [
        ("sweep.space.lr.loguniform", "low of a log-uniform distribution must be above 0")
    ]
    errors = refused(
        {"job": JOB, "sweep": {"space": {"lr": {"kind": "uniform", "low": 0, "high": 1}}}}
    )
    assert errors[0][0] == "sweep" and "lr: a distribution is drawn" in errors[0][1]
    errors = refused({"job": JOB, "sweep": {"space": {"b": [1, 2]}, "trials": 3}})
    assert errors[0][0].startswith("sweep.space.b")  # a bare list is not a dimension object
    errors = refused({"job": JOB, "sweep": {"space": {"b": {"values": [1, 2]}}, "trials": 3}})
    assert errors == [("sweep", "trials: the grid has 2 combination(s), fewer than 3")]
    errors = refused({"job": JOB, "sweep": {"space": {"b": {"values": []}}}})
    assert errors[0][0] == "sweep.space.b.list.values"
    errors = refused({"job": JOB, "sweep": {"space": {"1b": {"values": [1]}}, "max_running": 0}})
    assert {f for f, _ in errors} == {"sweep.space", "sweep.max_running"}
    errors = refused({"job": {**JOB, "sweep": {"id": "x", "trial": 0}}, "sweep": {"space": {}}})
    assert {f for f, _ in errors} >= {"sweep.space"}


@pytest.mark.parametrize(
    "dimension",
    [
        {"kind": "range", "start": 1e-300, "stop": 1e300, "step": 2, "scale": "log"},
        {"kind": "range", "start": -1e308, "stop": 1e308, "step": 1},
        {"kind": "range", "start": 0, "stop": 1, "step": 1e-320},
        {"kind": "range", "start": 1e-320, "stop": 1e308, "step": 1.0000001, "scale": "log"},
    ],
)
def test_a_range_whose_count_overflows_a_float_is_refused_naming_it(dimension: dict) -> None:
    errors = refused({"job": JOB, "sweep": {"space": {"lr": dimension}}})
    assert errors == [("sweep.space.lr.range", "gives more than 1000 values; at most 1000")]


def test_the_grid_walks_every_combination_in_order() -> None:
    s = sweep(space={"a": {"values": [1, 2]}, "b": {"kind": "choice", "values": ["x", "y"]}})
    assert s.trial_count() == 4
    assert [trial_parameters(s, n, 0) for n in range(4)] == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]


def test_random_sampling_is_seeded_per_trial_and_stays_in_bounds() -> None:
    s = sweep(
        sampler="random",
        trials=50,
        space={
            "lr": {"kind": "loguniform", "low": 1e-4, "high": 1e-1},
            "p": {"kind": "uniform", "low": -1, "high": 1},
            "batch": {"values": [32, 64]},
        },
    )
    first = [trial_parameters(s, n, seed=7) for n in range(50)]
    assert first == [trial_parameters(s, n, seed=7) for n in range(50)]  # reproducible
    assert trial_parameters(s, 9, seed=7) == first[9]  # trial 9 alone: the same values
    assert first != [trial_parameters(s, n, seed=8) for n in range(50)]
    assert all(1e-4 <= t["lr"] <= 1e-1 and -1 <= t["p"] <= 1 for t in first)
    assert {t["batch"] for t in first} == {32, 64}
    # log-uniform: about as many draws in each decade
    decades = [math.floor(math.log10(t["lr"])) for t in first]
    assert all(decades.count(d) >= 8 for d in (-4, -3, -2))
    assert sweep(sampler="random", space={"a": {"values": [1]}}).trial_count() == 10


# --- the command line -------------------------------------------------------------------------
def test_parameters_on_the_command_line() -> None:
    assert parse_parameter("lr=loguniform:1e-4:1e-1") == (
        "lr",
        {"kind": "loguniform", "low": 1e-4, "high": 0.1},
        True,
    )
    assert parse_parameter("batch=[32,64]") == ("batch", {"kind": "list", "values": [32, 64]}, True)
    assert parse_parameter("opt=[adam, sgd]")[1] == {"kind": "list", "values": ["adam", "sgd"]}
    assert parse_parameter("opt=choice:adam,sgd")[1] == {
        "kind": "choice",
        "values": ["adam", "sgd"],
    }
    assert parse_parameter("e=range:1:9:2")[1] == {
        "kind": "range",
        "scale": "linear",
        "start": 1,
        "stop": 9,
        "step": 2,
    }
    assert parse_parameter("lr=logrange:1e-4:1e-2:10")[1]["scale"] == "log"
    assert parse_parameter("epochs=3") == ("epochs", 3, False)
    assert parse_parameter("name=run a") == ("name", "run a", False)
    with pytest.raises(SpecError, match=r"parameters\.lr: give LOW:HIGH"):
        parse_parameter("lr=uniform:1")
    with pytest.raises(SpecError, match=r"parameters\.lr: low 'x' is not a number"):
        parse_parameter("lr=uniform:x:1")
    with pytest.raises(SpecError, match="parameters: 'lr': write name=VALUE"):
        parse_parameter("lr")


def test_early_stop_on_the_command_line() -> None:
    assert parse_early_stop("median:loss:min") == {
        "rule": "median",
        "metric": "loss",
        "mode": "min",
    }
    assert parse_early_stop("halving:acc:max:10")["min_steps"] == 10
    with pytest.raises(SpecError, match="early_stop: 'median': write RULE:METRIC"):
        parse_early_stop("median")
    with pytest.raises(SpecError, match=r"early_stop\.min_steps"):
        parse_early_stop("median:loss:min:soon")
    errors = refused(
        {
            "job": JOB,
            "sweep": {
                "space": {"a": {"values": [1]}},
                "early_stop": {"rule": "mean", "metric": "l"},
            },
        }
    )
    assert errors[0][0] == "sweep.early_stop.rule"


# --- early stopping on synthetic curves -----------------------------------------------------
def line(start: float, slope: float, steps: int) -> list[tuple[int, float]]:
    return [(s, start + slope * s) for s in range(1, steps + 1)]


MEDIAN = EarlyStop(rule="median", metric="loss", mode="min", min_steps=3, min_trials=2)


def test_median_stopping_stops_a_trial_worse_than_the_median_at_its_step() -> None:
    good = [line(1.0, -0.05, 10), line(0.9, -0.04, 10), line(1.1, -0.05, 10)]
    lagging = line(2.0, -0.01, 5)
    reason = early_stop.median_stop(lagging, good, MEDIAN)
    assert reason is not None and "loss 1.95 (best by step 5)" in reason and "3 other" in reason
    assert early_stop.median_stop(line(0.5, -0.05, 5), good, MEDIAN) is None  # better: goes on
    assert early_stop.median_stop(lagging[:2], good, MEDIAN) is None  # within min_steps
    assert early_stop.median_stop(lagging, good[:1], MEDIAN) is None  # too few to compare
    # Peers that never reached the candidate's step are not compared with
    assert early_stop.median_stop(lagging, [c[:3] for c in good], MEDIAN) is None
    maximize = MEDIAN.model_copy(update={"mode": "max"})
    assert early_stop.median_stop(lagging, good, maximize) is None  # higher is better now


def test_successive_halving_keeps_one_in_eta_at_each_rung() -> None:
    rule = EarlyStop(rule="halving", metric="loss", mode="min", min_steps=2, eta=2)
    assert early_stop.rungs(rule, 17) == [2, 4, 8, 16]
    others = [line(1.0, -0.1, 8), line(1.0, -0.05, 8), line(1.0, -0.02, 8)]
    # At rung 4 a trial worse than the best half of the four goes no further
    stopped = early_stop.halving_stop(line(1.0, -0.03, 4), others, rule)
    assert stopped is not None and "at step 4 is not among the best 2 of 4" in stopped
    assert early_stop.halving_stop(line(1.0, -0.08, 4), others, rule) is None
    assert early_stop.halving_stop(line(1.0, -0.03, 1), others, rule) is None  # before any rung
    assert early_stop.halving_stop(line(1.0, -0.03, 4), [], rule) is None  # judged alone: no


def test_decide_judges_each_running_trial_against_all_others() -> None:
    ended = [line(1.0, -0.05, 10), line(1.0, -0.06, 10)]
    stops = early_stop.decide(
        MEDIAN, {"slow": line(3.0, 0.0, 6), "fast": line(0.8, -0.05, 6)}, ended
    )
    assert list(stops) == ["slow"]


# --- the controller's step --------------------------------------------------------------------
def job(job_id: str, trial: int, state: JobState) -> JobRecord:
    spec = parse_spec({**JOB, "sweep": {"id": "s-1", "trial": trial}})
    return JobRecord(
        id=job_id,
        name="train",
        user="ada",
        priority=1,
        state=state,
        spec=spec,
        job_dir=f"/jobs/{job_id}",
        gpus=0,
        created_at=1.0,
    )


def record(trials: list[Trial], **sweep_fields) -> SweepRecord:
    fields = {"space": {"a": {"values": [1, 2, 3, 4, 5]}}, "max_running": 2, **sweep_fields}
    return SweepRecord(
        id="s-1",
        name="train",
        user="ada",
        created_at=1.0,
        job=parse_spec(JOB),
        sweep=SweepSpec.model_validate(fields),
    ).model_copy(update={"trials": trials})


def test_a_step_submits_while_fewer_than_max_running_are_active() -> None:
    assert plan(record([]), {}, {}).submit == [0, 1]
    trials = [
        Trial(trial=0, parameters={}, job_id="j0"),
        Trial(trial=1, parameters={}, job_id="j1"),
    ]
    jobs = {"j0": job("j0", 0, JobState.RUNNING), "j1": job("j1", 1, JobState.QUEUED)}
    assert plan(record(trials), jobs, {}).submit == []  # a queued trial is active too
    jobs["j1"] = job("j1", 1, JobState.FAILED)
    assert plan(record(trials), jobs, {}).submit == [2]
    claimed = [*trials, Trial(trial=2, parameters={})]  # claimed, its job not seen yet
    assert plan(record(claimed), jobs, {}).submit == []
    refused_trial = Trial(trial=2, parameters={}, error="refused")
    assert plan(record([*trials, refused_trial]), jobs, {}).submit == [3]


def test_a_step_stops_lagging_trials_and_fills_their_place() -> None:
    rule = {"rule": "median", "metric": "loss", "min_steps": 3, "min_trials": 2}
    trials = [Trial(trial=n, parameters={}, job_id=f"j{n}") for n in range(4)]
    jobs = {
        "j0": job("j0", 0, JobState.SUCCEEDED),
        "j1": job("j1", 1, JobState.SUCCEEDED),
        "j2": job("j2", 2, JobState.RUNNING),
        "j3": job("j3", 3, JobState.RUNNING),
    }
    curves = {
        "j0": line(1.0, -0.05, 10),
        "j1": line(1.0, -0.06, 10),
        "j2": line(3.0, 0.0, 5),
        "j3": line(0.5, -0.05, 5),
    }
    step = plan(record(trials, early_stop=rule), jobs, curves)
    assert list(step.stop) == ["j2"] and step.submit == [4] and not step.finished


def test_a_sweep_finishes_when_every_trial_ended() -> None:
    trials = [Trial(trial=n, parameters={}, job_id=f"j{n}") for n in range(5)]
    jobs = {f"j{n}": job(f"j{n}", n, JobState.SUCCEEDED) for n in range(5)}
    assert plan(record(trials), jobs, {}).finished
    jobs["j4"] = job("j4", 4, JobState.RUNNING)
    assert not plan(record(trials), jobs, {}).finished


# --- views --------------------------------------------------------------------------------------
def test_scalars_and_the_best_trial() -> None:
    lines = [
        {"name": "loss", "step": 0, "value": 2.0},
        {"name": "loss", "step": 1, "value": 1.0},
        {"name": "loss", "step": 2, "value": 1.5},
        {"name": "loss", "step": 3, "value": None, "nonfinite": "nan"},
        {"name": "acc", "step": 2, "value": 0.5},
    ]
    stats = scalar_stats(lines)
    assert stats["loss"].model_dump() == {"last": 1.5, "min": 1.0, "max": 2.0, "step": 2}
    assert curve(lines, "loss") == [(0, 2.0), (1, 1.0), (2, 1.5)]
    trials = [Trial(trial=n, parameters={"a": n}, job_id=f"j{n}") for n in range(3)]
    jobs = {
        "j0": job("j0", 0, JobState.SUCCEEDED),
        "j1": job("j1", 1, JobState.CANCELLED).model_copy(
            update={"verdict": Verdict(failure_class=FailureClass.STOPPED_EARLY, reason="lagging")}
        ),
        "j2": job("j2", 2, JobState.SUCCEEDED),
    }
    scalars = {
        "j0": scalar_stats([{"name": "loss", "step": 1, "value": 0.7}]),
        "j1": scalar_stats([{"name": "loss", "step": 1, "value": 0.1}]),  # stopped: never best
        "j2": scalar_stats([{"name": "loss", "step": 1, "value": 0.5}]),
    }
    rec = record(trials, metric="loss")
    view = describe(rec, jobs, scalars)
    assert view.best_trial == 2 and [v.best for v in view.trial_views] == [False, False, True]
    assert view.stopped_early == 1 and view.ended == 3 and view.trials == 5
    assert view.trial_views[1].failure_class == FailureClass.STOPPED_EARLY
    assert best_trial(view.trial_views, "max") == 0


def test_a_rule_stop_has_its_own_verdict() -> None:
    stopped = cancel_verdict(stop_reason_of_rule("loss 2 is worse than the median"), attempt=1)
    assert stopped.failure_class == FailureClass.STOPPED_EARLY
    assert stopped.reason == "loss 2 is worse than the median" and not stopped.retriable
    assert cancel_verdict("cancelled by ada", 0).failure_class == FailureClass.CANCELLED
