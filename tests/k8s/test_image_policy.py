"""The image policy on a real control plane: an image the team's policy does not allow is
refused before any object or job directory is made (kwok nodes), one under an allowed prefix
becomes the pod's image. (kwok pods report no ``imageID``, so no digest is recorded here.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.test_backend import Team, applied_team
from trainhub.errors import NotAllowed

PREFIX = "registry.invalid/vision-lab/"


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    policy = {"policy": "prefixes", "allowed_prefixes": [PREFIX]}
    yield from applied_team(k8s_namespace, tmp_path, image_policy=policy)


def spec(team: Team, image: str) -> dict[str, Any]:
    return {
        "name": "img",
        "source": {"path": "train.py"},
        "team": team.ns,
        "image": image,
        "resources": {"workers": 1, "gpus_per_worker": 1},
    }


def test_an_image_outside_the_policy_is_refused_before_any_object(team: Team) -> None:
    batch = client.BatchV1Api(team.api)
    for image, sentence in {
        "docker.io/evil/miner:1": f"image 'docker.io/evil/miner:1' is not allowed: team "
        f"{team.ns} allows its catalog images (pytorch) and pinned images under {PREFIX}",
        f"{PREFIX}exp:latest": f"image '{PREFIX}exp:latest' is under the allowed prefix "
        f"{PREFIX} but not pinned",
    }.items():
        for call in (team.service.validate, team.service.submit):
            with pytest.raises(NotAllowed) as e:
                call(spec(team, image), user="ada")
            assert str(e.value).startswith(sentence), str(e.value)
    assert batch.list_namespaced_job(team.ns).items == []
    jobs_root = team.backend.jobs_root
    assert not jobs_root.exists() or list(jobs_root.iterdir()) == []


def test_a_catalog_image_and_one_under_an_allowed_prefix_become_the_pods_image(
    team: Team,
) -> None:
    batch = client.BatchV1Api(team.api)
    for image, expected in {
        "pytorch": "registry.invalid/trainhub/pytorch:1",
        f"{PREFIX}exp:3": f"{PREFIX}exp:3",
    }.items():
        job_id = team.service.submit(spec(team, image), user="ada").id
        job = batch.read_namespaced_job(job_id, team.ns)
        assert job.spec.template.spec.containers[0].image == expected
