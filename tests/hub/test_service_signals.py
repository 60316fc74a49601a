"""The hub-managed services end at JupyterHub's SIGINT, at once, even where SIGINT was ignored
when the hub started (a shell's background job): else every hub stop and restart waits 10 s
for JupyterHub's SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.hub.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "trainhub_spawner.idle": [
        "--interval-seconds=1",
        "--warn-after-minutes=0.5",
        "--stop-after-minutes=1",
    ],
    "trainhub_spawner.metrics_service": [],
}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("module", list(SERVICES))
def test_a_service_ends_at_once_on_the_hubs_signal(
    module: str, sig: signal.Signals, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "spawner"),
        "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
        "JUPYTERHUB_API_URL": f"http://127.0.0.1:{free_port()}/hub/api",  # nobody answers
        "JUPYTERHUB_API_TOKEN": "a-token",
        "TRAINHUB_BACKEND": "local",
        "TRAINHUB_HOME": str(tmp_path),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *SERVICES[module]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # As a hub started in a shell's background passes it on.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    lines: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(proc, lines), daemon=True)
    reader.start()
    try:
        # Up: the metrics service listens; the idle service has logged its first check, which
        # fails (no hub answers) and is retried after the interval.
        def up() -> bool:
            return _listening(port) if module.endswith("metrics_service") else bool(lines)

        deadline = time.monotonic() + 60
        while not up() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None and up(), "".join(lines)
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    assert took < 5 and proc.returncode == 0, (took, proc.returncode, "".join(lines)[-2000:])


def _read_lines(proc: subprocess.Popen[bytes], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.decode(errors="replace"))


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
