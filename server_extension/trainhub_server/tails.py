"""Following JSON-lines files that jobs append to, from a byte offset, so a reconnect loses
nothing. Logs are followed by the one log follower, :mod:`trainhub.jobs.logs`.

Pure reading logic, no event loop: the websocket handlers call ``read`` on a timer (which is
what coalesces a fast stream into one message per tick) and send what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainhub.jobs.directory import read_jsonl


class JsonlTail:
    """Complete records of a JSON-lines file (events, metrics) from ``offset`` on."""

    def __init__(self, path: Path, offset: int = 0, *, limit: int = 1000):
        self.path = path
        self.offset = offset
        self.limit = limit

    def read(self) -> list[dict[str, Any]]:
        records, self.offset = read_jsonl(self.path, self.offset, self.limit)
        return records
