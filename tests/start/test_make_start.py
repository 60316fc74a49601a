"""`make start` shows the product: the script it runs sets up a Python environment that nothing
prepared before (a fresh venv; the wheels come from the cache), installs the lab extension and
opens JupyterLab at the example notebook, and Debian's Chromium finds Submit as job and the Jobs
panel there. When it is stopped, nothing it started is left running."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.browser import visit

ROOT = Path(__file__).resolve().parents[2]
PLAYWRIGHT = ROOT / "labextension" / "ui-tests" / "node_modules" / "playwright-core"
READY = re.compile(r"trainhub is ready: open (\S+)")
# A machine's first environment unpacks PyTorch and its CUDA libraries, several GB, into uv's
# cache (later ones are hard-linked from there in seconds).
SETUP_TIMEOUT = 1500

pytestmark = [
    pytest.mark.timeout(SETUP_TIMEOUT + 300),
    pytest.mark.skipif(
        not (PLAYWRIGHT / "package.json").exists()
        or not shutil.which("chromium")
        or not shutil.which("node"),
        reason="playwright-core and Chromium come with scripts/setup-ui.sh",
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_session(sid: int) -> list[psutil.Process]:
    """Every process of the session `sid` (the script's own session)."""
    found = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid:
                found.append(p)
        except (ProcessLookupError, PermissionError):
            pass
    return found


class StartedLab:
    """`scripts/start.sh` running in its own session, its stdout read line by line."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.log = log
        with log.open("w") as err:
            self.proc = subprocess.Popen(
                [
                    "bash",
                    "scripts/start.sh",
                    "--no-browser",
                    "--ServerApp.ip=127.0.0.1",
                    f"--ServerApp.port={free_port()}",
                    "--ServerApp.port_retries=0",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if m := READY.search(line):
                    return m.group(1)
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.5)
        pytest.fail(f"no URL from scripts/start.sh:\n{self.output()}")

    def output(self) -> str:
        return "\n".join(self.lines) + "\n--- stderr ---\n" + self.log.read_text()[-20000:]

    def stop(self) -> list[psutil.Process]:
        """Stops JupyterLab (SIGTERM: it shuts its kernels down); returns what is still running."""
        try:
            lab = psutil.Process(self.proc.pid)
            started = [lab, *lab.children(recursive=True)]
        except psutil.NoSuchProcess:
            started = []
        started += in_session(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # Python's fault handler (PYTHONFAULTHANDLER) writes where every thread of the
            # server is to its stderr: the failure below then says where it hangs.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        _, alive = psutil.wait_procs(started, timeout=30)
        return [*alive, *(p for p in in_session(self.proc.pid) if p not in alive)]


@pytest.fixture
def started_lab(tmp_path: Path) -> Iterator[StartedLab]:
    venv = tmp_path / "venv"
    jupyter = tmp_path / "jupyter"
    env = {
        **os.environ,
        "TRAINHUB_VENV": str(venv),
        "TRAINHUB_HOME": str(tmp_path / "home"),
        "TRAINHUB_GPUS": "0",
        # The user's own Jupyter settings, workspaces and extensions stay out of it.
        "JUPYTER_CONFIG_DIR": str(jupyter / "config"),
        "JUPYTER_DATA_DIR": str(jupyter / "data"),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "PYTHONFAULTHANDLER": "1",
    }
    env.pop("VIRTUAL_ENV", None)
    # JupyterLab keeps a checkpoint of the notebook it opens next to it, in the clone.
    checkpoints = ROOT / "examples" / ".ipynb_checkpoints"
    had_checkpoints = checkpoints.exists()
    lab = StartedLab(env, tmp_path / "start.log")
    try:
        yield lab
    finally:
        for p in lab.stop():
            p.kill()
        if not had_checkpoints:
            shutil.rmtree(checkpoints, ignore_errors=True)
        # Several GB: not for pytest's retained temporary directories.
        shutil.rmtree(venv, ignore_errors=True)


def test_make_start_opens_jupyterlab_with_trainhub_in_a_fresh_environment(
    started_lab: StartedLab, tmp_path: Path
) -> None:
    url = started_lab.wait_for_url(SETUP_TIMEOUT)
    ready_after = time.monotonic() - started_lab.started
    print(f"fresh environment set up and JupyterLab ready in {ready_after:.0f} s")
    assert "/lab/tree/examples/train_ddp.ipynb?token=" in url
    said = "\n".join(started_lab.lines)
    assert "Submit as job" in said and "Jobs panel" in said

    shot = tmp_path / "make-start.png"
    seen = visit(
        Path(__file__).with_name("lab_shows_trainhub.cjs"),
        url,
        shot,
        timeout=300,
        playwright=PLAYWRIGHT,
    )
    assert "error" not in seen, f"{seen}\n{started_lab.output()}"
    assert seen["notebookTab"] == "train_ddp.ipynb"
    assert seen["submitButton"] == "Submit as job"
    assert seen["jobsTabTitle"] == "Training jobs"
    assert "No jobs yet" in seen["jobsPanel"]
    assert shot.stat().st_size > 10_000

    left = started_lab.stop()
    assert started_lab.proc.returncode != -signal.SIGABRT, (
        f"JupyterLab did not stop on SIGTERM within 60 s:\n{started_lab.output()}"
    )
    assert not left, f"still running after JupyterLab stopped: {[str(p) for p in left]}"
