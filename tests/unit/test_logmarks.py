"""The forms of trainhub's own lines in a rank log (trainhub.rank.logmarks)."""

from __future__ import annotations

import calendar

from trainhub.rank.logmarks import cell_start, internal, parse_cell_start, utc_iso


def test_every_line_of_a_message_is_marked():
    assert internal("finished") == "[trainhub] finished\n"
    assert internal("failed in cell 3: ValueError: a\nb") == (
        "[trainhub] failed in cell 3: ValueError: a\n[trainhub] b\n"
    )
    assert internal("") == "[trainhub] \n"


def test_cell_marker_names_the_cell_from_one_and_the_utc_time_to_the_millisecond():
    epoch = calendar.timegm((2026, 12, 2, 12, 4, 31)) + 0.25
    line = cell_start(2, epoch)
    assert line == "[trainhub] cell 3 started at 2026-12-02T12:04:31.250Z\n"
    assert parse_cell_start(line) == (3, "2026-12-02T12:04:31.250Z")
    assert utc_iso(calendar.timegm((2026, 1, 1, 0, 0, 0)) + 0.9999) == "2026-01-01T00:00:00.999Z"


def test_other_lines_are_not_cell_markers():
    for line in [
        "cell 3 started at 2026-12-02T12:04:31.250Z",  # the job's own print
        "[trainhub] cell 3 started",
        "[trainhub] rank 0/1, attempt 0: running notebook nb.ipynb",
        "x[trainhub] cell 3 started at 2026-12-02T12:04:31.250Z",
    ]:
        assert parse_cell_start(line) is None, line
