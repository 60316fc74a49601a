"""Server CPU and memory with 200 ``jobs/stream`` websockets open, one of them never reading.

A real Jupyter server with the trainhub extension holds 200 finished jobs of the user, and a
writer adds one more every second, so every stream has something to send. Side by side in one
run: this checkout, where one watcher takes one snapshot per user and tick for all
connections, and the previous release (commit PEER, unpacked with ``git archive``), where
every connection polled the store on its own. Each side's jobs are written by its own code
(its store schema differs). For each: the server's CPU over a fixed window and its resident
memory at the end, with 1 stream and with 200 (199 reading, 1 that never reads its socket).

    python benchmarks/job_streams.py [seconds] [streams]
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from benchmarks.log_latency import JupyterServer
from benchmarks.report import print_table

ROOT = Path(__file__).resolve().parents[1]
PEER = "15e599d"  # the last release whose jobs/stream polled the store once per connection
JOBS = 200

# Inserts argv[2] finished jobs into the store under argv[1], says "ready", then one more job
# per line read from stdin. Written against what both releases share: LocalBackend(home,
# slots=), store.transaction(), store.insert(conn, JobRecord); fields one release lacks are
# left out.
WRITER = """
import getpass, secrets, sys, time
from pathlib import Path
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

home, initial = Path(sys.argv[1]), int(sys.argv[2])
backend = LocalBackend(home, slots=4)
spec = parse_spec({"name": "bench", "source": {"path": "bench.ipynb"}})

def insert(i):
    now = time.time()
    job_id = f"bench-{i:05d}-{secrets.token_hex(2)}"
    fields = dict(id=job_id, name="bench", user=getpass.getuser(), priority=1,
                  state=JobState.SUCCEEDED, spec=spec, job_dir=str(home / "jobs" / job_id),
                  gpus=0, slots=0, created_at=now, finished_at=now)
    record = JobRecord(**{k: v for k, v in fields.items() if k in JobRecord.model_fields})
    with backend.store.transaction() as conn:
        backend.store.insert(conn, record)

for i in range(initial):
    insert(i)
print("ready", flush=True)
for i, _ in enumerate(sys.stdin, start=initial):
    insert(i)
    print("ok", flush=True)
"""


class Writer:
    """The side's own job writer, in a child process with that side's code on its path."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), str(JOBS)],
            env=env,
            cwd=home,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the job writer for {home} failed (exit {self.proc.wait()})")

    def add(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def silent_client(port: int, token: str) -> socket.socket:
    """A websocket that completes its handshake and then never reads: the slowest consumer."""
    sock = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /trainhub/api/jobs/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: token {token}\r\n\r\n"
        ).encode()
    )
    return sock


async def hold_streams(
    server: JupyterServer, streams: int, seconds: float, writer: Writer
) -> tuple[float, int, int]:
    """(server CPU seconds over the window, its RSS at the end, messages received)."""
    request = HTTPRequest(
        f"ws://127.0.0.1:{server.port}/trainhub/api/jobs/stream",
        headers={"Authorization": f"token {server.token}"},
    )
    readers = [await websocket_connect(request) for _ in range(streams - 1 if streams > 1 else 1)]
    silent = silent_client(server.port, server.token) if streams > 1 else None
    received = 0

    async def read(ws: Any) -> None:
        nonlocal received
        while await ws.read_message() is not None:
            received += 1

    tasks = [asyncio.ensure_future(read(ws)) for ws in readers]
    await asyncio.sleep(3)  # every stream has sent its first snapshot
    proc = psutil.Process(server.proc.pid)
    before = sum(proc.cpu_times()[:2])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        writer.add()
        await asyncio.sleep(1.0)
    cpu = sum(proc.cpu_times()[:2]) - before
    rss = proc.memory_info().rss
    for ws in readers:
        ws.close()
    for task in tasks:
        task.cancel()
    if silent is not None:
        silent.close()
    return cpu, rss, received


def peer_tree(tmp: Path) -> Path:
    """The previous release's source, unpacked next to this run."""
    tree = tmp / "peer"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PEER], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def measure(label: str, tmp: Path, seconds: float, streams: int, tree: Path) -> list[dict]:
    pythonpath = os.pathsep.join([str(tree), str(tree / "server_extension")])
    env = {**os.environ, "PYTHONPATH": pythonpath}
    rows = []
    for count in (1, streams):
        home, root = tmp / f"{label}-{count}" / "home", tmp / f"{label}-{count}" / "root"
        home.mkdir(parents=True)
        root.mkdir()
        writer = Writer(home, env)
        server = JupyterServer(home, root, reconcile_interval=0, backend_kwargs={"slots": 4})
        server.env_overrides = {"PYTHONPATH": pythonpath}
        try:
            with server:
                cpu, rss, received = asyncio.run(hold_streams(server, count, seconds, writer))
        finally:
            writer.close()
        rows.append(
            {
                "server": label,
                "streams": count,
                "CPU % of a core": round(100 * cpu / seconds, 1),
                "RSS MiB": round(rss / 2**20, 1),
                "messages": received,
            }
        )
    return rows


def run(seconds: float = 20.0, streams: int = 200) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp_name:
        tmp = Path(tmp_name)
        peer = peer_tree(tmp)
        ours = measure("trainhub (one watcher)", tmp, seconds, streams, ROOT)
        theirs = measure(
            f"previous release {PEER} (a poller per stream)", tmp, seconds, streams, peer
        )
    ratio = {
        "server": f"ratio ours / previous, {streams} streams",
        "streams": streams,
        "CPU % of a core": round(
            ours[1]["CPU % of a core"] / max(theirs[1]["CPU % of a core"], 0.1), 3
        ),
        "RSS MiB": round(ours[1]["RSS MiB"] / theirs[1]["RSS MiB"], 3),
        "messages": "",
    }
    return ours + theirs + [ratio]


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    streams = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    print_table("job_streams", run(seconds, streams))


if __name__ == "__main__":
    main()
