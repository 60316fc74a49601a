"""Warm rank start: the process torchrun starts for a rank hands the rank to a runner that
was started ahead of it and has already loaded IPython.

torchrun starts a job's ranks only once its agent has imported PyTorch, a second or more after
it was launched. The local launcher uses that time: next to each agent it starts one runner
per rank (``python -m trainhub.rank.runner --warm SOCKET BUNDLE``), which loads what a rank needs
and then listens on a Unix socket in the job's private ``run/`` directory. The process torchrun
starts for rank r (``python -m trainhub.rank.warm_start BUNDLE``, the stand-in) sends its environment
(RANK, MASTER_PORT, ...) to the runner waiting for rank r, which takes it over and runs the
cells. The stand-in stays torchrun's child for the rank: it forwards signals to the runner,
dies with it (the runner kills itself if the stand-in is killed), and exits as the runner did
(the runner says its exit status; a signal that killed it is written down by its parent, the
supervisor, in ``run/rank-<r>.exit``).

Whenever no runner takes the rank (none is waiting, it died, or it refuses because something
read at interpreter start-up differs), the stand-in becomes the rank itself by executing
``python -m trainhub.rank.runner BUNDLE``: warm start only ever makes a rank start sooner.

Only the standard library is imported here: this module is on the way to the first cell.
"""

from __future__ import annotations

import contextlib
import errno
import marshal
import os
import select
import signal
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Iterable, Iterator

HANDOFF_DIR = "TRAINHUB_HANDOFF_DIR"  # in a stand-in's environment: where the runners wait
WARM_RANK = "TRAINHUB_WARM_RANK"  # in a warm runner's environment: the rank it waits for
CONNECT_WAIT_S = 30.0  # runners listen long before torchrun spawns; this covers a slow machine
EXIT_WAIT_S = 2.0  # the supervisor polls its children five times a second
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_STARTUP_PREFIXES = ("PYTHON", "LD_", "MALLOC_", "GLIBC_")
_MAX_MESSAGE = 16 * 2**20


def socket_path(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, f"rank-{rank}.sock")


def exit_path(run_dir: str, rank: int) -> str:
    """Where the supervisor writes how a warm runner ended, as ``subprocess`` reports it
    (negative: killed by that signal): its parent alone can tell."""
    return os.path.join(run_dir, f"rank-{rank}.exit")


def rank_of(env: dict[str, str]) -> int | None:
    """The global rank whose code a process of a job runs, from its start-up environment: a
    warm runner names the rank it waits for, a stand-in runs no code of its own."""
    if WARM_RANK in env:
        return int(env[WARM_RANK])
    if "RANK" in env and "LOCAL_RANK" in env and HANDOFF_DIR not in env:
        return int(env["RANK"])
    return None


def rank_roots(processes: Iterable[tuple[int, int, dict[str, str]]]) -> dict[int, int]:
    """Rank -> pid of the process that runs the rank, from the (pid, parent pid, start-up
    environment) of a job's processes. What a rank starts (data loader workers, ``!`` commands)
    inherits its environment and so looks like a rank too: the rank is the one whose parent
    does not."""
    members: dict[int, dict[int, int]] = {}
    for pid, ppid, env in processes:
        rank = rank_of(env)
        if rank is not None:
            members.setdefault(rank, {})[pid] = ppid
    return {
        rank: min(pid for pid, ppid in parents.items() if ppid not in parents)
        for rank, parents in members.items()
    }


def startup_differences(theirs: dict[str, str], ours: dict[str, str]) -> list[str]:
    """Variables read when an interpreter starts (PYTHONPATH, LD_PRELOAD, ...) that differ:
    a process that already started cannot take them on."""

    def startup(env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES)}

    a, b = startup(theirs), startup(ours)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def _address(path: str) -> str:
    # A Unix socket address holds at most 107 bytes; job directories can be deeper than that.
    return path if len(path.encode()) < 100 else os.path.relpath(path)


