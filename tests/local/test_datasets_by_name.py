"""Datasets by name on the local backend, with real torchrun jobs (gloo on CPU): the datasets
file offers them to a team, a rank finds them with trainhub.datasets.path(), cannot write
into them, and the lineage records their fingerprints."""

from __future__ import annotations

import json
import os

import nbformat
import pytest
import yaml

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

RANK_CELL = """\
import json, os, trainhub
root = trainhub.datasets.path("imagenet")
result = {"rank": os.environ["RANK"], "path": str(root), "names": trainhub.datasets.names(),
          "read_only": os.environ.get("TRAINHUB_DATASETS_READ_ONLY"),
          "files": sorted(os.listdir(root))}
for target in (root / "written-by-a-rank", root / "train" / "a.bin"):
    try:
        with open(target, "a") as f:
            f.write("x")
        result.setdefault("wrote", []).append(target.name)
    except OSError as e:
        result.setdefault("refused", []).append(e.strerror)
try:
    trainhub.datasets.path("coco")
except KeyError as e:
    result["unknown"] = str(e)
print("RESULT=" + json.dumps(result))
"""


@pytest.fixture
def with_datasets(trainhub_env: Trainhub, tmp_path):
    data = tmp_path / "data"
    (data / "imagenet" / "train").mkdir(parents=True)
    (data / "imagenet" / "train" / "a.bin").write_bytes(b"0123456789")
    (data / "imagenet" / "labels.txt").write_text("cat\ndog\n")
    (data / "c4").mkdir()
    (data / "c4" / "part-0").write_text("text")
    datasets_file = tmp_path / "datasets.yaml"
    datasets_file.write_text(
        yaml.safe_dump(
            {
                "datasets": {
                    "imagenet": {
                        "path": str(data / "imagenet"),
                        "description": "ILSVRC2012 sample",
                        "owner": "vision-data",
                        "teams": ["vision"],
                        "content_hash": True,
                    },
                    "c4": {"path": str(data / "c4"), "teams": ["nlp"]},
                }
            }
        )
    )
    trainhub_env.env.update(
        TRAINHUB_DATASETS_FILE=str(datasets_file),
        TRAINHUB_DATASET_ROOTS=str(data),
        TRAINHUB_TEAM="vision",
    )
    return data


def rank_results(trainhub_env: Trainhub, job_id: str, ranks: int) -> list[dict]:
    out = []
    for rank in range(ranks):
        line = next(
            x for x in trainhub_env.logs(job_id, rank=rank).splitlines() if x.startswith("RESULT=")
        )
        out.append(json.loads(line.removeprefix("RESULT=")))
    return out


def test_a_rank_reads_its_dataset_by_name_and_cannot_write_into_it(
    trainhub_env: Trainhub, with_datasets
):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(RANK_CELL)])
    nbformat.write(nb, trainhub_env.workspace / "read.ipynb")
    listed = trainhub_env.json("datasets")["datasets"]
    assert [d["name"] for d in listed] == ["imagenet"]  # c4 is team nlp's
    assert listed[0]["owner"] == "vision-data" and listed[0]["read_only"] is True

    job_id = trainhub_env.submit("read.ipynb", "--nproc", "2", "--dataset", "imagenet")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    imagenet = with_datasets / "imagenet"
    for result in rank_results(trainhub_env, job_id, 2):
        assert result["path"] == str(imagenet) and result["names"] == ["imagenet"]
        assert result["files"] == ["labels.txt", "train"]
        assert result["read_only"] == "1"
        assert "wrote" not in result, result
        assert result["refused"] == ["Read-only file system"] * 2
        assert result["unknown"] == (
            "dataset 'coco' is not one this job asked for (it asked for: imagenet); "
            "name it when submitting, e.g. --dataset NAME or datasets=[NAME]"
        )
    # The host's view of the dataset is unchanged, and nothing was left mounted on it.
    assert sorted(os.listdir(imagenet)) == ["labels.txt", "train"]
    assert (imagenet / "train" / "a.bin").read_bytes() == b"0123456789"
    with open("/proc/self/mountinfo") as f:
        assert str(imagenet) not in f.read()

    spec = json.loads((trainhub_env.job_dir(job_id) / "spec.json").read_text())
    assert spec["datasets"] == [
        {"name": "imagenet", "path": str(imagenet), "read_only": True, "catalog": True}
    ]
    lineage = json.loads((trainhub_env.job_dir(job_id) / "lineage.json").read_text())
    (record,) = lineage["datasets"]
    fp = record["fingerprint"]
    assert record["name"] == "imagenet" and record["by_name"] is True
    assert (fp["files"], fp["bytes"], fp["truncated"]) == (2, 18, False)
    assert fp["content_hash"].startswith("sha256:") and len(fp["content_hash"]) == 71


def test_a_dataset_of_another_team_is_refused_before_anything_starts(
    trainhub_env: Trainhub, with_datasets
):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nbformat.write(nb, trainhub_env.workspace / "one.ipynb")
    for name in ("c4", "nope"):
        proc = trainhub_env.run("submit", "one.ipynb", "--dataset", name, check=False)
        assert proc.returncode == 2
        assert proc.stderr.strip() == (
            f"trainhub: datasets.0.name: no dataset {name!r} that team vision may read "
            "(team vision may read: imagenet)"
        )
    jobs = trainhub_env.home / "jobs"
    assert not jobs.exists() or not list(jobs.iterdir())
    assert trainhub_env.json("jobs")["total"] == 0


def test_a_path_of_ones_own_still_works_and_is_read_only_too(trainhub_env: Trainhub, with_datasets):
    own = trainhub_env.workspace / "mine"
    own.mkdir()
    (own / "x.txt").write_text("mine")
    cell = (
        "import trainhub\n"
        "p = trainhub.datasets.path('mine')\n"
        "try:\n"
        "    (p / 'y.txt').write_text('no')\n"
        "    print('RESULT=wrote')\n"
        "except OSError as e:\n"
        "    print('RESULT=' + e.strerror)\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbformat.write(nb, trainhub_env.workspace / "own.ipynb")
    job_id = trainhub_env.submit("own.ipynb", "--dataset", "mine=mine")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    assert "RESULT=Read-only file system" in trainhub_env.logs(job_id)
    assert sorted(os.listdir(own)) == ["x.txt"]
    lineage = json.loads((trainhub_env.job_dir(job_id) / "lineage.json").read_text())
    (record,) = lineage["datasets"]
    assert record["by_name"] is False and record["fingerprint"]["files"] == 1
    assert "content_hash" not in record["fingerprint"]
