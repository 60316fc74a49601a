"""Datasets by name through the real server: the listing shows what the user's team may read,
a submit names datasets by name, another team's is refused naming those it may read, and a
broken datasets file is the admin's to mend (503, a sentence, no server path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.server.conftest import spec


@pytest.fixture
def datasets_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    for name in ("imagenet", "c4", "coco"):
        (data / name).mkdir(parents=True)
        (data / name / "part-0").write_text(name)
    f = tmp_path / "datasets.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "datasets": {
                    "imagenet": {
                        "path": str(data / "imagenet"),
                        "description": "ILSVRC2012",
                        "owner": "vision-data",
                        "teams": ["vision"],
                    },
                    "c4": {"path": str(data / "c4"), "teams": ["nlp"]},
                    "coco": {"path": str(data / "coco"), "description": "for everyone here"},
                }
            }
        )
    )
    monkeypatch.setenv("TRAINHUB_DATASETS_FILE", str(f))
    monkeypatch.setenv("TRAINHUB_DATASET_ROOTS", str(data))
    monkeypatch.setenv("TRAINHUB_TEAM", "vision")
    return f


async def test_the_listing_shows_what_the_team_may_read(api: Any, datasets_file: Path) -> None:
    status, answer, _ = await api("GET", "datasets")
    assert status == 200
    data = datasets_file.parent / "data"
    assert answer == {
        "datasets": [
            {
                "name": "coco",
                "description": "for everyone here",
                "read_only": True,
                "owner": "",
                "team": None,
                "path": str(data / "coco"),
            },
            {
                "name": "imagenet",
                "description": "ILSVRC2012",
                "read_only": True,
                "owner": "vision-data",
                "team": None,
                "path": str(data / "imagenet"),
            },
        ]
    }


async def test_no_datasets_file_lists_none(api: Any, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRAINHUB_DATASETS_FILE", str(tmp_path / "absent.yaml"))
    status, answer, _ = await api("GET", "datasets")
    assert (status, answer) == (200, {"datasets": []})


async def test_a_submit_names_datasets_and_another_teams_is_refused(
    api: Any, datasets_file: Path
) -> None:
    status, answer, _ = await api(
        "POST", "jobs", body=spec(datasets=["imagenet", {"name": "coco"}]), params={"dry_run": "1"}
    )
    assert status == 200 and answer["valid"] is True, answer
    for name in ("c4", "unknown"):
        status, error, _ = await api(
            "POST", "jobs", body=spec(datasets=["coco", name]), params={"dry_run": "1"}
        )
        assert status == 400
        assert error["errors"] == [
            {
                "field": "datasets.1.name",
                "message": f"no dataset {name!r} that team vision may read "
                "(team vision may read: coco, imagenet)",
            }
        ]


async def test_a_broken_datasets_file_answers_503_without_a_server_path(
    api: Any, datasets_file: Path
) -> None:
    datasets_file.write_text("datasets: {imagenet: {path: /etc, colour: blue}}")
    status, error, _ = await api("GET", "datasets")
    assert status == 503
    assert error["message"] == "datasets.yaml: datasets.imagenet.colour: is not a known field"
    assert str(datasets_file.parent) not in json.dumps(error)