# Both ends run the same interpreter, so marshal will do: built in, and json would load re.
def _send(conn: socket.socket, message: dict) -> None:
    data = marshal.dumps(message)
    conn.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(conn: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(conn: socket.socket) -> dict | None:
    """One message, or None when the other side closed the connection first."""
    head = _recv_exact(conn, 4)
    if head is None:
        return None
    (size,) = struct.unpack("!I", head)
    if size > _MAX_MESSAGE:
        raise ValueError(f"a hand-off message of {size} bytes")
    body = _recv_exact(conn, size)
    if body is None:
        return None
    try:
        message = marshal.loads(body)  # from our own user only (SO_PEERCRED, a 0700 directory)
    except (EOFError, TypeError) as exc:
        raise ValueError(f"an unreadable hand-off message: {exc}") from None
    if not isinstance(message, dict):
        raise ValueError("a hand-off message that is not a mapping")
    return message


def _peer(conn: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end, as the kernel tells."""
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return int(pid), int(uid)


# --- the warm runner's side ---------------------------------------------------------------------


@contextlib.contextmanager
def loading_turn(path: str, rank: int) -> Iterator[None]:
    """Load in turns, on the cores torchrun's agent leaves free: runners loading all at once
    would take CPU from the agent's own start, which is what the first cell waits for."""
    import fcntl

    turns = max(1, (os.cpu_count() or 1) - 1)
    fd = os.open(os.path.join(os.path.dirname(path), f"loading-{rank % turns}.lock"),
                 os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class WarmListener:
    """A runner's socket, listening from the moment it appears under its name."""

    def __init__(self, path: str):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        partial = f"{path}.{os.getpid()}"
        self.sock.bind(_address(partial))
        self.sock.listen(4)
        os.replace(partial, path)  # so a stand-in never finds it bound but not yet listening

    def take_rank(self) -> RankLink | None:
        """Wait for the stand-in of our rank; its environment becomes ours. None when it
        cannot be taken over (it then runs the rank itself)."""
        while True:
            conn, _ = self.sock.accept()
            pid, uid = _peer(conn)
            if uid != os.getuid():
                conn.close()  # the directory is private; another user has no business here
                continue
            try:
                request = _recv(conn)
            except (OSError, ValueError):
                request = None
            if request is None or not isinstance(request.get("env"), dict):
                conn.close()
                continue
            env = {str(k): str(v) for k, v in request["env"].items()}
            differs = startup_differences(env, dict(os.environ))
            if differs:
                _send(conn, {"refused": f"{', '.join(differs)} differ from this runner's"})
                conn.close()
                self.close()
                return None
            os.environ.clear()
            os.environ.update(env)
            _send(conn, {"pid": os.getpid()})
            self.close()
            return RankLink(conn, pid)

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class RankLink:
    """The runner's connection to its stand-in, for as long as the rank runs."""

    def __init__(self, conn: socket.socket, stand_in: int):
        self.conn = conn
        self.stand_in = stand_in
        threading.Thread(target=self._die_with_stand_in, name="stand-in", daemon=True).start()

    def _die_with_stand_in(self) -> None:
        # The stand-in leaves only after we are gone; an end of file before that means it was
        # killed, and torchrun then counts the rank as dead: so must it be.
        try:
            while self.conn.recv(1 << 12):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    def report_exit(self, code: int) -> None:
        """Tell the stand-in the status to exit with, once this process is gone."""
        with contextlib.suppress(OSError):
            _send(self.conn, {"exit": int(code)})


# --- the stand-in's side ------------------------------------------------------------------------


def _connect(run_dir: str, rank: int, deadline: float) -> socket.socket | None:
    path = socket_path(run_dir, rank)
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(_address(path))
            return sock
        except OSError as exc:
            sock.close()
            # Not there yet: the runner is still loading. Refused: nobody listens any more.
            if exc.errno != errno.ENOENT or time.monotonic() > deadline:
                return None
        if os.path.exists(exit_path(run_dir, rank)):
            return None  # it ended before it could listen
        time.sleep(0.005)


def _private_dir(path: str) -> bool | None:
    """Ours and closed to others (a rank's environment is sent only into such a directory);
    None while it does not exist."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0 and stat.S_ISDIR(st.st_mode)


def hand_over(run_dir: str, rank: int, env: dict[str, str]) -> int | None:
    """Hand rank ``rank`` to the runner waiting for it and stand in for it until it ends.

    Returns the status to exit with, as ``subprocess`` reports it (negative: a signal), or
    None when no runner took the rank."""
    deadline = time.monotonic() + CONNECT_WAIT_S
    while (private := _private_dir(run_dir)) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if not private:
        print(f"[trainhub] rank {rank} starts cold: {run_dir} is missing or not a private directory of ours",
              file=sys.stderr, flush=True)
        return None
    conn = _connect(run_dir, rank, deadline)
    if conn is None:
        return None
    try:
        _send(conn, {"env": env})
        reply = _recv(conn)
    except (OSError, ValueError):
        return None
    if reply is None or "pid" not in reply:
        if reply is not None:
            print(f"[trainhub] rank {rank} starts cold: {reply.get('refused')}", file=sys.stderr, flush=True)
        return None
    return _stand_in(conn, int(reply["pid"]), run_dir, rank)


def _stand_in(conn: socket.socket, pid: int, run_dir: str, rank: int) -> int:
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        ended: int | None = os.pidfd_open(pid)
    except OSError:  # gone already, or a kernel without pidfds: poll instead
        ended = None
    code: int | None = None
    open_conn = True
    while True:
        watched = ([conn] if open_conn else []) + ([ended] if ended is not None else [])
        ready = select.select(watched, [], [], None if ended is not None else 0.1)[0]
        if conn in ready:  # read what it said before looking at whether it is gone
            try:
                message = _recv(conn)
            except (OSError, ValueError):
                message = None
            if message is None:
                open_conn = False  # closed at its end; whether the process is gone tells the rest
            elif "exit" in message:
                code = int(message["exit"])
            continue
        if ended in ready if ended is not None else not _exists(pid):
            break
    return code if code is not None else _exit_of(run_dir, rank, forwarded)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _exit_of(run_dir: str, rank: int, forwarded: list[int]) -> int:
    """How the runner ended without saying so (killed, most likely): its parent, the
    supervisor, writes it down. Failing that, by the signal we passed on, or SIGKILL."""
    path = exit_path(run_dir, rank)
    deadline = time.monotonic() + EXIT_WAIT_S
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                return int(f.read())
        except (OSError, ValueError):
            time.sleep(0.02)
    return -(forwarded[-1] if forwarded else signal.SIGKILL)


def exit_as(code: int) -> None:
    """Exit as the runner did: with its status, or by its signal."""
    if code >= 0:
        os._exit(code)
    signum = -code
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught anyway
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m trainhub.rank.warm_start <bundle_dir>", file=sys.stderr)
        sys.exit(2)
    run_dir = os.environ.pop(HANDOFF_DIR, None)
    rank = os.environ.get("RANK")
    if run_dir and rank is not None:
        code = hand_over(run_dir, int(rank), dict(os.environ))
        if code is not None:
            exit_as(code)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "trainhub.rank.runner", args[0]])


if __name__ == "__main__":
    main()
