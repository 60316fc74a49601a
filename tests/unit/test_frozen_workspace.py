"""A frozen workspace (trainhub.bundle.snapshot): a trial compiled from it later is the bundle
the workspace gave when it was frozen, whatever happened to the workspace since; what job code
plants in the frozen folder (links, FIFOs, changed files) is refused, never followed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from trainhub.backends.local.backend import LocalBackend
from trainhub.bundle.compile import compile_bundle
from trainhub.bundle.errors import BundleError
from trainhub.bundle.layout import CELLS, WORKSPACE
from trainhub.bundle.snapshot import Frozen, freeze, remove, thawed
from trainhub.errors import Conflict
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import JobSpec

CAP = 2**20


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def workspace(tmp_path: Path) -> Path:
    """A repository whose notebook has a parameters cell, a helper next to it, an ignored
    file, a tracked file that .gitignore would ignore, and a link out of the workspace."""
    ws = tmp_path / "ws"
    (ws / "proj" / "lib").mkdir(parents=True)
    nb = new_notebook()
    params = new_code_cell("lr = 0.1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, new_code_cell("from lib.model import VERSION\nprint(VERSION, lr)")]
    nbformat.write(nb, ws / "proj" / "train.ipynb")
    (ws / "proj" / "lib" / "model.py").write_text("VERSION = 'original'\n")
    (ws / "proj" / "run.sh").write_text("#!/bin/sh\n")
    (ws / "proj" / "run.sh").chmod(0o755)
    (ws / ".gitignore").write_text("*.csv\n")
    (ws / "proj" / "scratch.csv").write_text("ignored")
    (ws / "proj" / "config.csv").write_text("tracked although ignored")
    (tmp_path / "secret.txt").write_text("not the workspace's")
    (ws / "proj" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    git(ws, "init", "-q")
    git(ws, "add", ".gitignore", "proj/train.ipynb", "proj/lib/model.py", "proj/run.sh")
    git(ws, "add", "-f", "proj/config.csv")
    git(ws, "commit", "-q", "-m", "the sweep's code")
    return ws


def spec(**parameters: object) -> JobSpec:
    return JobSpec.model_validate(
        {"name": "t", "source": {"path": "proj/train.ipynb"}, "parameters": parameters}
    )


def frozen_into(tmp_path: Path, ws: Path) -> tuple[Path, Frozen]:
    home = tmp_path / "jobs" / ".sweeps"
    return home, freeze(spec(), ws, home, "sw-1", max_workspace_bytes=CAP)


def test_a_trial_compiled_from_the_frozen_workspace_is_the_bundle_it_gave_then(tmp_path):
    ws = workspace(tmp_path)
    before = compile_bundle(spec(lr=0.5), ws, tmp_path / "before")
    home, frozen = frozen_into(tmp_path, ws)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True
    ).stdout.strip()

    # The workspace moves on: the helper is edited, the notebook deleted, the repository too.
    (ws / "proj" / "lib" / "model.py").write_text("VERSION = 'edited'\n")
    (ws / "proj" / "train.ipynb").unlink()
    git(ws, "commit", "-q", "-am", "later")

    with thawed(home, "sw-1", frozen) as source:
        after = compile_bundle(spec(lr=0.5), source.root, tmp_path / "after", frozen=True)
        other = compile_bundle(spec(lr=0.01), source.root, tmp_path / "other", frozen=True)
        repo = source.lineage["git"]  # as it was, not as it is
        assert repo["commit"] == commit and repo["untracked"] == ["proj/leak.txt"]
        assert source.lineage["frozen_workspace"] == frozen.digest
    assert after.content_hash == before.content_hash  # the same bundle, byte for byte
    bundled = tmp_path / "after" / WORKSPACE / "proj"
    assert (bundled / "lib" / "model.py").read_text() == "VERSION = 'original'\n"
    assert (bundled / "config.csv").exists()  # git's verdict stands, not .gitignore's alone
    assert not (bundled / "scratch.csv").exists() and not (bundled / "leak.txt").exists()
    assert os.access(bundled / "run.sh", os.X_OK)
    cells = json.loads((tmp_path / "other" / CELLS).read_text())
    assert any("lr = 0.01" in c["source"] for c in cells) and "VERSION" in cells[-1]["source"]
    assert other.content_hash != after.content_hash  # each trial its own parameters
    assert not Path(source.root).exists()  # the private copy is gone after the block


def test_what_job_code_plants_in_the_frozen_folder_is_refused_not_followed(tmp_path):
    ws = workspace(tmp_path)
    home, frozen = frozen_into(tmp_path, ws)
    model = home / "sw-1" / "source" / "proj" / "lib" / "model.py"

    model.write_text("VERSION = 'planted'\n")  # a changed file
    with (
        pytest.raises(BundleError, match="was changed after it was frozen"),
        thawed(home, "sw-1", frozen),
    ):
        pass

    model.unlink()
    model.symlink_to(tmp_path / "secret.txt")  # a link where a file was
    os.mkfifo(home / "sw-1" / "source" / "proj" / "pipe")  # a FIFO: never waited on
    with pytest.raises(BundleError), thawed(home, "sw-1", frozen):
        pass

    # The whole source folder replaced by a link to a copy of the workspace that looks right.
    (home / "sw-1" / "source").rename(home / "sw-1" / "moved")
    (home / "sw-1" / "source").symlink_to(ws)
    with pytest.raises(ValueError, match="symbolic link"), thawed(home, "sw-1", frozen):
        pass


def test_freezing_refuses_a_workspace_over_the_cap_and_leaves_nothing(tmp_path):
    ws = workspace(tmp_path)
    (ws / "proj" / "big.bin").write_bytes(b"x" * (CAP + 1))
    home = tmp_path / "jobs" / ".sweeps"
    with pytest.raises(BundleError, match=r"over the 1\.0 MiB cap"):
        freeze(spec(), ws, home, "sw-1", max_workspace_bytes=CAP)
    assert not (home / "sw-1").exists()


def test_a_frozen_folder_is_made_new_and_removed_whole(tmp_path):
    ws = workspace(tmp_path)
    home, frozen = frozen_into(tmp_path, ws)
    with pytest.raises(FileExistsError):  # never written into what is there already
        freeze(spec(), ws, home, "sw-1", max_workspace_bytes=CAP)
    link = home / "sw-1" / "source" / "proj" / "elsewhere"
    link.symlink_to(tmp_path / "secret.txt")
    remove(home, "sw-1")
    assert not (home / "sw-1").exists() and (tmp_path / "secret.txt").exists()
    remove(home, "sw-1")  # gone already: fine
    with pytest.raises(BundleError, match="missing"), thawed(home, "sw-1", frozen):
        pass


def test_a_service_that_sees_no_workspace_submits_only_a_frozen_one(tmp_path):
    backend = LocalBackend(tmp_path / "home")
    service = JobService(backend, jobs_root=backend.jobs_root)  # as the cluster's controller
    with pytest.raises(Conflict, match="sees no workspace"):
        service.submit({"name": "t", "source": {"path": "train.py"}}, user="ada")
    assert not list(backend.jobs_root.glob("t-*"))  # refused before anything was made
