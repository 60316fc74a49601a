"""The image policy on a real control plane: an image the team's policy does not allow is
refused before any object or job directory is made (kwok nodes), one under an allowed prefix
becomes the pod's image; and on the real node the digest the kubelet really ran (the pod's
``imageID``) is recorded in the job's lineage by reconcile, and compare shows it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.k8s import test_real_jobs as real
from tests.k8s.test_admin_apply import apply_teams, teams_for
from tests.k8s.test_backend import Team
from tests.k8s.test_real_jobs import RealTeam
from trainhub.errors import NotAllowed

PREFIX = "registry.invalid/vision-lab/"
# The real node's fixtures: the pytorch-cpu image imported into the node, a team on it.
pytorch_image, open_umask, real_team = real.pytorch_image, real.open_umask, real.real_team


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Any:
    teams = teams_for(
        [k8s_namespace.name],
        tmp_path,
        image_policy={"policy": "prefixes", "allowed_prefixes": [PREFIX]},
    )
    apply_teams(k8s_namespace, teams)
    t = Team(k8s_namespace, k8s_namespace.name, teams, tmp_path)
    yield t
    t.cleanup()


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


def test_the_real_node_records_the_image_digest_the_pods_ran_in_the_lineage(
    real_team: RealTeam, pytorch_image: str
) -> None:
    t = real_team
    (t.workspace / "hello.py").write_text("print('hello from the image')\n")
    job_ids = [
        t.submit_spec({**t.script_spec("hello.py", workers=1), "name": f"img{n}"}) for n in range(2)
    ]
    for job_id in job_ids:
        t.ended(job_id)
        ran = t.until(
            job_id,
            "the lineage's ran_image",
            lambda d: json.loads((t.backend.jobs_root / d.id / "lineage.json").read_text()).get(
                "ran_image"
            ),
        )
        assert ran.state.value == "succeeded", t.rank_log(job_id, 0)
        lineage = json.loads((t.backend.jobs_root / job_id / "lineage.json").read_text())
        record = lineage["ran_image"]
        pods = t.pods(job_id)
        # The kubelet's own word for what it ran, on the pod: the image's digest.
        ids = {p.metadata.name: p.status.container_statuses[0].image_id for p in pods}
        assert record["backend"] == "kubernetes" and record["pods"] == ids
        assert record["image_id"] in ids.values()
        assert "@sha256:" in record["image_id"] or record["image_id"].startswith("sha256:")
        assert record["image"].endswith(pytorch_image.split("/", 1)[-1])
    comparison = t.service.compare(job_ids, user=t.user)
    rows = {r.name: r for r in comparison.lineage}
    assert rows["image ran"].values == [record["image_id"]] * 2
    assert rows["image ran"].differs is False
