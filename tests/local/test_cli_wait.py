"""``trainhub wait``: returns once jobs reach the states asked for, says which job can no longer
reach them, and gives up at its timeout without touching the job."""

from __future__ import annotations

import time

import pytest

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow


@pytest.fixture
def scripts(trainhub_env: Trainhub) -> Trainhub:
    ws = trainhub_env.workspace
    (ws / "ok.py").write_text("print('done')\n")
    (ws / "fails.py").write_text("raise SystemExit('no data')\n")
    (ws / "long.py").write_text("import time\ntime.sleep(600)\n")
    return trainhub_env


def test_waits_for_every_job_to_end_and_prints_each_state(scripts: Trainhub) -> None:
    ok, fails = scripts.submit("ok.py"), scripts.submit("fails.py")
    done = scripts.run("wait", ok, fails, timeout=120)
    assert done.stdout.splitlines() == [f"{ok}: succeeded", f"{fails}: failed"]
    assert scripts.describe(ok)["state"] == "succeeded"


def test_a_job_that_ends_otherwise_is_an_error_naming_it(scripts: Trainhub) -> None:
    fails = scripts.submit("fails.py")
    waited = scripts.run("wait", fails, "--for", "succeeded", check=False, timeout=120)
    assert waited.returncode == 1
    assert waited.stderr.strip() == f"trainhub: {fails} ended failed"


def test_a_state_on_the_way_and_a_timeout_that_leaves_the_job_alone(scripts: Trainhub) -> None:
    long = scripts.submit("long.py")
    running = scripts.json("wait", long, "--for", "running", "--timeout", "60")
    assert running["id"] == long and running["state"] == "running"

    started = time.monotonic()
    waited = scripts.run("wait", long, "--timeout", "1", check=False)
    assert waited.returncode == 1 and time.monotonic() - started < 30
    assert waited.stderr.strip() == f"trainhub: still {long} running after 1 s"
    assert scripts.describe(long)["state"] == "running"

    scripts.run("cancel", long)
    assert scripts.wait(long)["state"] == "cancelled"


def test_an_unknown_job_is_an_error(scripts: Trainhub) -> None:
    waited = scripts.run("wait", "no-such-job", check=False)
    assert waited.returncode == 1 and "no-such-job" in waited.stderr
