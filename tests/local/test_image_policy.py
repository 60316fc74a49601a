"""The image policy on the local backend, through the real CLI: an image the local images file
does not allow is refused before anything is made; an allowed one runs a real job, whose
lineage says honestly what it ran in (this machine's Python environment, no image)."""

from __future__ import annotations

import json
import sys

import nbformat
import pytest
import yaml

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

CELL = 'import sys; print("PREFIX=" + sys.prefix)'


@pytest.fixture
def with_policy(trainhub_env: Trainhub, tmp_path):
    images_file = tmp_path / "images.yaml"
    images_file.write_text(
        yaml.safe_dump(
            {
                "images": [
                    {"name": "base", "image": "ghcr.io/trainhub/base:0.1.0", "owner": "ml"},
                    {
                        "name": "old",
                        "image": "ghcr.io/trainhub/old:0.0.1",
                        "scan": {"status": "failed", "at": "2026-11-30"},
                    },
                ],
                "image_policy": {
                    "policy": "prefixes",
                    "allowed_prefixes": ["registry.example.org/vision/"],
                },
            }
        )
    )
    trainhub_env.env.update(TRAINHUB_IMAGES_FILE=str(images_file), TRAINHUB_TEAM="vision")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nbformat.write(nb, trainhub_env.workspace / "env.ipynb")
    return images_file


def test_an_image_outside_the_policy_is_refused_before_anything_is_made(
    trainhub_env: Trainhub, with_policy
):
    refusals = {
        "docker.io/evil/miner:1": "trainhub: image 'docker.io/evil/miner:1' is not allowed: "
        "team vision allows its catalog images (base, old) and pinned images under "
        "registry.example.org/vision/",
        "registry.example.org/vision/exp:latest": "trainhub: image "
        "'registry.example.org/vision/exp:latest' is under the allowed prefix "
        "registry.example.org/vision/ but not pinned: give a tag other than 'latest' or an "
        "@sha256: digest",
        "old": "trainhub: image old (ghcr.io/trainhub/old:0.0.1) failed its scan on 2026-11-30",
    }
    for image, sentence in refusals.items():
        proc = trainhub_env.run("submit", "env.ipynb", "--image", image, check=False)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.strip().startswith(sentence), proc.stderr
    assert trainhub_env.json("jobs")["jobs"] == []
    jobs = trainhub_env.home / "jobs"
    assert not jobs.exists() or list(jobs.iterdir()) == []


def test_an_allowed_image_runs_and_lineage_records_the_environment_it_ran_in(
    trainhub_env: Trainhub, with_policy
):
    ran = {}
    for image in ("base", "registry.example.org/vision/exp:3"):
        job_id = trainhub_env.submit("env.ipynb", "--image", image)
        job = trainhub_env.wait(job_id)
        assert job["state"] == "succeeded", trainhub_env.logs(job_id)
        lineage = json.loads((trainhub_env.job_dir(job_id) / "lineage.json").read_text())
        assert lineage["image"] == image
        ran[image] = lineage["ran_image"]
        prefix = next(
            x for x in trainhub_env.logs(job_id).splitlines() if x.startswith("PREFIX=")
        ).removeprefix("PREFIX=")
        # What lineage says the ranks ran in is where they did run: no image, this environment.
        assert lineage["ran_image"]["environment"] == prefix == sys.prefix
    for record in ran.values():
        assert record["backend"] == "local" and record["image"] is None
        assert record["python"] == sys.executable
        assert "runs no container image" in record["note"]
    # Without an images file nothing is refused: the image is a label there.
    with_policy.unlink()
    job_id = trainhub_env.submit("env.ipynb", "--image", "docker.io/anything:1")
    assert trainhub_env.wait(job_id)["state"] == "succeeded"
