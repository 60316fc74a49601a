"""Why the idle-GPU service stopped a server: written by the service beside its state file,
read by the spawner, which says it at the top of the spawn form until that server starts again.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

KEEP_SECONDS = 30 * 24 * 3600  # an older stop is no news to anyone


@dataclass(frozen=True)
class Stop:
    user: str
    server: str  # "" for the default server
    time: float  # when the service decided, before it asked the hub to stop the server
    reason: str  # "stopped at 14:02 UTC on 2025-05-02: its 1 GPU stayed under 5% for 60 minutes"

    @property
    def key(self) -> str:
        return f"{self.user}/{self.server}"


def stops_file(state_file: str) -> str:
    """The file of stops beside the service's state file."""
    path = Path(state_file)
    return str(path.with_name(f"{path.stem}-stops.json"))


def replace_json(path: str, document: Any) -> None:
    """A new file renamed over the old one: a reader never sees half of it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(document, f)
    os.replace(tmp, path)


def read_stops(path: str) -> dict[str, Stop]:
    """The latest stop of each user's server; none when the file is missing or unreadable."""
    try:
        with open(path) as f:
            records = json.load(f)["stops"]
        stops = [Stop(**record) for record in records]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {stop.key: stop for stop in stops}


def record_stop(path: str, stop: Stop) -> None:
    """Keep ``stop`` as the latest of its server, and forget stops older than KEEP_SECONDS."""
    stops = read_stops(path)
    stops[stop.key] = stop
    kept = [s for s in stops.values() if stop.time - s.time <= KEEP_SECONDS]
    replace_json(path, {"stops": [asdict(s) for s in sorted(kept, key=lambda s: s.time)]})


def form_notice(stop: Stop | None, started_at: float | None) -> str:
    """The spawn form's first lines: why the server was stopped, unless it started since."""
    if stop is None or (started_at is not None and started_at > stop.time):
        return ""
    text = html.escape(f"This server was {stop.reason}.")
    # Braces too: a hub that renders the form as a template must not read the text as one.
    text = text.replace("{", "&#123;").replace("}", "&#125;")
    return f'<div class="alert alert-warning trainhub-stopped" role="alert">{text}</div>\n'
