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


def test_a_tqdm_bar_is_a_few_redraws_and_its_final_state_in_the_stored_log(tmp_path):
    bar = (
        "from tqdm import tqdm\n"
        "for _ in tqdm(range(5000), mininterval=0, miniters=1, ascii=True):\n"
        "    pass\n"
        "print('after the bar')"
    )
    run = run_rank(cells_job(tmp_path, [bar]))
    assert run.proc.returncode == 0, run.log
    assert run.log.count("\r") < 10, run.log  # 5000 redraws went into the pipe
    redraws = [line for line in run.log.splitlines() if "it/s]" in line or "?it/s" in line]
    assert 2 <= len(redraws) < 10 and redraws[0].startswith("  0%|")
    assert redraws[-1].startswith("100%|##########| 5000/5000")
    # The bar's last state ends its line: the next output and trainhub's lines start their own.
    assert run.log.split("\n").count("after the bar") == 1
    assert f"5000/5000 [{redraws[-1].split(' [', 1)[1]}\nafter the bar\n" in run.log
