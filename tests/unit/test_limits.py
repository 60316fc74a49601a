"""The documented limits: defaults, overrides by setting, and the helpers that measure input."""

from __future__ import annotations

import pytest

from trainhub.jobs import limits
from trainhub.jobs.spec import SpecError, parse_spec

SPEC = {"name": "x", "source": {"path": "a.ipynb"}}


def test_a_setting_overrides_a_limit(monkeypatch):
    monkeypatch.setenv("TRAINHUB_LIMIT_PARAMETER_BYTES", "10")
    parse_spec({**SPEC, "parameters": {"lr": "short"}})
    with pytest.raises(SpecError, match=r"parameters: lr: larger than 10 bytes"):
        parse_spec({**SPEC, "parameters": {"lr": "a value over ten bytes"}})


def test_a_bad_setting_names_itself():
    with pytest.raises(ValueError, match="TRAINHUB_LIMIT_TAGS='many'"):
        limits.current({"TRAINHUB_LIMIT_TAGS": "many"})


def test_depth_and_finiteness_are_measured_without_recursion():
    value: list = []
    for _ in range(100_000):
        value = [value]
    assert limits.nesting_depth(value) == 100_001
    assert limits.nesting_depth({"a": [1, {"b": 2}]}) == 3 and limits.nesting_depth(5) == 0
    assert limits.non_finite({"a": [1.0, float("inf")]}) and not limits.non_finite({"a": [1.5]})
