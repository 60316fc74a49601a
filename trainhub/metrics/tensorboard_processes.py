"""TensorBoard processes over job directories, one per set of jobs, for the Jupyter server to
proxy (server_extension/trainhub_server/handlers/tensorboard.py): "Open in TensorBoard".

Each is ``python -m tensorboard.main`` of the server's own environment (the ``torch`` extra
installs it), reading ``--logdir_spec <job id>:<job dir>,...``, listening on 127.0.0.1 on a
port of its choosing, under a random path prefix that only this process knows: its flags are
in a 0600 file, never on the command line ``ps`` shows, so another account on the machine
cannot reach it; the user reaches it only through the server's authenticated proxy.

Nothing is orphaned: a board dies with the process that started it (``PR_SET_PDEATHSIG``,
so it must be started from a thread that lives as long: the server's event loop), is
stopped with the server (:meth:`TensorBoards.stop_all`), after ``idle_seconds`` without a
request (:meth:`TensorBoards.reap`), and the least recently used one goes when more than
``most`` would run. A second "Open" of the same jobs reuses the running one.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trainhub.jobs.spec import field_error

# Tied to its parent first, then TensorBoard in the same process (the tie survives exec). Not a
# preexec_fn: Python code between fork and exec can deadlock in a server with threads.
_LAUNCH = (
    "import os, sys\n"
    "from trainhub.rank.logcap import die_with_parent\n"
    "die_with_parent(int(sys.argv[1]))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'tensorboard.main', *sys.argv[2:]])\n"
)
MAX_JOBS = 10
STOP_SECONDS = 5.0
_LISTENING = re.compile(r"TensorBoard \S+ at http://127\.0\.0\.1:(\d+)/")
_RUN_NAME = re.compile(r"[^,:]+")


def logdir_spec(runs: Mapping[str, Path]) -> str:
    """``--logdir_spec`` for ``runs`` (a run name, the job id, to its directory). TensorBoard
    splits it at ``,`` and ``:``, so a name or a path holding one is refused, naming it."""
    if not 1 <= len(runs) <= MAX_JOBS:
        raise field_error("ids", f"open 1 to {MAX_JOBS} jobs in TensorBoard; got {len(runs)}")
    for name, path in runs.items():
        if not _RUN_NAME.fullmatch(name) or "," in str(path):
            raise field_error("ids", f"job {name!r}: its name or directory holds ',' or ':'")
    return ",".join(f"{name}:{path}" for name, path in runs.items())


@dataclass
class Board:
    """One running TensorBoard."""

    id: str  # in the proxied URL: trainhub/tensorboard/<id>/
    owner: str
    runs: dict[str, Path]
    prefix: str  # TensorBoard's own path prefix, known only to this process
    process: subprocess.Popen[bytes]
    scratch: Path  # the flag file and TensorBoard's first words, removed once it listens
    port: int | None = None
    last_used: float = field(default_factory=time.monotonic)

    def listening_port(self) -> int | None:
        """TensorBoard's port once it says it serves (it prints the address it bound)."""
        if self.port is None:
            with contextlib.suppress(OSError):
                found = _LISTENING.search((self.scratch / "output.txt").read_text())
                self.port = int(found.group(1)) if found else None
            if self.port is not None:  # its flags are read: nothing is left behind a crash
                shutil.rmtree(self.scratch, ignore_errors=True)
        return self.port

    def output(self) -> str:
        with contextlib.suppress(OSError):
            return (self.scratch / "output.txt").read_text()[-2000:]
        return ""

    def upstream(self, path: str) -> str:
        """TensorBoard's URL of ``path`` (below the board's root)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}/{path}"


class TensorBoards:
    """The boards of one Jupyter server."""

    def __init__(self, *, idle_seconds: float = 1800.0, most: int = 4):
        self.idle_seconds = idle_seconds
        self.most = most
        self.boards: dict[str, Board] = {}

    def open(self, owner: str, runs: Mapping[str, Path]) -> Board:
        """The board of ``owner`` over exactly ``runs``: the running one, or a new one."""
        spec = logdir_spec(runs)
        self.reap()
        for board in self.boards.values():
            if board.owner == owner and board.runs == dict(runs):
                if board.process.poll() is None:
                    board.last_used = time.monotonic()
                    return board
                self.stop(board.id)  # it died: start it again
                break
        while len(self.boards) >= self.most:
            self.stop(min(self.boards.values(), key=lambda b: b.last_used).id)
        board = self._start(owner, dict(runs), spec)
        self.boards[board.id] = board
        return board

    def get(self, board_id: str, owner: str) -> Board | None:
        """``owner``'s running board ``board_id`` (another's is not found), touched."""
        board = self.boards.get(board_id)
        if board is None or board.owner != owner or board.process.poll() is not None:
            return None
        board.last_used = time.monotonic()
        return board

    def reap(self, now: float | None = None) -> None:
        """Stop the boards nobody has asked anything for ``idle_seconds``."""
        now = time.monotonic() if now is None else now
        for board in list(self.boards.values()):
            if now - board.last_used > self.idle_seconds or board.process.poll() is not None:
                self.stop(board.id)

    def stop(self, board_id: str) -> None:
        board = self.boards.pop(board_id, None)
        if board is None:
            return
        if board.process.poll() is None:
            board.process.terminate()
            try:
                board.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                board.process.kill()
                board.process.wait()
        shutil.rmtree(board.scratch, ignore_errors=True)

    def stop_all(self) -> None:
        for board_id in list(self.boards):
            self.stop(board_id)

    def _start(self, owner: str, runs: dict[str, Path], spec: str) -> Board:
        scratch = Path(tempfile.mkdtemp(prefix="trainhub-tensorboard-"))  # 0700
        prefix = "/" + secrets.token_urlsafe(24)
        flags = scratch / "flags"
        flags.write_text(
            f"--logdir_spec={spec}\n--path_prefix={prefix}\n--host=127.0.0.1\n--port=0\n"
        )
        flags.chmod(0o600)
        with open(scratch / "output.txt", "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, str(os.getpid()), f"--flagfile={flags}"],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        return Board(secrets.token_hex(8), owner, runs, prefix, process, scratch)
