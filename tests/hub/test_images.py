"""The curated image catalog and the Dockerfile linter (no container engine needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainhub.teams import load_teams, parse_teams
from trainhub_spawner.images import (
    check_catalog,
    check_teams_images,
    dockerfile_sha256,
    instructions,
    lint_dockerfile,
    load_catalog,
    pin_dockerfiles,
)

ROOT = Path(__file__).parents[2]
IMAGES = ROOT / "images"


def test_the_catalog_and_its_dockerfiles_pass() -> None:
    assert check_catalog(IMAGES) == []
    names = [i.name for i in load_catalog(IMAGES / "catalog.yaml")]
    assert {"base", "pytorch", "pytorch-cpu"} <= set(names)
    cuda = {i.name: i.frameworks.get("cuda") for i in load_catalog(IMAGES / "catalog.yaml")}
    assert cuda["pytorch"] == "12.4" and cuda["pytorch-cpu"] is None


def test_every_image_of_the_teams_file_is_in_the_catalog() -> None:
    teams = load_teams(ROOT / "hub_config" / "teams.yaml")
    assert check_teams_images(teams, load_catalog(IMAGES / "catalog.yaml")) == []


def test_a_teams_file_may_use_the_catalog_as_its_image_catalog(tmp_path: Path) -> None:
    data = load_teams(ROOT / "hub_config" / "teams.yaml").model_dump(mode="json", exclude_none=True)
    data["images"] = []
    data["image_catalog"] = str(IMAGES / "catalog.yaml")
    teams = parse_teams(data, base_dir=tmp_path)
    assert teams.image("pytorch-cpu").image == "ghcr.io/trainhub/pytorch-cpu:2.15.0"


def test_a_teams_image_outside_the_catalog_or_with_another_reference_is_named() -> None:
    data = load_teams(ROOT / "hub_config" / "teams.yaml").model_dump(mode="json", exclude_none=True)
    data["images"][0]["image"] = "ghcr.io/trainhub/pytorch:2.6.0-cuda12.6"
    data["images"].append({"name": "jax", "image": "ghcr.io/x/jax:0.4"})
    data["teams"][0]["images"].append("jax")
    problems = check_teams_images(parse_teams(data), load_catalog(IMAGES / "catalog.yaml"))
    assert problems == [
        "image 'pytorch': the teams file says ghcr.io/trainhub/pytorch:2.6.0-cuda12.6, "
        "the catalog ghcr.io/trainhub/pytorch:2.5.1-cuda12.4",
        "image 'jax' is not in the catalog (base, pytorch, pytorch-cpu, pytorch-nlp)",
    ]


def test_catalog_versions_must_match_what_the_dockerfile_builds(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(IMAGES, images)
    catalog = images / "catalog.yaml"
    catalog.write_text(
        catalog.read_text()
        .replace('transformers: "4.46"', 'transformers: "4.47"')
        .replace('cuda: "12.4", python', 'cuda: "12.4", triton: "3.1", python')
    )
    assert check_catalog(images) == [
        f"pytorch: the catalog says triton 3.1, but {images}/pytorch/Dockerfile "
        "declares no ARG TRITON_VERSION",
        "pytorch-nlp: the catalog says transformers 4.47, but "
        f"{images}/pytorch-nlp/Dockerfile builds 4.46.3",
    ]
    # A version the session layer declares is checked in every image built on it.
    session = images / "session" / "Dockerfile"
    session.write_text(session.read_text().replace("LAB_VERSION=4.6.6", "LAB_VERSION=4.7.0"))
    problems = check_catalog(images)
    for name in ("base", "pytorch-cpu", "pytorch"):
        assert f"{name}: the catalog says jupyterlab 4.6.6, but {session} builds 4.7.0" in problems
    assert len(problems) == 5, problems
    (images / "base" / "Dockerfile").unlink()
    assert f"base: no Dockerfile at {images}/base/Dockerfile" in check_catalog(images)


def test_a_bad_catalog_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "catalog.yaml").write_text(
        "images:\n  - {name: a, image: 'x/a:latest'}\n"
        "  - {name: a, image: 'x/a:1'}\n  - {name: B, image: 'x:1'}\n"
    )
    problems = check_catalog(tmp_path)
    assert any("images[0].image: 'x/a:latest' is not pinned" in p for p in problems)
    assert any("images[2].name:" in p for p in problems)
    (tmp_path / "catalog.yaml").write_text(
        "images:\n  - {name: a, image: 'x/a:1'}\n  - {name: a, image: 'x/a:2'}\n"
    )
    assert check_catalog(tmp_path) == [f"{tmp_path}/catalog.yaml: image 'a' is listed twice"]


GOOD = """\
ARG PY=3.11.11
FROM python:${PY}-slim AS build
RUN apt-get update \\
 # a comment inside the continuation
 && apt-get install -y --no-install-recommends git \\
 && rm -rf /var/lib/apt/lists/*
FROM build
RUN pip install --no-cache-dir "numpy==2.1.3" -r requirements.txt ./local
USER 1000:100
"""


def test_a_good_dockerfile_has_no_findings() -> None:
    assert lint_dockerfile(GOOD) == []
    steps = instructions(GOOD)
    assert [s.keyword for s in steps] == ["ARG", "FROM", "RUN", "FROM", "RUN", "USER"]
    assert steps[2].line == 3 and "rm -rf /var/lib/apt/lists/*" in steps[2].args


@pytest.mark.parametrize(
    ("change", "finding"),
    [
        (
            ("FROM python:${PY}-slim", "FROM python:latest"),
            "2: FROM python:latest: pin the base image by a tag other than 'latest' "
            "or by an @sha256: digest",
        ),
        (("FROM python:${PY}-slim", "FROM python"), "2: FROM python: pin the base image"),
        (
            ("FROM python:${PY}-slim", "FROM python:${NOPE}"),
            "2: FROM python:${NOPE}: the build argument has no default",
        ),
        (("USER 1000:100", "USER root"), "9: USER root: the image must end as a non-root user"),
        (("USER 1000:100", "USER 0:0"), "9: USER 0:0: the image must end as a non-root user"),
        (("USER 1000:100", ""), "no USER: the image would run as root"),
        (
            (" \\\n && rm -rf /var/lib/apt/lists/*", ""),
            "3: apt-get install without 'rm -rf /var/lib/apt/lists/*'",
        ),
        (('"numpy==2.1.3"', "numpy"), "8: pip install 'numpy' is not pinned"),
        (
            ("USER 1000:100", "ADD https://example.org/x.tgz /opt/\nUSER 1000:100"),
            "9: ADD of a URL",
        ),
    ],
)
def test_each_rule_names_the_line(change: tuple[str, str], finding: str) -> None:
    text = GOOD.replace(*change)
    assert text != GOOD
    found = [str(f) for f in lint_dockerfile(text, "Dockerfile")]
    assert any(f.startswith("Dockerfile:" + finding) or finding in f for f in found), found


def test_a_pinned_digest_passes() -> None:
    digest = "python@sha256:" + "ab" * 32
    assert lint_dockerfile(f"FROM {digest}\nUSER 1000\n") == []


def test_each_entry_records_the_hash_of_its_dockerfile_and_a_stale_one_is_named(
    tmp_path: Path,
) -> None:
    catalog = {i.name: i for i in load_catalog(IMAGES / "catalog.yaml")}
    for name, image in catalog.items():
        assert image.dockerfile_sha256 == dockerfile_sha256(IMAGES / name / "Dockerfile")
        assert image.owner and image.version and image.scan.status in {"passed", "unscanned"}
    images = tmp_path / "images"
    shutil.copytree(IMAGES, images)
    dockerfile = images / "base" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "LABEL changed=yes\n")
    assert check_catalog(images) == [
        f"base: the catalog's dockerfile_sha256 is not that of {dockerfile} "
        "(python images/build.py --pin-dockerfiles writes it)"
    ]
    before = (images / "catalog.yaml").read_text()
    assert pin_dockerfiles(images / "catalog.yaml", images) == ["base"]
    after = (images / "catalog.yaml").read_text()
    assert check_catalog(images) == []
    # Only the one line changed: comments, order and the other entries stay as written.
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == 1
    assert changed[0][1] == f"    dockerfile_sha256: {dockerfile_sha256(dockerfile)}"
    assert pin_dockerfiles(images / "catalog.yaml", images) == []
