"""``trainhub logs`` on a real two-rank job: characters split across flushes come out whole,
and a rank the job does not have is an error naming those it has."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

TEXT = "é 日本 \U0001f600 ok\nnext é line\n日本\U0001f600 end\n"

# Flushes one byte at a time, so every multi-byte character reaches the log split.
SCRIPT = textwrap.dedent(
    f"""
    import os, sys, time
    if os.environ.get("RANK") == "0":
        for byte in {TEXT.encode()!r}:
            sys.stdout.buffer.write(bytes([byte]))
            sys.stdout.buffer.flush()
            time.sleep(0.005)
    """
)


def test_logs_of_a_two_rank_job(trainhub_env: Trainhub) -> None:
    (trainhub_env.workspace / "utf8.py").write_text(SCRIPT)
    job_id = trainhub_env.submit("utf8.py", "--nproc", "2")
    followed = trainhub_env.run("logs", job_id, "--follow", check=False)  # while it runs
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    assert followed.returncode == 0, followed.stderr
    assert TEXT in followed.stdout and "\ufffd" not in followed.stdout
    assert TEXT in trainhub_env.logs(job_id)
    rank_1 = trainhub_env.logs(job_id, rank=1)
    assert "rank 1/2" in rank_1 and "日本" not in rank_1

    missing = trainhub_env.run("logs", job_id, "--rank", "5", check=False)
    assert missing.returncode == 1 and missing.stdout == ""
    assert f"job {job_id} has no rank 5; its ranks are 0 and 1." in missing.stderr.lower()


def test_logs_in_a_pipe_that_closes_early_end_without_a_traceback(trainhub_env: Trainhub):
    (trainhub_env.workspace / "many.py").write_text(
        "for i in range(50000):\n    print('line', i)\n"
    )
    job_id = trainhub_env.submit("many.py")
    assert trainhub_env.wait(job_id)["state"] == "succeeded"
    piped = subprocess.run(
        f"{sys.executable} -m trainhub.cli logs {job_id} --follow | head -n 2",
        shell=True,
        cwd=trainhub_env.workspace,
        env=trainhub_env.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.stdout.count("\n") == 2 and piped.stderr == ""
