"""The image policy as pure functions: catalog only, or also pinned images under prefixes; the
teams file and the local images file refuse a bad policy naming the field."""

from __future__ import annotations

import copy
import datetime
from pathlib import Path

import pytest
import yaml

from trainhub.errors import NotAllowed
from trainhub.imagepolicy import (
    ImagesFileError,
    choose_image,
    describe_policy,
    load_images_file,
    local_image,
    parse_images_file,
)
from trainhub.teams import Image, ImagePolicy, Scan, TeamsError, parse_teams

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())
PYTORCH = Image(name="pytorch", image="ghcr.io/trainhub/pytorch:2.5.1-cuda12.4", owner="ml-infra")
NLP = Image(name="pytorch-nlp", image="ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4")
CATALOG = ImagePolicy()
PREFIXES = ImagePolicy(policy="prefixes", allowed_prefixes=["ghcr.io/vision-lab/"])


def test_catalog_images_are_allowed_by_name_or_reference() -> None:
    by_name = choose_image("pytorch", team="vision", offered=[PYTORCH], policy=CATALOG)
    assert (by_name.reference, by_name.entry, by_name.rule) == (PYTORCH.image, PYTORCH, "catalog")
    by_ref = choose_image(PYTORCH.image, team="vision", offered=[PYTORCH], policy=CATALOG)
    assert by_ref.entry == PYTORCH
    first = choose_image(None, team="vision", offered=[PYTORCH, NLP], policy=CATALOG)
    assert first.reference == PYTORCH.image


def test_anything_else_is_refused_naming_the_image_and_the_policy() -> None:
    with pytest.raises(NotAllowed) as e:
        choose_image("docker.io/evil/miner:1", team="vision", offered=[PYTORCH], policy=CATALOG)
    assert str(e.value) == (
        "image 'docker.io/evil/miner:1' is not allowed: team vision allows its catalog images "
        "only (pytorch)"
    )
    # Another team's catalog image is not this team's.
    with pytest.raises(NotAllowed, match="image 'pytorch-nlp' is not allowed"):
        choose_image("pytorch-nlp", team="vision", offered=[PYTORCH], policy=CATALOG)
    # Under the catalog policy a prefix image is refused too.
    with pytest.raises(NotAllowed, match="catalog images only"):
        choose_image("ghcr.io/vision-lab/exp:3", team="vision", offered=[PYTORCH], policy=CATALOG)


def test_prefixes_allow_pinned_images_under_them_and_nothing_beside() -> None:
    ok = choose_image("ghcr.io/vision-lab/exp:3", team="vision", offered=[PYTORCH], policy=PREFIXES)
    assert (ok.reference, ok.entry, ok.rule) == (
        "ghcr.io/vision-lab/exp:3",
        None,
        "prefix ghcr.io/vision-lab/",
    )
    digest = "ghcr.io/vision-lab/exp@sha256:" + "a" * 64
    assert choose_image(digest, team="vision", offered=[], policy=PREFIXES).reference == digest
    with pytest.raises(NotAllowed) as e:
        choose_image(
            "ghcr.io/vision-lab-x/exp:3", team="vision", offered=[PYTORCH], policy=PREFIXES
        )
    assert str(e.value) == (
        "image 'ghcr.io/vision-lab-x/exp:3' is not allowed: team vision allows its catalog "
        "images (pytorch) and pinned images under ghcr.io/vision-lab/"
    )
    for unpinned in ("ghcr.io/vision-lab/exp", "ghcr.io/vision-lab/exp:latest"):
        with pytest.raises(NotAllowed, match=r"under the allowed prefix ghcr\.io/vision-lab/ but"):
            choose_image(unpinned, team="vision", offered=[PYTORCH], policy=PREFIXES)


def test_a_catalog_image_that_failed_its_scan_is_refused() -> None:
    failed = PYTORCH.model_copy(
        update={"scan": Scan(status="failed", at=datetime.date(2026, 11, 30))}
    )
    with pytest.raises(NotAllowed) as e:
        choose_image("pytorch", team="vision", offered=[failed], policy=CATALOG)
    assert str(e.value).startswith(
        "image pytorch (ghcr.io/trainhub/pytorch:2.5.1-cuda12.4) failed its scan on 2026-11-30"
    )
    assert PYTORCH.scan.status == "unscanned"  # the default: recorded, not refused


def test_describe_policy_without_a_team() -> None:
    assert (
        describe_policy(None, [], CATALOG)
        == "this installation allows its catalog images only (none)"
    )


def _team_errors(policy) -> dict[str, str]:
    data = copy.deepcopy(BASE)
    data["teams"][0]["image_policy"] = policy
    with pytest.raises(TeamsError) as info:
        parse_teams(data)
    return dict(info.value.errors)


