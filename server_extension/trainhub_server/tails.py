"""Following files that jobs append to, from a byte offset, so a reconnect loses nothing.

Pure reading logic, no event loop: the websocket handlers call ``read`` on a timer (which is
what coalesces a fast log into one message per tick) and send what it returns.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import read_jsonl

MAX_CHUNK = 1 << 20
# A line still being written (a progress bar redrawn with '\r') waits at most this long.
HOLD_PARTIAL_S = 0.5


def utf8_boundary(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that does not end inside a UTF-8 character."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte < 0x80:
            return n
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return n if back >= need else n - back
    return n  # continuation bytes only: not UTF-8 anyway, send as it is


def sendable(data: bytes, *, flush: bool) -> int:
    """How many bytes of freshly read log ``data`` to send: whole lines, or everything on flush."""
    if flush:
        return utf8_boundary(data)
    return data.rfind(b"\n") + 1


@dataclass(frozen=True)
class LogChunk:
    text: str
    offset: int
    next_offset: int

    def message(self) -> dict[str, Any]:
        return {"text": self.text, "offset": self.offset, "next_offset": self.next_offset}


class LogTail:
    """One rank's log from ``offset`` on, in chunks that end on line boundaries."""

    def __init__(self, path: Path, offset: int = 0, *, max_chunk: int = MAX_CHUNK):
        self.path = path
        self.offset = offset
        self.max_chunk = max_chunk
        self._held_since: tuple[int, float] | None = None  # (offset, time) a partial line waits

    def read(self, *, final: bool = False, now: float | None = None) -> LogChunk | None:
        """The next chunk, or None when there is nothing to send yet.

        ``final``: the job has ended, so a last line without a newline is sent too.
        """
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(self.max_chunk)
        except FileNotFoundError:
            return None
        if not data:
            self._held_since = None
            return None
        count = sendable(data, flush=final or (len(data) == self.max_chunk and b"\n" not in data))
        if count == 0:
            now = time.monotonic() if now is None else now
            if self._held_since is None or self._held_since[0] != self.offset:
                self._held_since = (self.offset, now)
            elif now - self._held_since[1] >= HOLD_PARTIAL_S:
                count = sendable(data, flush=True)
            if count == 0:
                return None
        start = self.offset
        self.offset += count
        return LogChunk(data[:count].decode(errors="replace"), start, self.offset)


class JsonlTail:
    """Complete records of a JSON-lines file (events, metrics) from ``offset`` on."""

    def __init__(self, path: Path, offset: int = 0, *, limit: int = 1000):
        self.path = path
        self.offset = offset
        self.limit = limit

    def read(self) -> list[dict[str, Any]]:
        records, self.offset = read_jsonl(self.path, self.offset, self.limit)
        return records
