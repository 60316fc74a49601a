"""A rank's log stays within the documented limits, with real torchrun processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import nbformat
import pytest

from tests.local.conftest import Trainhub
from trainhub.rank.logcap import file_marker, line_marker

pytestmark = pytest.mark.slow

FILE_CAP = 64 * 1024
LINE_CAP = 2000


def test_a_runaway_rank_log_is_capped_and_the_job_still_succeeds(trainhub_env: Trainhub):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            textwrap.dedent(
                """
                import os, subprocess, sys
                print("a long line:", "z" * 50_000)
                print("after the long line")
                for i in range(20_000):
                    print(f"step {i} loss 0.25 " + "x" * 40)
                subprocess.run(["echo", "a child process prints too"])
                """
            ).strip()
        ),
        nbformat.v4.new_code_cell("print('the last cell ran')"),
    ]
    nbformat.write(nb, trainhub_env.workspace / "chatty.ipynb")
    trainhub_env.env.update(
        TRAINHUB_LIMIT_LOG_FILE_BYTES=str(FILE_CAP), TRAINHUB_LIMIT_LOG_LINE_BYTES=str(LINE_CAP)
    )
    job_id = trainhub_env.submit("chatty.ipynb", "--nproc", "2")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    events = (trainhub_env.job_dir(job_id) / "events.jsonl").read_text().splitlines()
    ends = {
        (e["rank"], e["cell_index"])
        for e in map(json.loads, events)
        if e["type"] == "cell" and e["phase"] == "end"
    }
    assert {(0, 1), (1, 1)} <= ends  # the cell after the flood ran on both ranks

    for rank in (0, 1):
        log = (trainhub_env.job_dir(job_id) / "logs" / f"rank-{rank}.log").read_bytes()
        assert len(log) <= FILE_CAP, (rank, len(log))
        assert log.endswith(file_marker(FILE_CAP)), log[-300:]
        assert log.count(b"log truncated") == 1
        cut = log.index(b"a long line:")
        long_line = log[cut : log.index(b"\n", cut) + 1]
        assert long_line.endswith(line_marker(LINE_CAP)) and len(long_line) < LINE_CAP + 100
        assert b"\nafter the long line\nstep 0 loss" in log
        assert max(len(line) for line in log.splitlines()) <= LINE_CAP + len(line_marker(LINE_CAP))
    assert "log truncated at 64 KiB" in trainhub_env.logs(job_id)


def _capped_process(tmp_path, code: str) -> tuple[int, bytes]:
    log = tmp_path / "rank-0.log"
    script = (
        "import sys\nfrom pathlib import Path\nfrom trainhub.rank.logcap import capped_output\n"
        f"capped_output(Path({str(log)!r}))\n" + code
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.stdout == proc.stderr == b""
    return proc.returncode, log.read_bytes()


def test_the_process_ends_as_the_rank_did_after_its_last_words(tmp_path):
    code, log = _capped_process(
        tmp_path,
        "print('last words', flush=True)\nprint('to stderr', file=sys.stderr)\nsys.exit(7)",
    )
    assert code == 7 and log == b"last words\nto stderr\n"
    code, log = _capped_process(
        tmp_path,
        "import os, signal\nprint('killed next', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)",
    )
    assert code == -signal.SIGKILL and log.endswith(b"killed next\n")
