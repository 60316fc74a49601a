"""Datasets by name on a real control plane: the Job the backend creates mounts each one
read-only at /datasets/<name> (claim + subPath, or the shared volume's subPath), its ranks are
told where, and a dataset of another team is refused before any object is made."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.test_backend import Team, applied_team
from trainhub.jobs.spec import SpecError


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    ns = k8s_namespace.name
    coco = tmp_path / ns / "datasets" / "coco"
    coco.mkdir(parents=True)
    (coco / "instances.json").write_text("{}")
    datasets = {
        "imagenet": {"claim": "imagenet", "sub_path": "ILSVRC2012", "owner": "data-team"},
        "coco": {"path": str(coco), "description": "COCO 2017"},
    }
    yield from applied_team(k8s_namespace, tmp_path, datasets=datasets)


def submit(team: Team, datasets: list[Any]) -> str:
    spec = {
        "name": "data",
        "source": {"path": "train.py"},
        "team": team.ns,
        "resources": {"workers": 1, "gpus_per_worker": 1},
        "datasets": datasets,
    }
    return team.service.submit(spec, user="ada").id


def test_the_created_job_mounts_its_datasets_read_only(team: Team) -> None:
    listed = [(d.name, d.path, d.owner) for d in team.service.datasets().datasets]
    assert listed == [
        ("coco", "/datasets/coco", ""),
        ("imagenet", "/datasets/imagenet", "data-team"),
    ]
    job_id = submit(team, ["imagenet", "coco"])
    job = client.BatchV1Api(team.api).read_namespaced_job(job_id, team.ns)
    pod = team.api.sanitize_for_serialization(job.spec.template.spec)
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/datasets/imagenet"] == {
        "name": "dataset-imagenet",
        "mountPath": "/datasets/imagenet",
        "readOnly": True,
        "subPath": "ILSVRC2012",
    }
    assert mounts["/datasets/coco"] == {
        "name": "shared",
        "mountPath": "/datasets/coco",
        "readOnly": True,
        "subPath": "datasets/coco",
    }
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dataset-imagenet"]["persistentVolumeClaim"] == {
        "claimName": "imagenet",
        "readOnly": True,
    }
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TRAINHUB_DATASETS"] == "imagenet,coco"
    assert env["TRAINHUB_DATASET_IMAGENET"] == "/datasets/imagenet"
    assert env["TRAINHUB_DATASET_COCO"] == "/datasets/coco"
    # The lineage fingerprints what the session sees: the path dataset where it lies.
    described = team.service.describe(job_id, user="ada")
    lineage = {d["name"]: d for d in described.lineage["datasets"]}
    assert lineage["coco"]["fingerprint"]["files"] == 1
    assert lineage["coco"]["path"] == "/datasets/coco"
    spec = json.loads((Path(described.job_dir) / "spec.json").read_text())
    assert [d["catalog"] for d in spec["datasets"]] == [True, True]


def test_another_teams_dataset_is_refused_before_any_object_is_made(team: Team) -> None:
    with pytest.raises(SpecError) as err:
        submit(team, ["coco", "c4"])
    (error,) = err.value.errors
    assert (error.field, error.message) == (
        "datasets.1.name",
        f"no dataset 'c4' that team {team.ns} may read (team {team.ns} may read: coco, imagenet)",
    )
    jobs = client.BatchV1Api(team.api).list_namespaced_job(team.ns).items
    assert jobs == []
    assert not any(team.backend.jobs_root.glob("data-*"))
