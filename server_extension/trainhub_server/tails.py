"""Following JSON-lines files that jobs append to, from a byte offset, so a reconnect loses
nothing. Logs are followed by the one log follower, :mod:`trainhub.jobs.logs`.

Pure reading logic, no event loop: the websocket handlers call ``read`` on a timer (which is
what coalesces a fast stream into one message per tick) and send what it returns.
"""

from __future__ import annotations

from typing import Any

from trainhub.jobs.directory import JobDir, read_jsonl


class JsonlTail:
    """Complete records of a JSON-lines file of a job (events, metrics) from ``offset`` on, read
    without following links (:func:`trainhub.jobs.directory.read_jsonl`)."""

    def __init__(self, jobdir: JobDir, relative: str, offset: int = 0, *, limit: int = 1000):
        self.jobdir = jobdir
        self.relative = relative
        self.offset = offset
        self.limit = limit

    def check(self) -> None:
        """Raise now if the file is a link, a FIFO or a directory (so a stream is refused before
        it starts, as a REST read is)."""
        read_jsonl(self.jobdir.root, self.relative, self.offset, 0)

    def read(self) -> list[dict[str, Any]]:
        records, self.offset = read_jsonl(self.jobdir.root, self.relative, self.offset, self.limit)
        return records
