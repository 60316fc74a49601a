"""Cron expressions in an IANA time zone: checking them, and the times they name.

Parsing and stepping are cronsim's (maintained, no dependencies, the evaluator behind
Healthchecks.io), which follows Debian cron across daylight-saving changes, and so does
trainhub:

- a fixed time of day that the spring change skips (``30 2 * * *`` in Europe/Berlin on the
  last Sunday of March) fires once, at the first minute after the jump (03:00);
- a fixed time of day that the autumn change repeats fires once, at its first occurrence;
- an expression whose minute or hour field starts with ``*`` (``0 * * * *``, ``*/15 * * * *``)
  follows real time: every hour of the repeated hour fires, none of the skipped one exists.

Times in and out are POSIX seconds (absolute), so a stored time never depends on the zone.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

MAX_CRON_CHARS = 200


def zone(name: str) -> ZoneInfo:
    """The zone ``name`` (``Europe/Berlin``, ``UTC``); ValueError saying why it is none."""
    if not name or len(name) > 64 or name.startswith("/") or ".." in name:
        raise ValueError(f"{name[:64]!r} is not an IANA time zone such as Europe/Berlin or UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"{name!r} is not an IANA time zone such as Europe/Berlin or UTC"
        ) from None


def check(expr: str) -> str:
    """``expr`` when it is a five-field cron expression; ValueError saying what is wrong."""
    if len(expr) > MAX_CRON_CHARS:
        raise ValueError(f"longer than {MAX_CRON_CHARS} characters")
    if len(expr.split()) != 5:
        # cronsim takes seconds as a sixth field; a schedule's resolution is the minute.
        raise ValueError(
            f"{expr!r} has {len(expr.split())} fields; a cron expression has five: "
            "minute hour day-of-month month day-of-week, such as '0 2 * * *'"
        )
    try:
        next(CronSim(expr, datetime(2000, 1, 1, tzinfo=ZoneInfo("UTC"))))
    except CronSimError as e:
        raise ValueError(f"{expr!r}: {e}") from None
    except StopIteration:
        raise ValueError(f"{expr!r} names no time in the next 50 years") from None
    return expr


def next_after(expr: str, tz: str, after: float) -> float | None:
    """The first time ``expr`` names in zone ``tz`` strictly after ``after``; None when it
    names none in the next 50 years."""
    start = datetime.fromtimestamp(after, zone(tz))  # fold set right inside a repeated hour
    try:
        for t in CronSim(expr, start):
            # Stepping in wall time can land on an earlier instant when it starts in the
            # second pass of a repeated hour; only later instants count.
            if t.timestamp() > after:
                return t.timestamp()
    except StopIteration:
        pass
    return None


def last_at_or_before(expr: str, tz: str, at: float) -> float | None:
    """The latest time ``expr`` names in zone ``tz`` at or before ``at``."""
    start = datetime.fromtimestamp(at + 1, zone(tz))  # reverse steps start strictly before
    try:
        for t in CronSim(expr, start, reverse=True):
            if t.timestamp() <= at:
                return t.timestamp()
    except StopIteration:
        pass
    return None


def describe(expr: str) -> str:
    """The expression in words ("At 02:00"), as cronsim says it."""
    try:
        return CronSim(expr, datetime(2000, 1, 1, tzinfo=ZoneInfo("UTC"))).explain()
    except (CronSimError, ValueError, KeyError):
        return expr
