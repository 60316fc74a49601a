"""Lineage: git state, packages, torch and dataset fingerprints, from real repos and files."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainhub.bundle.compile import compile_bundle
from trainhub.jobs import lineage
from trainhub.jobs.lineage import collect_lineage, dataset_fingerprint, git_state
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.specparts import Dataset

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(FIXTURES / "select.ipynb", ws / "select.ipynb")
    (ws / "model.py").write_text("X = 1\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "first")
    return ws


def compiled(ws: Path, spec: JobSpec, tmp_path: Path):
    return compile_bundle(spec, ws, tmp_path / "bundle")


def test_lineage_of_a_dirty_repo(repo, tmp_path):
    (repo / "model.py").write_text("X = 2\n")
    (repo / "new.txt").write_text("n")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.bin").write_bytes(b"1234")
    (data / "sub" / "b.bin").write_bytes(b"123456")
    os.utime(data / "sub" / "b.bin", (1_700_000_000, 1_700_000_000))
    os.utime(data / "a.bin", (1_600_000_000, 1_600_000_000))
    os.utime(data / "sub", (1_600_000_000, 1_600_000_000))
    os.utime(data, (1_600_000_000, 1_600_000_000))
    spec = JobSpec.model_validate(
        {
            "name": "t",
            "source": {"kind": "notebook", "path": "select.ipynb"},
            "parameters": {"lr": 0.5},
            "image": "registry/train:1",
            "datasets": [
                {"name": "imgs", "path": str(data)},
                {"name": "gone", "path": str(tmp_path / "nope")},
            ],
        }
    )
    manifest = compiled(repo, spec, tmp_path)
    record = collect_lineage(spec, repo, manifest, user="ada")
    json.dumps(record)  # it is written as JSON

    assert record["notebook_sha256"] == manifest.notebook_sha256
    assert record["content_hash"] == manifest.content_hash
    assert (record["user"], record["image"], record["parameters"]) == (
        "ada",
        "registry/train:1",
        {"lr": 0.5},
    )
    g = record["git"]
    assert g["commit"] == git(repo, "rev-parse", "HEAD")
    assert g["branch"] == "main"
    assert g["dirty"] is True
    assert g["untracked"] == ["new.txt"]
    assert "-X = 1\n+X = 2" in g["diff"] and g["diff_truncated"] is False
    assert record["python"]["version"] == platform.python_version()
    assert record["packages"]["pydantic"] == importlib.metadata.version("pydantic")
    imgs, gone = record["datasets"]
    assert imgs["fingerprint"] == {
        "files": 2,
        "bytes": 10,
        "newest_mtime": "2023-11-14T22:13:20+00:00",
        "truncated": False,
    }
    assert gone["name"] == "gone" and "cannot read" in gone["error"]


def test_clean_repo_and_detached_head(repo):
    state = git_state(repo)
    assert state is not None and state["dirty"] is False and state["diff"] == ""
    git(repo, "checkout", "-q", "--detach")
    assert git_state(repo)["branch"] is None


def test_outside_a_repository(tmp_path):
    assert git_state(tmp_path) is None


def test_big_diff_is_cut(repo, monkeypatch):
    monkeypatch.setattr(lineage, "MAX_DIFF_BYTES", 1000)
    (repo / "model.py").write_text("".join(f"line {i}\n" for i in range(500)))
    state = git_state(repo)
    assert state["diff_truncated"] is True
    assert len(state["diff"].encode()) == 1000


def test_torch_versions_without_importing_torch():
    # One fresh interpreter: read the versions, check torch stayed unimported, then compare.
    code = (
        "import sys, json\n"
        "from trainhub.jobs.lineage import torch_versions\n"
        "v = torch_versions()\n"
        "imported = 'torch' in sys.modules\n"
        "import torch\n"
        "print(json.dumps([v, imported, torch.__version__, torch.version.cuda]))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    versions, imported, version, cuda = json.loads(out.stdout.splitlines()[-1])
    assert imported is False
    assert (versions["version"], versions["cuda"]) == (version, cuda)


def test_dataset_that_is_one_file(tmp_path):
    f = tmp_path / "x.parquet"
    f.write_bytes(b"abc")
    record = dataset_fingerprint(Dataset(name="one", path=str(f)))
    assert record["fingerprint"]["files"] == 1 and record["fingerprint"]["bytes"] == 3


def test_dataset_walk_stops_at_the_entry_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(lineage, "MAX_DATASET_ENTRIES", 5)
    for i in range(20):
        (tmp_path / f"f{i}").write_text("x")
    record = dataset_fingerprint(Dataset(name="many", path=str(tmp_path)))
    assert record["fingerprint"]["truncated"] is True
    assert record["fingerprint"]["files"] == 5


def test_package_list_is_cached_until_the_import_path_changes(tmp_path, monkeypatch):
    import sys

    from trainhub.jobs.lineage import installed_distributions

    fresh = installed_distributions()
    assert installed_distributions(tmp_path) == fresh
    (cache,) = tmp_path.glob("distributions-*.json")
    cache.write_text('{"only-what-the-cache-says": "1"}')
    assert installed_distributions(tmp_path) == {"only-what-the-cache-says": "1"}
    # A package installed into a directory on the path changes that directory's mtime.
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    assert installed_distributions(tmp_path) == fresh
