"""The lines trainhub itself writes into a rank log, and how a reader tells them from the job's.

A rank log stays plain text that ``trainhub logs``, ``grep`` and the tests read as before; only
the beginning of a line says who wrote it:

- ``[trainhub] <message>``: the runner's own message (which rank starts, an image saved, how
  the job ended). Every line of a message carries the prefix, so a reader can leave them out.
- ``[trainhub] cell <n> started at <UTC ISO 8601 time, ms>``: written as a notebook cell starts;
  what follows, up to the next such line, is that cell's output (the Logs tab draws it as a
  separator "cell 3 · 12:04:31"). ``<n>`` is the cell's number in the notebook, from 1.
- ``[trainhub: <notice>]``: output that was cut (:mod:`trainhub.rank.logcap`); shown always.

trainhub's lines (:func:`say`, :func:`to_log`) always start a line of their own: the rank's
``sys.stdout`` and ``sys.stderr`` are :class:`LogStream`, which remembers whether what Python
last wrote ended a line, and :func:`own_line` puts a newline before a marker when it did not
(``print(x, end="")``, a progress bar's ``\r``). What C code or a child process writes straight
to the descriptors Python does not see; the rank's copier does (:mod:`trainhub.rank.logcap`),
and puts a newline before any of trainhub's lines (:data:`OWN_LINE`) that would continue one.

The Logs tab reads the same forms (labextension/src/loglines.ts). Standard library only.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time

PREFIX = "[trainhub] "
_CELL = re.compile(r"^\[trainhub\] cell (\d+) started at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)$")
# The beginning of one of trainhub's lines (a cell's start marker, "finished", ...), as bytes
# anywhere in a rank's output (logcap).
OWN_LINE = re.compile(re.escape(PREFIX.encode()))


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


class LogStream(io.TextIOWrapper):
    """A line-buffered text stream onto one of the rank log's descriptors."""

    ends_line = True  # one value for stdout and stderr: both descriptors are one pipe

    def __init__(self, fd: int, encoding: str):
        raw = io.FileIO(fd, "w", closefd=False)
        super().__init__(
            io.BufferedWriter(raw),
            encoding=encoding,
            errors="backslashreplace",
            line_buffering=True,
        )

    def write(self, text: str) -> int:
        if text:
            LogStream.ends_line = text[-1] == "\n"
        return super().write(text)


def own_line(marker: str) -> str:
    """``marker`` (trainhub's lines), starting a line of its own in the log."""
    return marker if LogStream.ends_line else "\n" + marker


def say(message: str) -> None:
    """trainhub's own message: in the log, never in a cell's output in the notebook."""
    to_log(internal(message))


def to_log(lines: str) -> None:
    """trainhub's ``lines``, on lines of their own, after what the cell printed so far."""
    # From the SIGTERM handler the cell may be inside a write to the same stream: the message
    # is then lost ("reentrant call"), never the stop callbacks after it.
    with contextlib.suppress(RuntimeError):
        sys.stderr.flush()
        sys.stdout.flush()
        print(own_line(lines), end="", file=sys.__stdout__, flush=True)
