"""Every way a notebook job can end, told truthfully: real jobs through the local backend
(torchrun for two ranks), each asserting the verdict, the cell, the log and the notebook."""

from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub

BEFORE = "print('before the end')"


def submit(th: Trainhub, cells: list[str], *args: str) -> tuple[dict, str, dict]:
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), th.workspace / "e.ipynb")
    job_id = th.submit("e.ipynb", "--retry-infrastructure", "2", "--retry-backoff", "0", *args)
    job = th.wait(job_id)
    notebook = json.loads((th.job_dir(job_id) / "notebook.ipynb").read_text())
    return job, th.logs(job_id), notebook


def test_os_exit_0_before_the_last_cell_is_not_a_success(trainhub_env: Trainhub) -> None:
    job, log, notebook = submit(
        trainhub_env, [BEFORE, "import os\nprint('last words', end='')\nos._exit(0)", "print(1)"]
    )
    verdict = job["verdict"]
    assert job["state"] == "failed" and verdict["failure_class"] == "code"
    assert (verdict["cell_index"], verdict["line"]) == (1, 3)
    assert "os._exit(0) before the notebook's last cell" in verdict["reason"]
    assert "before the end" in log and "last words\n[trainhub] failed in cell 2" in log
    assert [c["metadata"]["trainhub"]["status"] for c in notebook["cells"]] == [
        "ok",
        "error",
        "not run",
    ]
    assert notebook["cells"][1]["outputs"][0]["text"] == "last words"


def test_a_signal_the_code_sends_itself_is_its_failure_not_a_retry(trainhub_env: Trainhub):
    job, log, notebook = submit(
        trainhub_env,
        [BEFORE, "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getpid(), signal.SIGTERM)"],
    )
    verdict = job["verdict"]
    assert job["state"] == "failed" and job["retries"] in ({}, None), job
    assert (verdict["failure_class"], verdict["cell_index"], verdict["signal"]) == (
        "code",
        1,
        "SIGTERM",
    )
    assert "ended by SIGTERM in cell 2, a signal trainhub did not send" in verdict["reason"]
    assert "before the end" in log
    assert notebook["cells"][0]["outputs"][0]["text"] == "before the end\n"


def test_a_crash_in_one_rank_names_its_cell_and_the_log_has_its_stack(trainhub_env: Trainhub):
    crash = "import ctypes, os, time\ntime.sleep(0.5)\nif os.environ['RANK'] == '1':\n"
    crash += "    ctypes.string_at(0)\ntime.sleep(60)"
    nbformat.write(
        new_notebook(cells=[new_code_cell(BEFORE), new_code_cell(crash)]),
        trainhub_env.workspace / "crash.ipynb",
    )
    job_id = trainhub_env.submit("crash.ipynb", "--nproc", "2", "--retry-backoff", "0")
    job = trainhub_env.wait(job_id)
    verdict = job["verdict"]
    assert (verdict["failure_class"], verdict["rank"], verdict["cell_index"]) == ("code", 1, 1)
    assert verdict["signal"] == "SIGSEGV" and not verdict["retriable"]
    assert "crashed with SIGSEGV in cell 2" in verdict["reason"]
    assert 'File "<trainhub-cell-1>", line 4' in trainhub_env.logs(job_id, rank=1)


def test_the_time_limit_names_the_running_cell_and_its_time(trainhub_env: Trainhub) -> None:
    job, log, notebook = submit(
        trainhub_env, [BEFORE, "import time\ntime.sleep(120)"], "--max-runtime", "4s"
    )
    verdict = job["verdict"]
    assert job["state"] == "cancelled" and verdict["cell_index"] == 1
    assert verdict["reason"].startswith("ran longer than its max runtime (0:00:04); cell 2 had")
    assert "before the end" in log
    assert notebook["cells"][0]["outputs"][0]["text"] == "before the end\n"
