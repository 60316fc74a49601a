"""A progress bar's redraws, thinned on their way into a rank log.

tqdm and its kind redraw one line by writing ``"\\r" + bar`` many times a second, and end it
with ``"\\n"``. Kept whole, an epoch's bar is thousands of log lines. :class:`RedrawThinner`
keeps the log readable and the stream honest: of the redraws of one line it writes the first
at once, then at most one every ``interval`` seconds (the latest one when the interval is up),
and always the line's final state. What it writes keeps the ``"\\r"`` that ended each kept
redraw, so the log stays the rank's own output, only with fewer redraws: a terminal
(``trainhub logs``) and the Logs tab both draw it as one updating line.

Pure (the time comes in as an argument), standard library only: it runs in every rank's copier
(:mod:`trainhub.rank.logcap`).
"""

from __future__ import annotations

import re

_EOL = re.compile(rb"\r\n|\r|\n")


def latest_redraw(line: str) -> str:
    """A line of the log as a terminal leaves it after its redraws: from its last ``"\\r"`` on
    (one that ends the line stays: the next text redraws over it). The Logs tab's
    ``latestRedraw`` (labextension/src/loglines.ts) is the same rule."""
    cr = line.rfind("\r", 0, len(line) - 1)
    return line[cr + 1 :] if cr >= 0 else line


class RedrawThinner:
    """What to write of each chunk of output, and when a held redraw falls due.

    A redraw is a piece of a line ended by a lone ``"\\r"``. Output outside a redrawn line goes
    through as it comes, in the same call; inside one, a piece without its end yet is held
    (up to ``max_hold`` bytes, then it goes through) so it is never written half.
    """

    def __init__(self, interval: float, max_hold: int = 64 * 1024):
        self.interval = interval
        self.max_hold = max_hold
        self._held: bytes | None = None  # the latest whole redraw not written yet (no "\r")
        self._tail = b""  # the redrawn line's next piece, its end not seen yet
        self._redrawing = False  # the last end was a lone "\r"
        self._passing = False  # the current piece's start is written: its rest must follow
        self._last_write = float("-inf")  # when a redraw was last written

    def feed(self, data: bytes, now: float) -> bytes:
        data, self._tail = self._tail + data, b""
        out: list[bytes] = []
        pos = 0
        while pos < len(data):
            m = _EOL.search(data, pos)
            if m is None or (m.group() == b"\r" and m.end() == len(data) and not self._passing):
                # No end yet, or a "\r" that a "\n" in the next chunk may turn into "\r\n".
                self._open_piece(data[pos:], out)
                break
            body, end = data[pos : m.start()], m.group()
            pos = m.end()
            if end == b"\r":
                self._redraw(body, now, out)
            else:
                self._line_end(body, end, out)
        return b"".join(out)

    def due(self, now: float) -> bytes:
        """The held redraw, once its interval is up (the copier asks whenever it wakes)."""
        if self._held is None or now - self._last_write < self.interval:
            return b""
        out, self._held, self._last_write = self._held + b"\r", None, now
        return out

    def flush(self) -> bytes:
        """What is held when the output ends: the line's last state, ended."""
        last = self._tail.removesuffix(b"\r") or self._held
        self._held, self._tail, self._redrawing, self._passing = None, b"", False, False
        return last + b"\n" if last else b""

    def _open_piece(self, piece: bytes, out: list[bytes]) -> None:
        if (self._redrawing or piece.endswith(b"\r")) and not self._passing:
            if len(piece) <= self.max_hold:
                self._tail = piece
                return
            self._held = None  # a "redraw" longer than any bar: plain output after all
        self._passing = True
        out.append(piece)

    def _redraw(self, body: bytes, now: float, out: list[bytes]) -> None:
        self._redrawing = True
        if self._passing:  # its start is already written
            self._passing, self._last_write = False, now
            out.append(body + b"\r")
        elif body:
            self._held = body
            out.append(self.due(now))
        elif self._held is None:
            out.append(b"\r")  # the "\r" a bar starts each redraw with

    def _line_end(self, body: bytes, end: bytes, out: list[bytes]) -> None:
        if not self._passing:
            body = body or self._held or b""  # "bar\r" then "\n": the bar is the last state
        out.append(body + end)
        self._held, self._redrawing, self._passing = None, False, False
        self._last_write = float("-inf")  # the next line's bar shows its first redraw at once
