"""The one log follower: a rank's log from a byte offset, in bounded chunks, each ending on a
UTF-8 character boundary, so joining the chunks' text gives the log's text and every
``next_offset`` is exact (no byte lost or sent twice, no character split into U+FFFD).

Every front door reads logs through here: the CLI, the Python API, the notebook widget and the
server (REST reads and websocket streams). Files are opened with :mod:`trainhub.jobs.confined`,
so a rank log the job replaced by a link, a FIFO or a directory is refused, never followed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub.jobs import confined

MAX_CHUNK = 1 << 20
# A line still being written (a progress bar redrawn with '\r') waits at most this long.
HOLD_PARTIAL_S = 0.5
# One UTF-8 character is at most 4 bytes: reading this many more tells whether the character
# a chunk's limit falls into can still be completed from what is already written.
LOOKAHEAD = 3

# (offset, length) -> up to ``length`` bytes of the log from ``offset``; b"" past its end.
Reader = Callable[[int, int], bytes]


def rank_log_name(rank: int) -> str:
    """A rank's log, relative to the job directory."""
    return f"logs/rank-{rank}.log"


def job_dir_reader(job_dir: Path, rank: int) -> Reader:
    """Reads ``logs/rank-<rank>.log`` of ``job_dir`` without following links; an absent log
    reads as empty, anything but a regular file raises :class:`confined.NotAJobFile`."""
    name = rank_log_name(rank)

    def read(offset: int, length: int) -> bytes:
        try:
            return confined.read_range(job_dir, name, offset, length)
        except FileNotFoundError:
            return b""

    return read


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


def _first_character(data: bytes) -> int:
    """Length of the character ``data`` starts with (1 for a byte that starts none); 0 while
    the rest of it is not written yet."""
    lead = data[0]
    need = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return need if need <= len(data) else 0


def chunk_length(data: bytes, limit: int, *, whole_lines: bool, final: bool) -> int:
    """How many bytes of ``data`` (read from the log, up to ``limit + LOOKAHEAD`` bytes) make
    the next chunk: at most ``limit`` bytes unless one character is longer, never ending inside
    a character.

    ``whole_lines``: a last line without its newline waits (0 when there is no whole line).
    ``final``: the writer is gone; what ends the log is sent as it is, a torn character too.
    """
    if len(data) > limit:  # more follows: cut within the limit
        window = data[:limit]
        count = window.rfind(b"\n") + 1 or utf8_boundary(window) or _first_character(data)
        return count or (len(data) if final else 0)  # a character torn at the log's end
    if final:
        return len(data)
    if whole_lines:
        return data.rfind(b"\n") + 1
    return utf8_boundary(data)


@dataclass(frozen=True)
class LogChunk:
    data: bytes
    offset: int

    @property
    def next_offset(self) -> int:
        return self.offset + len(self.data)

    @property
    def text(self) -> str:
        # Chunks end on character boundaries: only bytes that are not UTF-8 at all are replaced.
        return self.data.decode(errors="replace")

    def message(self) -> dict[str, Any]:
        return {"text": self.text, "offset": self.offset, "next_offset": self.next_offset}


def read_chunk(
    read: Reader, offset: int, length: int = MAX_CHUNK, *, final: bool = False
) -> LogChunk:
    """One stateless chunk from ``offset``: whole lines when the limit cuts the log, else all
    that is written up to the last whole character (everything when ``final``)."""
    data = read(offset, length + LOOKAHEAD)
    return LogChunk(data[: chunk_length(data, length, whole_lines=False, final=final)], offset)


class LogFollower:
    """One rank's log from ``offset`` on, chunk after chunk.

    A last line without its newline waits for it ``hold_partial_s`` seconds (None: until the
    log is final), then goes out up to its last whole character.
    """

    def __init__(
        self,
        read: Reader,
        offset: int = 0,
        *,
        max_chunk: int = MAX_CHUNK,
        hold_partial_s: float | None = HOLD_PARTIAL_S,
    ):
        self._read = read
        self.offset = offset
        self.max_chunk = max_chunk
        self.hold_partial_s = hold_partial_s
        self._held_since: tuple[int, float] | None = None  # (offset, time) a partial line waits

    def read(self, *, final: bool = False, now: float | None = None) -> LogChunk | None:
        """The next chunk, or None when there is nothing to send yet.

        ``final``: the job has ended, so a last line without a newline is sent too.
        """
        data = self._read(self.offset, self.max_chunk + LOOKAHEAD)
        if not data:
            self._held_since = None
            return None
        count = chunk_length(data, self.max_chunk, whole_lines=True, final=final)
        if count == 0 and self.hold_partial_s is not None:
            now = time.monotonic() if now is None else now
            if self._held_since is None or self._held_since[0] != self.offset:
                self._held_since = (self.offset, now)
            if now - self._held_since[1] >= self.hold_partial_s:
                count = chunk_length(data, self.max_chunk, whole_lines=False, final=False)
        if count == 0:
            return None
        chunk = LogChunk(data[:count], self.offset)
        self.offset = chunk.next_offset
        return chunk

    def drain(self, *, final: bool = False) -> list[LogChunk]:
        """Every chunk readable now."""
        chunks = []
        while chunk := self.read(final=final):
            chunks.append(chunk)
        return chunks


def split_lines(pending: str, text: str) -> tuple[list[str], str]:
    """Complete lines of ``pending + text`` and the unfinished rest to keep."""
    *lines, rest = (pending + text).split("\n")
    return lines, rest
