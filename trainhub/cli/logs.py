"""``trainhub logs``: a rank's log, read once or followed to the job's end."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from trainhub.bundle.schema import cell_label
from trainhub.jobs.states import JobState


def follow(job_id: str, rank: int) -> int:
    """Stream a rank's log; progress (state changes, cells, retries) goes to stderr."""
    from trainhub.api import Job, service
    from trainhub.jobs.logs import LogFollower, split_lines

    svc = service()
    log = LogFollower(svc.log_reader(job_id, rank=rank), hold_partial_s=None)
    event_offset, pending = 0, ""

    def show(chunks: list[Any]) -> None:
        nonlocal pending
        for chunk in chunks:
            lines, pending = split_lines(pending, chunk.text)
            for line in lines:
                print(line, flush=True)

    while True:
        chunks = log.drain()
        show(chunks)
        events, event_offset = svc.events(job_id, offset=event_offset)
        for e in events:
            note = _progress(e, rank)
            if note:
                print(f"[trainhub] {note}", file=sys.stderr, flush=True)
        if not chunks and not events:
            state = Job(job_id).status
            if state.terminal:
                show(log.drain(final=True))  # read after the state: all the job wrote
                if pending:
                    print(pending)
                return 0 if state == JobState.SUCCEEDED else 1
            time.sleep(0.3)


def _progress(event: dict[str, Any], rank: int) -> str | None:
    kind = event.get("type")
    if kind == "state":
        return f"{event['state']}" + (f": {event['reason']}" if event.get("reason") else "")
    if kind == "cell" and event.get("rank") == rank and event.get("phase") == "start":
        return f"{cell_label(event['cell_index'])} started"
    if kind == "retry":
        return (
            f"retrying ({event['failure_class']}: {event['reason']}) "
            f"in {event['backoff_seconds']:.0f}s"
        )
    if kind == "checkpoint":
        return f"checkpoint at step {event.get('step')}"
    return None


def cmd_logs(args: argparse.Namespace) -> int:
    from trainhub.api import service

    if args.follow:
        return follow(args.job, args.rank)
    svc, offset = service(), 0
    while True:
        data, offset = svc.log(args.job, rank=args.rank, offset=offset)
        if not data:
            return 0
        sys.stdout.write(data.decode(errors="replace"))


def add_parsers(sub: Any) -> None:
    lg = sub.add_parser("logs", help="print a rank's log")
    lg.add_argument("job")
    lg.add_argument("--rank", type=int, default=0)
    lg.add_argument("-f", "--follow", action="store_true")
    lg.set_defaults(func=cmd_logs)
