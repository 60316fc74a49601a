"""Sentences shown to users never carry the server's absolute paths."""

from __future__ import annotations

import pytest

from trainhub.bundle.compile import compile_bundle
from trainhub.bundle.errors import BundleError
from trainhub.errors import scrub_paths
from trainhub.jobs.spec import JobSpec


def test_absolute_paths_are_cut_to_their_last_part():
    assert scrub_paths("no such file in the workspace /home/alice/ws.") == (
        "no such file in the workspace ws."
    )
    assert scrub_paths("cannot read '/srv/jobs/x-1/spec.json': denied") == (
        "cannot read 'spec.json': denied"
    )
    assert scrub_paths("a link to /etc/passwd, outside") == "a link to passwd, outside"


def test_what_is_not_an_absolute_path_stays():
    for text in ("ranks 0/1 of 2", "see http://host/a/b", "cpu / memory", "a/b/c.txt", "~/x/y"):
        assert scrub_paths(text) == text


def test_paths_below_a_published_root_stay_whole():
    text = "dataset a: no such path /data/imagenet/train; not /srv/secret/x"
    assert scrub_paths(text, keep=["/data"]) == (
        "dataset a: no such path /data/imagenet/train; not x"
    )
    assert scrub_paths("/database/x", keep=["/data"]) == "x"


def test_bundle_refusals_name_the_file_relative_to_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for path in ("missing.ipynb", "../outside.ipynb"):
        spec = JobSpec.model_validate({"name": "t", "source": {"path": path}})
        with pytest.raises(BundleError) as err:
            compile_bundle(spec, ws, tmp_path / "bundle")
        assert str(tmp_path) not in str(err.value) and path in str(err.value)
