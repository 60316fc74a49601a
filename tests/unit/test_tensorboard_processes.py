"""The --logdir_spec a TensorBoard over jobs reads, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainhub.jobs.spec import SpecError
from trainhub.metrics.tensorboard_processes import logdir_spec


def test_each_job_is_a_run_named_by_its_id():
    spec = logdir_spec({"a-1": Path("/jobs/a-1"), "b-2": Path("/jobs/b-2")})
    assert spec == "a-1:/jobs/a-1,b-2:/jobs/b-2"


@pytest.mark.parametrize(
    "runs",
    [
        {},
        {f"j{i}": Path(f"/jobs/j{i}") for i in range(11)},
        {"a:b": Path("/j")},
        {"a": Path("/j,k")},
    ],
)
def test_what_tensorboard_would_misread_is_refused_naming_ids(runs):
    with pytest.raises(SpecError) as refused:
        logdir_spec(runs)
    assert refused.value.errors[0].field == "ids"
