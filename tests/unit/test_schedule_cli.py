"""``trainhub schedule create``'s arguments as a schedule's request: a ``*.pipeline.yaml``
makes a pipeline target with its parameters and cache; job options are refused for it."""

from __future__ import annotations

import pytest

from trainhub.cli import parser
from trainhub.errors import TrainhubError
from trainhub.schedules.cli import request_of
from trainhub.schedules.model import parse_schedule


def create(*argv: str) -> dict:
    args = parser().parse_args(["schedule", "create", *argv, "--cron", "0 2 * * *"])
    return request_of(args)


def test_a_pipeline_file_makes_a_pipeline_target():
    request = create("flows/nightly.pipeline.yaml", "-p", "rows=4", "--no-cache", "--tz", "UTC")
    assert request["name"] == "nightly"
    assert request["target"] == {
        "kind": "pipeline",
        "file": "flows/nightly.pipeline.yaml",
        "parameters": {"rows": 4},
        "cache": False,
    }
    assert parse_schedule(request).target.kind == "pipeline"
    assert create("nightly.pipeline.yml")["target"]["cache"] is True


def test_a_notebook_still_makes_a_job_target():
    request = create("train.ipynb", "-p", "lr=0.1", "--gpus", "1")
    assert request["target"]["kind"] == "notebook"
    assert request["target"]["job"]["parameters"] == {"lr": 0.1}


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["flow.pipeline.yaml", "--gpus", "2"], "--gpus: a job option"),
        (["flow.pipeline.yaml", "--name", "x", "--notify", "failure"], "--name, --notify"),
        (["train.ipynb", "--no-cache"], "--no-cache is a pipeline's option"),
    ],
)
def test_options_of_the_other_kind_are_refused(argv, words):
    with pytest.raises(TrainhubError, match=words):
        create(*argv)
