"""A rank's output, capped on its way into ``logs/rank-<r>.log``.

A rank that prints without end would otherwise fill the volume every job directory lives on.
So the rank's fds 1 and 2 are a pipe, and the process torchrun started keeps the other end:
it copies what arrives into the log, thins a progress bar's redraws to one per
``log_redraw_seconds`` (:mod:`trainhub.rank.redraws`), cuts a line longer than
``log_line_bytes`` (and drops the rest of that line) and stops writing once the file would pass
``log_file_bytes``, each time with a marker line saying so (:mod:`trainhub.jobs.limits`).
The rank runs as its child.

Why the copier is the parent: it keeps the pid torchrun (or the supervisor) watches, so it
exits only after the last byte the rank wrote is in the log, and with the rank's own exit
status or signal; a C extension that writes while holding the GIL cannot stall it either.
Standard library only: this runs in every rank before anything else is loaded.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
import time
from pathlib import Path

from trainhub.jobs import limits
from trainhub.rank.logmarks import OWN_LINE
from trainhub.rank.redraws import RedrawThinner

READ_BYTES = 64 * 1024
# After the rank has exited, what its leftover children still print is taken for this long,
# and the copier stops early once the pipe has been quiet for DRAIN_IDLE_MS.
DRAIN_SECONDS = 2.0
DRAIN_IDLE_MS = 200
POLL_MS = 500
_EOL = re.compile(rb"\r\n|\r|\n")  # a progress bar's "\r" ends a line as "\n" does
PR_SET_PDEATHSIG = 1


def file_marker(cap: int) -> bytes:
    size = limits.size_text(cap)
    return f"[trainhub: log truncated at {size}; further output dropped]\n".encode()


def line_marker(cap: int) -> bytes:
    return f" [trainhub: line cut at {limits.size_text(cap)}; the rest of it dropped]\n".encode()


def _char_boundary(data: bytes, end: int) -> int:
    """The largest cut <= ``end`` that does not split a UTF-8 character."""
    if end >= len(data):
        return len(data)
    cut = end
    while cut > 0 and end - cut < 3 and (data[cut] & 0xC0) == 0x80:
        cut -= 1  # data[cut] continues a character: cut before its first byte
    return end if (data[cut] & 0xC0) == 0x80 else cut  # not UTF-8: any cut will do


def markers_on_own_lines(data: bytes, line_open: bool) -> bytes:
    """``data`` with a newline put before each of trainhub's lines that would continue one
    (``line_open``: what came before ``data`` did not end its line), so the log's cell
    boundaries and the runner's last word hold after ``os.write(1, b"no newline")`` or a
    child's ``printf``.

    A marker is one write of the rank's, so it reaches the copier whole unless the pipe
    held more than :data:`READ_BYTES` when it was read (then a read may end inside it)."""
    out: list[bytes] = []
    pos = 0
    for m in OWN_LINE.finditer(data):
        start = m.start()
        if data[start - 1 : start] != b"\n" if start else line_open:
            out += (data[pos:start], b"\n")
            pos = start
    return b"".join([*out, data[pos:]]) if out else data


class LogCap:
    """What to write of each chunk a rank prints (pure: no file, no clock).

    ``written`` is what the log already holds (earlier attempts, a restarted copier).
    ``redraw_seconds``: a progress bar's redraws are thinned to one per that many seconds
    (:mod:`trainhub.rank.redraws`); None keeps every one.
    """

    def __init__(
        self,
        line_bytes: int,
        file_bytes: int,
        written: int = 0,
        redraw_seconds: float | None = None,
    ):
        self._redraws = None if redraw_seconds is None else RedrawThinner(redraw_seconds)
        self.line_bytes = line_bytes
        self.file_bytes = file_bytes
        self.written = written
        self._line = 0  # bytes of the current line let through so far
        self._cutting = False  # inside an overlong line: dropped up to its end
        self._line_open = False  # what the rank printed last did not end its line
        self._file_marker = file_marker(file_bytes)
        self._line_marker = line_marker(line_bytes)
        # Room kept for a newline and the marker, so the file never passes the cap.
        self._limit = file_bytes - len(self._file_marker) - 1
        self.full = written > self._limit

    def feed(self, data: bytes, now: float = 0.0) -> bytes:
        """What to write of ``data``, printed at ``now`` (monotonic seconds)."""
        if self.full or not data:
            return b""
        # Before the caps: a marker glued to an overlong line would be dropped with its rest.
        data = markers_on_own_lines(data, self._line_open)
        self._line_open = not data.endswith(b"\n")
        if self._redraws:
            data = self._redraws.feed(data, now)
        return self._capped(data)

    def tick(self, now: float) -> bytes:
        """A held progress-bar redraw whose interval is up at ``now``."""
        return self._capped(self._redraws.due(now)) if self._redraws else b""

    def flush(self) -> bytes:
        """What is held when the rank's output ends (a progress bar's last state)."""
        return self._capped(self._redraws.flush()) if self._redraws else b""

    def _capped(self, data: bytes) -> bytes:
        if self.full or not data:
            return b""
        return self._within_file(self._within_lines(data))

    def _within_lines(self, data: bytes) -> bytes:
        first = _EOL.search(data)
        first_len = first.start() if first else len(data)
        if (
            not self._cutting
            and len(data) <= self.line_bytes
            and (self._line + first_len <= self.line_bytes)
        ):
            # No line in this chunk can be too long: let it through whole.
            last = max(data.rfind(b"\n"), data.rfind(b"\r"))
            self._line = len(data) - last - 1 if last >= 0 else self._line + len(data)
            return data
        out: list[bytes] = []
        pos = 0
        while pos < len(data):
            m = _EOL.search(data, pos)
            body = data[pos : m.start() if m else len(data)]
            end = data[m.start() : m.end()] if m else b""
            pos = m.end() if m else len(data)
            if self._cutting:
                if end:
                    self._cutting, self._line = False, 0
                continue
            room = self.line_bytes - self._line
            if len(body) <= room:
                out.append(body + end)
                self._line = 0 if end else self._line + len(body)
                continue
            out.append(body[: _char_boundary(body, room)])
            out.append(self._line_marker)  # ends with the newline the cut line lost
            self._line = 0
            self._cutting = not end
        return b"".join(out)

    def _within_file(self, data: bytes) -> bytes:
        if self.written + len(data) <= self._limit:
            self.written += len(data)
            return data
        piece = data[: _char_boundary(data, max(0, self._limit - self.written))]
        if piece and not piece.endswith(b"\n"):
            piece += b"\n"
        self.full = True
        out = piece + self._file_marker
        if self.written + len(out) > self.file_bytes:  # a cap smaller than its own marker
            out = b""
        self.written += len(out)
        return out


# --- the copier -------------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy(read_fd: int, log_fd: int, cap: LogCap, child: int) -> int:
    """Copy the pipe into the log until every writer is gone, or the rank has exited and its
    leftovers have had :data:`DRAIN_SECONDS`; the rank's wait status."""
    poller = select.poll()
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    status: int | None = None
    deadline = 0.0
    writable = True

    def write(out: bytes) -> None:
        nonlocal writable
        if out and writable:
            try:
                _write_all(log_fd, out)
            except OSError:
                writable = False  # disk full or a lost mount: keep draining, never block

    while True:
        if poller.poll(POLL_MS if status is None else DRAIN_IDLE_MS):
            data = os.read(read_fd, READ_BYTES)
            if not data:
                break  # end of file: the rank and everything it started are gone
            write(cap.feed(data, time.monotonic()))
        elif status is not None:
            break
        write(cap.tick(time.monotonic()))
        if status is None:
            pid, wait_status = os.waitpid(child, os.WNOHANG)
            if pid:
                status, deadline = wait_status, time.monotonic() + DRAIN_SECONDS
        elif time.monotonic() > deadline:
            break
    write(cap.flush())
    if status is None:
        _, status = os.waitpid(child, 0)
    return status


def _die_like(status: int) -> None:
    """Exit as the rank did, so torchrun and the supervisor classify the end as before."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def die_with_parent(parent: int) -> None:
    """The rank goes when its copier goes (killed on its own): nothing would read its output."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def capped_output(log_path: Path, bounds: limits.Limits | None = None) -> None:
    """Point fds 1 and 2 at a pipe whose output reaches ``log_path`` within the log limits.

    Returns in the rank (a new child process); the calling process becomes the copier and
    never returns: it exits with the rank's status once the rank's output is in the log.
    """
    bounds = bounds or limits.current()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(read_fd)
        os.close(log_fd)
        die_with_parent(parent)
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        return
    os.close(write_fd)
    # A cancel reaches the rank itself (torchrun and the supervisor signal the whole group):
    # the copier stays to take its last words.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    status = 1 << 8
    try:
        cap = LogCap(
            bounds.log_line_bytes,
            bounds.log_file_bytes,
            os.fstat(log_fd).st_size,
            redraw_seconds=bounds.log_redraw_seconds,
        )
        status = copy(read_fd, log_fd, cap, child)
    finally:
        _die_like(status)
