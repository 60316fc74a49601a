"""The teams file: the shipped one loads; every kind of mistake is named by its path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from trainhub.teams import TeamsError, load_teams, parse_teams

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())


def errors_of(mutate) -> dict[str, str]:
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(TeamsError) as info:
        parse_teams(data)
    return dict(info.value.errors)


def test_shipped_teams_file_loads() -> None:
    teams = load_teams(REPO / "hub_config" / "teams.yaml")
    assert [t.name for t in teams.teams] == ["vision", "nlp"]
    assert {p.name: p.node_labels for p in teams.pools} == {
        "a100": {"trainhub.io/pool": "a100"},
        "t4": {"trainhub.io/pool": "t4"},
    }
    assert [t.name for t in teams.teams_of(["nlp-interns", "other"])] == ["nlp"]
    assert teams.team("nlp").quota["a100"].borrowing_limit.gpus == 4


def test_negative_quota_names_its_path() -> None:
    errors = errors_of(lambda d: d["teams"][1]["quota"]["a100"].update(gpus=-1))
    assert errors == {"teams[1].quota.a100.gpus": "must be >= 0"}


def test_unknown_pool_and_image_references() -> None:
    def mutate(d):
        d["teams"][0]["quota"]["h100"] = {"gpus": 8, "cpu": "8", "memory": "8Gi"}
        d["teams"][1]["images"].append("tensorflow")

    errors = errors_of(mutate)
    assert errors["teams[0].quota.h100"] == "unknown pool 'h100' (known: a100, t4)"
    assert errors["teams[1].images[2]"].startswith("unknown image 'tensorflow'")


def test_duplicates_are_refused() -> None:
    def mutate(d):
        d["teams"][1]["namespace"] = d["teams"][0]["namespace"]
        d["pools"].append(copy.deepcopy(d["pools"][0]))

    errors = errors_of(mutate)
    assert errors["teams[1].namespace"] == "'team-vision' is already used by teams[0]"
    assert errors["pools[2].name"] == "'a100' is already used by pools[0]"


@pytest.mark.parametrize("namespace", ["Team_Vision", "kube-system", "-x", "a" * 64])
def test_namespace_must_be_a_dns_label(namespace: str) -> None:
    errors = errors_of(lambda d: d["teams"][0].update(namespace=namespace))
    assert list(errors) == ["teams[0].namespace"]


@pytest.mark.parametrize("ref", ["repo/img", "repo/img:latest", "repo/img@sha256:abc"])
def test_images_must_be_pinned(ref: str) -> None:
    errors = errors_of(lambda d: d["images"][0].update(image=ref))
    assert "is not pinned" in errors["images[0].image"]


def test_digest_pinned_image_is_accepted() -> None:
    data = copy.deepcopy(BASE)
    data["images"][0]["image"] = "repo/img@sha256:" + "a" * 64
    assert parse_teams(data).image("pytorch").image.endswith("a" * 64)


def test_bad_quantities_unknown_fields_and_dataset_outside_volume() -> None:
    def mutate(d):
        d["teams"][0]["quota"]["t4"]["memory"] = "lots"
        d["teams"][0]["shared_volume"].update(size="big", storage_class="Fast_NFS")
        d["teams"][1]["colour"] = "blue"

    errors = errors_of(mutate)
    assert errors["teams[0].quota.t4.memory"].startswith("'lots' is not a quantity")
    assert errors["teams[0].shared_volume.size"].startswith("'big' is not a quantity")
    assert "teams[0].shared_volume.storage_class" in errors
    assert errors["teams[1].colour"] == "is not a known field"
    errors = errors_of(lambda d: d["teams"][0]["datasets"].update(coco={"path": "/data/coco"}))
    assert "not below the shared volume" in errors["teams[0].datasets.coco.path"]

    def sized_with_a_controller(d):
        d["teams"][0]["shared_volume"]["size"] = "1Ti"
        d["controller"] = {}

    errors = errors_of(sized_with_a_controller)
    assert "controller's claim cannot share" in errors["teams[0].shared_volume.size"]


def test_session_size_must_fit_a_node_and_priorities_must_increase() -> None:
    errors = errors_of(lambda d: d["teams"][0].update(session_gpus=[0, 9]))
    assert errors["teams[0].session_gpus"].startswith("9 GPUs do not fit")
    errors = errors_of(lambda d: d.update(priorities={"low": 5, "normal": 5, "high": 1}))
    assert "increase" in errors["priorities"]


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "teams.yaml"
    bad.write_text("pools: [")
    with pytest.raises(TeamsError, match=r"teams.yaml: teams file: is not valid YAML"):
        load_teams(bad)


def test_image_catalog_is_merged(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    (tmp_path / "catalog.yaml").write_text(
        yaml.safe_dump(
            {
                "images": [
                    {"name": "jax", "image": "repo/jax:0.4.35", "frameworks": {"jax": "0.4.35"}}
                ]
            }
        )
    )
    data["image_catalog"] = "catalog.yaml"
    data["teams"][0]["images"].append("jax")
    (tmp_path / "teams.yaml").write_text(yaml.safe_dump(data))
    assert load_teams(tmp_path / "teams.yaml").image("jax").frameworks == {"jax": "0.4.35"}


def test_a_pool_may_be_gpu_only_and_a_team_sets_its_wait_grace() -> None:
    teams = load_teams(REPO / "hub_config" / "teams.yaml")
    assert teams.pool("a100").gpu_only and not teams.pool("t4").gpu_only
    assert teams.team("vision").wait_grace_minutes == 15
    assert teams.team("nlp").wait_grace_minutes == 10  # the default
    errors = errors_of(lambda d: d["teams"][1].update(wait_grace_minutes=-1))
    assert errors == {"teams[1].wait_grace_minutes": "must be >= 0"}
    errors = errors_of(lambda d: d["pools"][0].update(gpu_only="sometimes"))
    assert list(errors) == ["pools[0].gpu_only"]


def test_a_team_names_who_moves_its_protected_model_aliases() -> None:
    teams = load_teams(REPO / "hub_config" / "teams.yaml")
    assert teams.team("vision").models.roles == {"model-approver": ["ada"]}
    nlp = teams.team("nlp").models  # none written: production is protected, nobody holds it
    assert (nlp.protected_aliases, nlp.roles) == ({"production": "model-approver"}, {})
    errors = errors_of(lambda d: d["teams"][0]["models"].update(protected_aliases={"Prod": "x"}))
    assert list(errors) == ["teams[0].models.protected_aliases"]
    errors = errors_of(lambda d: d["teams"][0]["models"].update(owners=["ada"]))
    assert errors == {"teams[0].models.owners": "is not a known field"}
