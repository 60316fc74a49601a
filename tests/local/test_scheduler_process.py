"""The local scheduler as real processes, on the real clock: created by the CLI, it runs on
after the CLI has gone, in a session of its own; killed mid-way and started again it fires
every minute once — none twice, none lost — and each fired job runs under torchrun. The
Python API's schedule verbs, in a process of their own."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from tests.local.conftest import Trainhub, wait_for
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.records import records_for
from trainhub.schedules.model import RunState, ScheduleRecord, run_tag
from trainhub.schedules.service import KIND

pytestmark = pytest.mark.slow


def scheduler_pid(home: Path) -> int | None:
    try:
        text = (home / "scheduler" / "lock").read_text().strip()
    except FileNotFoundError:
        return None
    if not text or not psutil.pid_exists(int(text)):
        return None
    with contextlib.suppress(psutil.NoSuchProcess):  # a killed one may linger as a zombie
        if psutil.Process(int(text)).status() != psutil.STATUS_ZOMBIE:
            return int(text)
    return None


def test_the_scheduler_outlives_the_cli_and_a_killed_one_loses_and_doubles_nothing(
    trainhub_env: Trainhub,
):
    th = trainhub_env
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint('rank', os.environ['RANK'])")]
    nbformat.write(nb, th.workspace / "tiny.ipynb")
    created = th.json(
        "schedule", "create", "tiny.ipynb", "--cron", "* * * * *", "--tz", "Asia/Kolkata"
    )
    sid = created["id"]  # the CLI process has ended; the scheduler it started has not
    pid = wait_for(lambda: scheduler_pid(th.home), timeout=20, what="the scheduler")
    assert os.getsid(pid) == pid != os.getsid(0)  # a session of its own: no terminal holds it

    backend = LocalBackend(th.home)  # reads the record without ticking it (the CLI would)
    records = records_for(backend, KIND, ScheduleRecord)

    def runs() -> list:
        record = records.get(sid)
        assert record is not None
        return record.runs

    try:
        first = wait_for(lambda: runs(), timeout=75, what="the first run")[0]
        assert first.claimed_by is not None and f":{pid}:" in first.claimed_by  # the scheduler's

        # Kill it the moment it claims the next minute (before it notes the job, when caught).
        def claimed_next():
            found = [r for r in runs() if r.at is not None and r.at > first.at]
            return found[0] if found else None

        deadline = time.time() + 75
        while time.time() < deadline and not claimed_next():
            time.sleep(0.005)
        os.kill(pid, signal.SIGKILL)
        caught = claimed_next()
        assert caught is not None, "the scheduler fired nothing in the second minute"

        th.run("scheduler", "--detach")
        # The lock file names the killed one until the new one writes its own pid.
        again = wait_for(
            lambda: (p := scheduler_pid(th.home)) != pid and p, timeout=20, what="the new one"
        )
        assert th.run("scheduler", timeout=30).returncode == 0  # a second one leaves at once
        assert scheduler_pid(th.home) == again
        settled = wait_for(
            lambda: (
                any(r.at > caught.at for r in runs())
                and all(r.state == RunState.SUBMITTED for r in runs())
                and runs()
            ),
            timeout=75,
            what="a run after the restart, and every run noted with its job",
        )
    finally:
        for p in (scheduler_pid(th.home),):
            if p is not None:
                os.kill(p, signal.SIGKILL)

    times = [r.at for r in settled]
    assert times == sorted(set(times)), times  # none twice
    assert all(b - a == 60 for a, b in itertools.pairwise(times)), times  # none lost
    for run in settled:
        found = backend.list_jobs(JobFilter(search=run_tag(sid, run)), limit=10)
        assert [j.id for j in found] == [run.job_id], (run, [j.id for j in found])
        assert th.wait(run.job_id)["state"] == "succeeded"
        assert "rank 0" in th.logs(run.job_id)
    for run in (settled[0], settled[-1]):  # those no restart delayed fired on time
        assert run.claimed_at - run.at < 5  # (the benchmark measures it closely)


API_SCRIPT = """
import json, trainhub
s = trainhub.schedule("tiny.ipynb", cron="0 2 * * *", timezone="Europe/Berlin",
                      concurrency="replace", parameters={"word": "api"})
view = s.pause()
assert trainhub.get_schedule(s.id).describe().paused
job = s.run_now()
state = job.wait(timeout=120)
history = s.history()
listed = [x.id for x in trainhub.list_schedules()]
print(json.dumps({"id": s.id, "paused": view.paused, "listed": listed,
                  "state": state.value, "job": job.id, "run_job": history[0].job_id,
                  "concurrency": s.describe().concurrency}))
s.delete()
print(json.dumps([x.id for x in trainhub.list_schedules()]))
"""


def test_the_python_api_creates_runs_and_deletes_a_schedule(trainhub_env: Trainhub):
    th = trainhub_env
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("word = 'default'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print('said', word)")]
    nbformat.write(nb, th.workspace / "tiny.ipynb")
    out = None
    try:
        out = subprocess.run(
            [sys.executable, "-c", API_SCRIPT],
            cwd=th.workspace, env=th.env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        failed = out is None or out.returncode != 0
        if failed and (pid := scheduler_pid(th.home)) is not None:
            os.kill(pid, signal.SIGKILL)  # the script never deleted its schedule
    assert out.returncode == 0, out.stderr
    first, after = (json.loads(line) for line in out.stdout.splitlines()[-2:])
    assert first["paused"] and first["listed"] == [first["id"]]
    assert first["state"] == "succeeded" and first["run_job"] == first["job"]
    assert first["concurrency"] == "replace" and after == []
    assert "said api" in th.logs(first["job"])
    # The schedule's change started the scheduler; with none left it has gone.
    wait_for(lambda: scheduler_pid(th.home) is None, timeout=20, what="the scheduler to leave")