def test_the_teams_file_names_a_bad_policy_field() -> None:
    assert _team_errors({"policy": "anything"})["teams[0].image_policy.policy"].startswith(
        "Input should be 'catalog' or 'prefixes'"
    )
    assert _team_errors({"policy": "prefixes"}) == {
        "teams[0].image_policy": "policy 'prefixes' needs allowed_prefixes"
    }
    assert _team_errors({"allowed_prefixes": ["ghcr.io/a/"]}) == {
        "teams[0].image_policy": "allowed_prefixes go with policy 'prefixes', not 'catalog'"
    }
    assert _team_errors({"policy": "prefixes", "allowed_prefixes": ["ghcr.io/acme"]}) == {
        "teams[0].image_policy.allowed_prefixes": "'ghcr.io/acme' must end with '/', e.g. "
        "ghcr.io/acme/"
    }
    assert _team_errors({"policy": "prefixes", "prefixes": ["ghcr.io/a/"]}) == {
        "teams[0].image_policy.prefixes": "is not a known field"
    }
    data = copy.deepcopy(BASE)
    data["teams"][0]["image_policy"] = {"policy": "prefixes", "allowed_prefixes": ["ghcr.io/v/"]}
    assert parse_teams(data).teams[0].image_policy == ImagePolicy(
        policy="prefixes", allowed_prefixes=["ghcr.io/v/"]
    )
    assert parse_teams(BASE).teams[1].image_policy == CATALOG  # the default


def test_catalog_entries_record_owner_version_dockerfile_hash_and_scan() -> None:
    image = Image.model_validate(
        {
            "name": "base",
            "image": "ghcr.io/trainhub/base:0.1.0",
            "owner": "ml-infra@example.org",
            "version": "0.1.0",
            "dockerfile_sha256": "b" * 64,
            "scan": {"status": "passed", "at": "2026-12-01"},
        }
    )
    assert (image.owner, image.version, image.scan.status, str(image.scan.at)) == (
        "ml-infra@example.org",
        "0.1.0",
        "passed",
        "2026-12-01",
    )
    with pytest.raises(ValueError, match="dockerfile_sha256"):
        Image.model_validate({"name": "b", "image": "b:1", "dockerfile_sha256": "abc"})
    with pytest.raises(ValueError, match=r"scan\.status"):
        Image.model_validate({"name": "b", "image": "b:1", "scan": {"status": "ok"}})


def test_the_local_images_file(tmp_path: Path) -> None:
    assert load_images_file(tmp_path / "none.yaml") is None
    assert local_image("anything:1", None, team=None).rule == "no policy"
    path = tmp_path / "images.yaml"
    path.write_text(
        "images:\n  - {name: base, image: ghcr.io/trainhub/base:0.1.0}\n"
        "image_policy: {policy: prefixes, allowed_prefixes: [registry.example.org/me/]}\n"
    )
    images = load_images_file(path)
    assert images is not None
    assert local_image("base", images, team=None).reference == "ghcr.io/trainhub/base:0.1.0"
    assert local_image("registry.example.org/me/x:2", images, team=None).entry is None
    assert local_image(None, images, team=None).rule == "none asked"
    with pytest.raises(
        NotAllowed, match=r"image 'docker\.io/x:1' is not allowed: this installation"
    ):
        local_image("docker.io/x:1", images, team=None)
    bad = {
        "images: [{name: Base, image: b:1}]": "images[0].name: use lower-case letters, digits "
        "and '-', starting and ending with a letter or digit",
        "images: [{name: b, image: 'b:latest'}]": "images[0].image: 'b:latest' is not pinned: "
        "give a tag other than 'latest' or an @sha256: digest",
        "image_policy: {policy: prefixes}": "image_policy: policy 'prefixes' needs "
        "allowed_prefixes",
        "policy: catalog": "policy: is not a known field",
        "images: {b: 1}": "images: must be a list of images",
        "images: [{image: b:1}]": "images[0].name: is required",
    }
    for text, sentence in bad.items():
        with pytest.raises(ImagesFileError) as e:
            parse_images_file(yaml.safe_load(text), "images.yaml")
        assert str(e.value) == f"images.yaml: {sentence}"


def test_what_the_pods_ran_is_their_image_id() -> None:
    from trainhub.backends.kubernetes.status import ran_image
    from trainhub.experiments.compare_rows import ran_image_text

    def pod(name: str, image_id: str, container: str = "trainer") -> dict:
        status = {"name": container, "image": "ghcr.io/t/p:1", "imageID": image_id}
        return {"metadata": {"name": name}, "status": {"containerStatuses": [status]}}

    digest = "ghcr.io/t/p@sha256:" + "c" * 64
    assert ran_image([{"metadata": {"name": "p"}, "status": {}}], "trainer") is None
    assert ran_image([pod("p", "")], "trainer") is None  # not started: no digest yet
    ran = ran_image(
        [pod("j-1", digest), pod("j-0", digest), pod("x", "other", "sidecar")], "trainer"
    )
    assert ran == {
        "backend": "kubernetes",
        "image": "ghcr.io/t/p:1",
        "image_id": digest,
        "pods": {"j-0": digest, "j-1": digest},
    }
    mixed = ran_image([pod("j-0", digest), pod("j-1", "ghcr.io/t/p@sha256:" + "d" * 64)], "trainer")
    assert mixed is not None and mixed["image_id"] is None
    assert ran_image_text(ran) == digest
    assert ran_image_text(mixed) == ", ".join(sorted(mixed["pods"].values()))
    local = {"backend": "local", "environment": "/opt/venv", "image": None}
    assert ran_image_text(local) == "local environment /opt/venv"
    assert ran_image_text(None) is None
