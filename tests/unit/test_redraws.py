"""A progress bar's redraws thinned to one per interval, and its last state always kept."""

from __future__ import annotations

from collections import deque

from trainhub.rank.logcap import LogCap, line_marker
from trainhub.rank.redraws import RedrawThinner, latest_redraw
from trainhub.widgets import last_lines


def bar(p: int) -> bytes:
    return b"%3d%%|%-10s|" % (p, b"#" * (p // 10))


def tqdm_output(steps: int) -> bytes:
    """What tqdm writes: each redraw starts with "\\r", the bar ends with "\\n"."""
    return b"".join(b"\r" + bar(p) for p in range(steps + 1)) + b"\n"


def test_a_bar_keeps_its_first_redraw_one_per_interval_and_its_final_state():
    thin = RedrawThinner(interval=5)
    out = b""
    for p in range(101):  # one redraw every 0.1 s: ten seconds of bar
        out += thin.feed(b"\r" + bar(p), now=p / 10)
        out += thin.due(now=p / 10)
    out += thin.feed(b"\n", now=10.1)
    # Each kept redraw still ends in "\r": a terminal and the Logs tab draw one updating line.
    assert out == b"\r" + b"\r".join([bar(0), bar(50), bar(100)]) + b"\n"


def test_a_held_redraw_is_written_when_its_interval_is_up_without_new_output():
    thin = RedrawThinner(interval=5)
    assert thin.feed(b"\r" + bar(1) + b"\r" + bar(2), now=0) == b"\r" + bar(1) + b"\r"
    assert thin.feed(b"\r" + bar(3), now=1) == b""
    assert thin.due(now=4.9) == b""
    assert thin.due(now=5.0) == bar(2) + b"\r"  # bar(3) has no end yet: it may still grow
    assert thin.feed(b"\r" + bar(4), now=6) + thin.due(now=10) == bar(3) + b"\r"


def test_any_chunking_gives_the_same_lines_and_plain_output_passes_at_once():
    text = b"epoch 1\n" + tqdm_output(300) + b"done\r\n" + b"no newline yet"
    whole = RedrawThinner(interval=5).feed(text, now=0)
    assert whole == b"epoch 1\n\r" + bar(0) + b"\r" + bar(300) + b"\ndone\r\nno newline yet"
    for size in (1, 2, 7, 64):
        thin = RedrawThinner(interval=5)
        pieces = [thin.feed(text[i : i + size], now=0) for i in range(0, len(text), size)]
        assert b"".join(pieces) == whole, size
        assert pieces[-1] != b""  # "no newline yet" is not held: outside a bar nothing waits


def test_the_last_state_survives_an_abrupt_end_and_a_bar_ended_by_cr_then_lf():
    thin = RedrawThinner(interval=5)
    out = thin.feed(b"\r" + bar(1) + b"\r" + bar(7) + b"\r", now=0) + thin.flush()
    assert out == b"\r" + bar(1) + b"\r" + bar(7) + b"\n"
    thin = RedrawThinner(interval=5)
    out = thin.feed(b"\r" + bar(1) + b"\r" + bar(7) + b"\r", now=0) + thin.feed(b"\n", now=1)
    assert out == b"\r" + bar(1) + b"\r" + bar(7) + b"\r\n"


def test_a_redraw_longer_than_the_hold_goes_through():
    thin = RedrawThinner(interval=5, max_hold=10)
    assert thin.feed(b"\rshort\r" + b"y" * 20, now=0) == b"\rshort\r" + b"y" * 20
    assert thin.feed(b"\n", now=2) == b"\n"


def test_the_log_cap_thins_before_it_cuts_and_marks_stay_on_their_own_line():
    cap = LogCap(line_bytes=8, file_bytes=1 << 20, redraw_seconds=5)
    out = cap.feed(tqdm_output(100), now=0)
    assert out.startswith(b"\r" + bar(0)[:8]) and out.count(b"line cut at 8 bytes") == 2
    assert out.endswith(bar(100)[:8] + line_marker(8))  # the first and the last redraw
    cap = LogCap(line_bytes=100, file_bytes=1 << 20, redraw_seconds=5)
    out = cap.feed(b"\r" + bar(1) + b"\r" + bar(2) + b"[trainhub] finished\n", now=0)
    assert out == b"\r" + bar(1) + b"\r" + bar(2) + b"\n[trainhub] finished\n"
    assert cap.feed(b"\r" + bar(3), now=1) + cap.flush() == b"\r" + bar(3) + b"\n"


def test_the_notebook_widget_shows_a_bar_as_its_latest_redraw():
    assert latest_redraw("\r 10%|#\r 50%|#####\r100%|##########") == "100%|##########"
    assert latest_redraw("\r 10%|#\r 50%|#####\r") == " 50%|#####\r"
    assert latest_redraw("plain") == "plain" and latest_redraw("crlf\r") == "crlf\r"
    tail: deque[str] = deque(maxlen=10)
    pending = last_lines(tail, "", "epoch 1\n\r 10%|#\r 50%|#####")
    assert pending == " 50%|#####"
    assert last_lines(tail, pending, "\r100%|##\ndone\n") == ""
    assert list(tail) == ["epoch 1", "100%|##", "done"]
