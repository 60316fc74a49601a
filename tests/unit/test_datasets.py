"""Dataset paths: only below the workspace or a dataset root, refused without a look."""

from __future__ import annotations

import pytest

from trainhub.jobs.datasets import check_dataset_paths
from trainhub.jobs.spec import SpecError
from trainhub.jobs.specparts import Dataset


def refusal(datasets: list[Dataset], roots) -> tuple[str, str]:
    with pytest.raises(SpecError) as err:
        check_dataset_paths(datasets, roots)
    (error,) = err.value.errors
    return error.field, error.message


def test_a_path_outside_the_roots_is_refused_alike_whether_it_exists_or_not(tmp_path):
    ws, data, outside = tmp_path / "ws", tmp_path / "data", tmp_path / "outside"
    for d in (ws, data, outside):
        d.mkdir()
    (outside / "secret").write_text("x")
    roots = [ws, data]
    here = refusal([Dataset(name="a", path=str(outside / "secret"))], roots)
    absent = refusal([Dataset(name="a", path=str(outside / "absent"))], roots)
    assert here == absent
    field, message = here
    assert field == "datasets.0.path" and "outside the dataset roots" in message
    assert "secret" not in message and str(outside) not in message
    assert f"below one of {data}" in message


def test_dots_and_links_cannot_lead_out_of_a_root(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (data / "escape").symlink_to(outside)
    for path in (f"{data}/../outside", str(data / "escape")):
        _, message = refusal([Dataset(name="a", path=path)], [data])
        assert "outside the dataset roots" in message


def test_inside_a_root_it_must_exist_and_be_absolute(tmp_path):
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    check_dataset_paths(
        [Dataset(name="a", path=str(data)), Dataset(name="b", path=str(data / "train"))], [data]
    )
    ok = Dataset(name="a", path=str(data))
    field, message = refusal([ok, Dataset(name="b", path=str(data / "missing"))], [data])
    assert field == "datasets.1.path" and message == f"dataset b: no such path {data}/missing"
    field, message = refusal([Dataset(name="c", path="data/train")], [data])
    assert field == "datasets.0.path" and "give an absolute path" in message


def test_no_root_named_says_so(tmp_path):
    _, message = refusal([Dataset(name="a", path="/etc")], [tmp_path])
    assert "TRAINHUB_DATASET_ROOTS (none is named)" in message
