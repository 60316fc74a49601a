"""Local-backend fixtures: an isolated trainhub home and workspace, and the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.trainhub_cli import run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_ddp.ipynb"


class Trainhub:
    """Runs the real ``trainhub`` CLI against one isolated home and workspace."""

    def __init__(self, home: Path, workspace: Path, env: dict[str, str]):
        self.home = home
        self.workspace = workspace
        self.env = env

    def run(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        proc = run_cli(*args, cwd=self.workspace, env=self.env, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"trainhub {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def submit(self, *args: str) -> str:
        return self.run("submit", *args).stdout.strip().splitlines()[-1]

    def describe(self, job_id: str) -> dict[str, Any]:
        return self.json("describe", job_id)

    def wait(
        self, job_id: str, states: set[str] | None = None, timeout: float = 240
    ) -> dict[str, Any]:
        """`trainhub wait`: the job once it is in one of `states` (default: once it ended)."""
        states = states or {"succeeded", "failed", "cancelled"}
        wanted = [arg for state in sorted(states) for arg in ("--for", state)]
        proc = self.run(
            "wait",
            job_id,
            *wanted,
            "--timeout",
            str(timeout),
            "--json",
            check=False,
            timeout=timeout + 60,
        )
        if proc.returncode != 0:
            job = self.describe(job_id)
            log = self.logs(job_id, check=False)
            raise AssertionError(f"waiting for {sorted(states)}: {proc.stderr}\n{job}\n{log}")
        return json.loads(proc.stdout)

    def wait_all(self, job_ids: list[str], timeout: float = 240) -> list[dict[str, Any]]:
        """One `trainhub wait` for every job of ``job_ids`` to end: each as it ended."""
        proc = self.run(
            "wait", *job_ids, "--timeout", str(timeout), "--json", check=False, timeout=timeout + 60
        )
        if proc.returncode != 0:
            raise AssertionError(f"waiting for {len(job_ids)} jobs: {proc.stderr}")
        jobs = json.loads(proc.stdout)
        return jobs if len(job_ids) > 1 else [jobs]

    def logs(self, job_id: str, rank: int = 0, check: bool = True) -> str:
        return self.run("logs", job_id, "--rank", str(rank), check=check).stdout

    def job_dir(self, job_id: str) -> Path:
        return self.home / "jobs" / job_id


def job_processes(job_id: str) -> list[psutil.Process]:
    """Live processes that carry the job's id (torchrun agents and ranks)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if (
                proc.environ().get("TRAINHUB_JOB_ID") == job_id
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def trainhub_env(tmp_path: Path) -> Trainhub:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(EXAMPLE, workspace / EXAMPLE.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_")}
    env.update(
        TRAINHUB_HOME=str(home),
        TRAINHUB_WORKSPACE=str(workspace),
        TRAINHUB_CANCEL_GRACE="5",
        TRAINHUB_GPUS="0",
    )
    th = Trainhub(home, workspace, env)
    yield th
    # Never leave a job's processes behind, whatever the test did.
    for job_dir in (home / "jobs").glob("*") if (home / "jobs").exists() else []:
        for proc in job_processes(job_dir.name):
            proc.kill()
