"""Checkpoint readers refuse links and FIFOs a job plants in its own directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainhub.checkpoint.layout import (
    MANIFEST,
    delete_checkpoint,
    list_checkpoints,
    load_manifest,
    read_manifest,
    resolve_file,
    resume_checkpoint,
    step_name,
)
from trainhub.jobs.confined import NotAJobFile


def _write_checkpoint(root: Path, step: int, payload: bytes = b"weights") -> Path:
    path = root / step_name(step)
    path.mkdir(parents=True)
    (path / "state.pt").write_bytes(payload)
    manifest = {
        "step": step,
        "time": 1.0,
        "files": [{"name": "state.pt", "bytes": len(payload), "sha256": "0" * 64}],
    }
    (path / MANIFEST).write_text(json.dumps(manifest))
    return path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def jobs(tmp_path: Path) -> tuple[Path, Path]:
    """An attacker job and a victim job that holds checkpoints 1 and 2."""
    victim = tmp_path / "victim"
    for step in (1, 2):
        _write_checkpoint(victim / "checkpoints", step)
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    return attacker, victim


def test_a_checkpoints_dir_linked_to_another_job_is_refused(jobs: tuple[Path, Path]) -> None:
    attacker, victim = jobs
    before = _snapshot(victim)
    (attacker / "checkpoints").symlink_to(victim / "checkpoints")
    ckdir = attacker / "checkpoints"
    # Followed, the link would show the victim's two checkpoints.
    assert len(os.listdir(ckdir)) == 2
    with pytest.raises(NotAJobFile, match="symbolic link"):
        list_checkpoints(ckdir)
    with pytest.raises(NotAJobFile):
        read_manifest(ckdir, 1)
    with pytest.raises(NotAJobFile):
        resolve_file(ckdir, 1, "state.pt")
    with pytest.raises(NotAJobFile):
        load_manifest(ckdir / step_name(1))
    with pytest.raises(NotAJobFile):
        delete_checkpoint(ckdir, 1)
    with pytest.raises(NotAJobFile):
        resume_checkpoint(attacker)
    assert _snapshot(victim) == before
    assert len(list_checkpoints(victim / "checkpoints")) == 2


def test_a_step_dir_linked_to_another_job_is_not_listed_nor_deleted(
    jobs: tuple[Path, Path],
) -> None:
    attacker, victim = jobs
    before = _snapshot(victim)
    ckdir = attacker / "checkpoints"
    _write_checkpoint(ckdir, 5)
    (ckdir / step_name(1)).symlink_to(victim / "checkpoints" / step_name(1))
    assert [i.step for i in list_checkpoints(ckdir)] == [5]
    assert resume_checkpoint(attacker, 1) is None
    assert resume_checkpoint(attacker).step == 5  # type: ignore[union-attr]
    for call in (
        lambda: read_manifest(ckdir, 1),
        lambda: resolve_file(ckdir, 1, "state.pt"),
        lambda: delete_checkpoint(ckdir, 1),
    ):
        with pytest.raises((NotAJobFile, FileNotFoundError)):
            call()
    assert _snapshot(victim) == before
    assert (ckdir / step_name(1)).is_symlink()


def test_a_manifest_linked_to_etc_passwd_is_refused(tmp_path: Path) -> None:
    ckdir = tmp_path / "job" / "checkpoints"
    path = _write_checkpoint(ckdir, 3)
    (path / MANIFEST).unlink()
    (path / MANIFEST).symlink_to("/etc/passwd")
    assert list_checkpoints(ckdir) == []
    with pytest.raises(NotAJobFile, match="symbolic link"):
        read_manifest(ckdir, 3)
    with pytest.raises(NotAJobFile):
        resolve_file(ckdir, 3, MANIFEST)
    assert resume_checkpoint(path) is None


def test_a_fifo_as_manifest_is_refused_without_blocking(tmp_path: Path) -> None:
    ckdir = tmp_path / "job" / "checkpoints"
    path = _write_checkpoint(ckdir, 4)
    (path / MANIFEST).unlink()
    os.mkfifo(path / MANIFEST)
    assert list_checkpoints(ckdir) == []
    with pytest.raises(NotAJobFile, match="FIFO"):
        read_manifest(ckdir, 4)
    with pytest.raises(NotAJobFile, match="FIFO"):
        resolve_file(ckdir, 4, MANIFEST)


def test_a_data_file_linked_outside_is_refused(tmp_path: Path) -> None:
    ckdir = tmp_path / "job" / "checkpoints"
    path = _write_checkpoint(ckdir, 6, b"x" * 11)
    secret = tmp_path / "secret"
    secret.write_bytes(b"y" * 11)  # the size the manifest expects
    (path / "state.pt").unlink()
    (path / "state.pt").symlink_to(secret)
    assert list_checkpoints(ckdir) == []
    with pytest.raises(ValueError, match="not a file"):
        read_manifest(ckdir, 6)
    with pytest.raises(NotAJobFile):
        resolve_file(ckdir, 6, "state.pt")


def test_delete_removes_links_inside_without_following_them(tmp_path: Path) -> None:
    ckdir = tmp_path / "job" / "checkpoints"
    path = _write_checkpoint(ckdir, 7)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_text("keep me")
    (path / "inside").symlink_to(precious)
    delete_checkpoint(ckdir, 7)
    assert not path.exists()
    assert (precious / "data").read_text() == "keep me"
    assert [p.name for p in ckdir.iterdir()] == []


def test_an_interactive_checkpoints_dir_may_be_reached_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a job the user names the directory: a link to it is resolved, then trusted."""
    import torch

    import trainhub.checkpoint as ckpt

    real = tmp_path / "scratch"
    real.mkdir()
    (tmp_path / "ckpts").symlink_to(real)
    monkeypatch.delenv("TRAINHUB_JOB_DIR", raising=False)
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(tmp_path / "ckpts"))
    info = ckpt.save({"w": torch.arange(3.0)}, 2, keep_last=1).wait()
    assert info is not None and info.path.parent == real
    assert torch.equal(ckpt.load()["w"], torch.arange(3.0))
    assert ckpt.latest(tmp_path / "ckpts") == info and ckpt.resume_step() == 3
