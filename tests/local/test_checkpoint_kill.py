"""Checkpoints survive a writer killed with SIGKILL: never half visible, debris cleaned next save.

A real subprocess saves large states in a loop and is killed mid-write; the checkpoints it
leaves must each be whole (manifest, sizes, sha256, values) and load.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import trainhub.checkpoint as ckpt
from trainhub.checkpoint.layout import TEMP_PREFIX, list_checkpoints, parse_step_name

SAVING = re.compile(re.escape(TEMP_PREFIX) + r"(\d{10})-")
WRITER = textwrap.dedent("""
    import sys, torch, trainhub.checkpoint as ckpt
    mode, megabytes = sys.argv[1], int(sys.argv[2])
    n = megabytes * 2**20 // 4

    def state(version):
        return {"w": torch.full((n,), float(version)), "version": version}

    ckpt.save(state(1), 1)
    print("ready", flush=True)
    for version in range(2, 10_000):
        if mode == "steps":
            ckpt.save(state(version), version, keep_last=2)
        else:  # the same step saved over and over
            ckpt.save(state(version), 1)
""")


@pytest.fixture
def ckdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TRAINHUB_JOB_DIR", "TRAINHUB_RESUME_FROM", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "checkpoints"
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(root))
    return root


def start_writer(root: Path, mode: str, megabytes: int) -> subprocess.Popen[str]:
    env = {**os.environ, "TRAINHUB_CHECKPOINT_DIR": str(root), "OMP_NUM_THREADS": "1"}
    env.pop("TRAINHUB_JOB_DIR", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, mode, str(megabytes)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", "writer did not finish its first save"
    return proc


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def temp_dirs(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.name.startswith(TEMP_PREFIX)]


def half_written(root: Path) -> tuple[Path, int] | None:
    """A save's temp dir whose state file has bytes but no manifest yet, and its step."""
    for tmp in temp_dirs(root):
        saving = SAVING.match(tmp.name)  # not a checkpoint being deleted by retention
        if saving is None:
            continue
        try:
            if (tmp / "state.pt").stat().st_size > 0 and not (tmp / "manifest.json").exists():
                return tmp, int(saving.group(1))
        except FileNotFoundError:
            continue
    return None


def assert_every_checkpoint_whole(root: Path) -> list[int]:
    """Each visible checkpoint: files match the manifest's sha256, values match its version."""
    step_dirs = sorted(p for p in root.iterdir() if parse_step_name(p.name) is not None)
    infos = list_checkpoints(root)
    assert [i.path for i in infos] == step_dirs, "a step directory is visible but not whole"
    for info in infos:
        for f in info.files:
            assert hashlib.sha256((info.path / f.name).read_bytes()).hexdigest() == f.sha256
        state = ckpt.load(info)
        assert bool((state["w"] == float(state["version"])).all())
    return [i.step for i in infos]


def test_kill_mid_write_leaves_the_previous_checkpoint_loadable(ckdir: Path) -> None:
    proc = start_writer(ckdir, "steps", megabytes=120)
    try:
        deadline = time.monotonic() + 120
        while (found := half_written(ckdir)) is None:
            assert time.monotonic() < deadline, "never saw a save in progress"
            time.sleep(0.001)
        kill(proc)
    finally:
        proc.kill()

    tmp, in_progress = found
    assert tmp.exists(), "the killed writer's temp dir is the debris under test"
    latest = ckpt.latest()
    assert latest is not None and latest.step == in_progress - 1
    assert assert_every_checkpoint_whole(ckdir)[-1] == in_progress - 1
    assert ckpt.resume_step() == in_progress

    ckpt.save({"w": torch.zeros(4), "version": 0}, in_progress)
    assert temp_dirs(ckdir) == []
    assert ckpt.latest().step == in_progress


@pytest.mark.parametrize("mode", ["steps", "same-step"])
def test_kill_at_random_moments_never_shows_a_partial_checkpoint(ckdir: Path, mode: str) -> None:
    rng = random.Random(f"kill-{mode}")
    for _ in range(3):
        proc = start_writer(ckdir, mode, megabytes=8)
        try:
            time.sleep(rng.uniform(0.0, 1.0))
            kill(proc)
        finally:
            proc.kill()
        steps = assert_every_checkpoint_whole(ckdir)
        assert steps, "the first save completed before 'ready', so something must be visible"
        if mode == "same-step":
            # Replacing a step swaps old for new: the step never disappears.
            assert steps == [1]
