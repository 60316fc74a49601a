"""A real rank's log: each notebook cell's output follows a marker line naming the cell and
when it started; trainhub's own lines carry their prefix (trainhub.rank.logmarks)."""

from __future__ import annotations

import datetime as dt
import time

from tests.local.test_runner import cells_job, run_rank
from trainhub.rank.logmarks import PREFIX, parse_cell_start


def test_each_cell_output_follows_its_marker(tmp_path):
    before = time.time()
    run = run_rank(cells_job(tmp_path, ["print('one')", "x = 1", "print('three\\nlines')"]))
    after = time.time()
    assert run.proc.returncode == 0, run.log
    lines = run.log.splitlines()
    markers = [(i, parse_cell_start(line)) for i, line in enumerate(lines)]
    markers = [(i, m) for i, m in markers if m]
    assert [m[0] for _, m in markers] == [1, 2, 3]
    for _, (_, when) in markers:
        at = dt.datetime.strptime(when, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        assert before - 1 <= at.timestamp() <= after
    (one, _), (two, _), (three, _) = markers
    assert lines[one + 1 : two] == ["one"]
    assert lines[three + 1 : three + 3] == ["three", "lines"]
    # Everything else trainhub wrote is marked as its own.
    ours = [line for line in lines if line.startswith(PREFIX)]
    assert ours[0].startswith("[trainhub] rank 0/1, attempt 0: running notebook")
    assert ours[-1] == "[trainhub] finished"
    assert set(lines) - set(ours) == {"one", "three", "lines"}
