from datetime import timedelta

import pytest

from trainhub.jobs.quantities import parse_quantity
from trainhub.jobs.spec import SpecError, default_name, parse_spec
from trainhub.jobs.specparts import RetryPolicy

BASE = {"name": "train", "source": {"path": "nb/train.ipynb"}}


def errors(data) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return {e.field: e.message for e in info.value.errors}


def test_minimal_spec_has_sensible_defaults():
    spec = parse_spec(BASE)
    assert spec.source.kind == "notebook" and spec.source.cells.mode == "all"
    assert spec.resources.world_size == 1 and spec.resources.total_gpus == 0
    assert spec.priority.value == "normal" and spec.retry.infrastructure == 2


def test_script_source_is_inferred_from_the_file_name():
    spec = parse_spec({"name": "s", "source": {"path": "train.py", "args": ["--lr", "0.1"]}})
    assert spec.source.kind == "script" and spec.source.args == ["--lr", "0.1"]


def test_each_bad_field_is_named_with_a_sentence():
    found = errors(
        {
            "name": "Bad Name",
            "source": {"kind": "notebook", "path": "x.py"},
            "resources": {"gpus_per_worker": 2, "processes_per_worker": 4, "workers": 0},
            "env": {"RANK": "3"},
            "max_runtime": "soon",
            "priority": "urgent",
            "surprise": 1,
        }
    )
    assert found["name"].startswith("use lower-case letters")
    assert found["source.path"] == "'x.py' is not a notebook (.ipynb)"
    assert "greater than or equal to 1" in found["resources.workers"]
    assert found["env"] == "RANK is set by trainhub for every rank and cannot be overridden"
    assert found["max_runtime"] == "'soon' is not a duration such as 90m, 2h or 1d12h"
    assert "priority" in found and found["surprise"] == "is not a known field"


def test_processes_cannot_outnumber_gpus():
    found = errors({**BASE, "resources": {"gpus_per_worker": 2, "processes_per_worker": 4}})
    assert (
        found["resources"]
        == "4 processes per worker cannot share 2 GPU(s): use at most one process per GPU"
    )


def test_cell_selection_must_name_cells():
    assert (
        "needs at least one cell index"
        in errors({**BASE, "source": {"path": "a.ipynb", "cells": {"mode": "indices"}}})[
            "source.cells"
        ]
    )


def test_durations_quantities_and_names():
    assert parse_spec({**BASE, "max_runtime": "1d2h30m"}).max_runtime == timedelta(
        days=1, hours=2, minutes=30
    )
    assert parse_spec({**BASE, "max_runtime": 90}).max_runtime == timedelta(seconds=90)
    # A stored spec (JSON, ISO 8601 durations) reads back as the spec it was.
    stored = parse_spec({**BASE, "max_runtime": "1h30m"}).model_dump(mode="json")
    assert stored["max_runtime"] == "PT1H30M"
    assert parse_spec(stored).max_runtime == timedelta(hours=1, minutes=30)
    assert parse_spec({**BASE, "max_runtime": "P1DT2S"}).max_runtime == timedelta(days=1, seconds=2)
    # Whole seconds, rounded up, so the stored form is one RFC 3339 admits (no PT1.5S).
    odd = parse_spec({**BASE, "max_runtime": 1.5}).model_dump(mode="json")["max_runtime"]
    assert odd == "PT2S"
    assert parse_spec({**BASE, "max_runtime": "PT1.5S"}).max_runtime == timedelta(seconds=2)
    assert parse_quantity("16Gi") == 16 * 2**30 and parse_quantity("2G") == 2 * 10**9
    assert default_name("notebooks/My Fancy_Model v2.ipynb") == "my-fancy-model-v2"
    assert errors({**BASE, "resources": {"memory": "lots"}})["resources.memory"].startswith(
        "'lots' is not a quantity"
    )


def test_retry_policy_has_no_retries_for_code():
    assert "code" not in RetryPolicy.model_fields


def test_parameter_names_are_identifiers_not_keywords_and_values_finite():
    def refused(parameters) -> str:
        return errors({**BASE, "parameters": parameters})["parameters"]

    assert (
        refused({"class": 1})
        == "'class' is a Python keyword; a parameter is assigned as a variable"
    )
    assert "is not a Python identifier" in refused({"2fast": 1})
    for value in (float("nan"), float("inf"), -float("inf"), [1.0, {"a": float("nan")}]):
        assert (
            refused({"lr": value}) == "lr: NaN and infinity are not values a notebook can be given"
        )
    spec = parse_spec({**BASE, "parameters": {"lr": 1e308, "klass": 1, "_x": [0.5]}})
    assert spec.parameters["lr"] == 1e308 and not spec.allow_new_parameters


def test_parameters_must_be_identifiers_and_datasets_unique():
    assert (
        "is not a Python identifier"
        in errors({**BASE, "parameters": {"learning rate": 1}})["parameters"]
    )
    ds = [{"name": "imagenet", "path": "/a"}, {"name": "imagenet", "path": "/b"}]
    assert errors({**BASE, "datasets": ds})["datasets"] == "dataset name(s) used twice: imagenet"


def test_workers_min_max_makes_an_elastic_job_and_fixed_sizes_stay_as_they_were():
    res = parse_spec({**BASE, "resources": {"workers": "1:3"}}).resources
    assert (res.min_workers, res.workers, res.elastic, res.worker_range) == (1, 3, True, "1:3")
    assert res.fewest_workers == 1 and res.world_size == 3  # sized at MAX
    same = parse_spec({**BASE, "resources": {"min_workers": 1, "workers": 3}}).resources
    assert same == res
    for fixed in ({"workers": 3}, {"workers": "3"}, {"workers": "3:3"}):
        res = parse_spec({**BASE, "resources": fixed}).resources
        assert (res.workers, res.min_workers, res.elastic, res.fewest_workers) == (
            3,
            None,
            False,
            3,
        )
    assert parse_spec(BASE).resources.model_dump()["min_workers"] is None


def test_bad_worker_ranges_name_the_field():
    def of(workers, **more):
        return errors({**BASE, "resources": {"workers": workers, **more}})

    assert (
        of("4:3")["resources.min_workers"] == "4 is more than workers (3): MIN must be at most MAX"
    )
    assert "greater than or equal to 1" in of("0:3")["resources.min_workers"]
    assert "less than or equal to 512" in of("1:999")["resources.workers"]
    assert of("a:3")["resources.workers"] == "'a:3': use a whole number, or MIN:MAX such as 1:3"
    assert "give one of them" in of("1:3", min_workers=2)["resources"]


def test_the_request_schema_offers_min_max_and_answers_carry_numbers():
    from trainhub.jobs.specparts import Resources

    asked = Resources.model_json_schema()["properties"]["workers"]
    assert [s["type"] for s in asked["anyOf"]] == ["integer", "string"]
    assert Resources.model_json_schema(mode="serialization")["properties"]["workers"]["type"] == (
        "integer"
    )
