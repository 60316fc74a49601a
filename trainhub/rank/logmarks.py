"""The lines trainhub itself writes into a rank log, and how a reader tells them from the job's.

A rank log stays plain text that ``trainhub logs``, ``grep`` and the tests read as before; only
the beginning of a line says who wrote it:

- ``[trainhub] <message>``: the runner's own message (which rank starts, an image saved, how
  the job ended). Every line of a message carries the prefix, so a reader can leave them out.
- ``[trainhub] cell <n> started at <UTC ISO 8601 time, ms>``: written as a notebook cell starts;
  what follows, up to the next such line, is that cell's output (the Logs tab draws it as a
  separator "cell 3 · 12:04:31"). ``<n>`` is the cell's number in the notebook, from 1.
- ``[trainhub: <notice>]``: output that was cut (:mod:`trainhub.rank.logcap`); shown always.

The Logs tab reads the same forms (labextension/src/loglines.ts). Standard library only.
"""

from __future__ import annotations

import re
import time

PREFIX = "[trainhub] "
_CELL = re.compile(r"^\[trainhub\] cell (\d+) started at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)$")


def internal(message: str) -> str:
    """``message`` as trainhub's own lines (newline-terminated), each line marked."""
    return "".join(f"{PREFIX}{line}\n" for line in (message.splitlines() or [""]))


def utc_iso(epoch: float) -> str:
    whole = int(epoch)
    millis = min(int((epoch - whole) * 1000), 999)  # truncated, as clocks print
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def cell_start(cell_index: int, epoch: float) -> str:
    """The marker line written as the notebook's cell ``cell_index`` (from 0) starts."""
    return f"{PREFIX}cell {cell_index + 1} started at {utc_iso(epoch)}\n"


def parse_cell_start(line: str) -> tuple[int, str] | None:
    """(cell number from 1, UTC time) of a marker line, or None for any other line."""
    m = _CELL.match(line.rstrip("\n"))
    return (int(m.group(1)), m.group(2)) if m else None
