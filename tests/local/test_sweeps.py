"""Sweeps on the local backend with real jobs: trials queue and run as ordinary jobs, never
more than max-running at once; median stopping ends the lagging trial ``stopped early``;
cancelling a sweep cancels its trials."""

from __future__ import annotations

import nbformat
import pytest

from tests.local.conftest import Trainhub, job_processes, wait_for

pytestmark = pytest.mark.slow

# Loss falls faster with a larger lr: a small lr lags every other trial at every step.
TRAIN = """\
import time
import trainhub

for step in range(1, steps + 1):
    trainhub.log(step, loss=1.0 / (1.0 + lr * step))
    time.sleep(pause)
print("done", lr)
"""


def write_notebook(workspace, name: str = "tiny.ipynb") -> str:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("lr = 0.1\nsteps = 25\npause = 0.25")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(TRAIN)]
    nbformat.write(nb, workspace / name)
    return name


def overlaps(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one moment."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = now = 0
    for _, d in edges:
        now += d
        most = max(most, now)
    return most


def test_a_sweep_stops_the_lagging_trial_and_never_runs_more_than_max(trainhub_env: Trainhub):
    th = trainhub_env
    notebook = write_notebook(th.workspace)
    created = th.json(
        "sweep", notebook, "-p", "lr=[1.0,0.5,0.01]", "--max-running", "2",
        "--early-stop", "median:loss:min:3",
    )  # fmt: skip
    sweep_id = created["id"]
    assert created["trials"] == 3 and created["submitted"] == 2  # max-running: two at first
    assert created["sweep"]["seed"] is not None and created["metric"] == "loss"

    def ended():
        view = th.json("sweep", "show", sweep_id)  # each CLI call reconciles: advances it
        return view if view["state"] == "finished" else None

    view = wait_for(ended, timeout=240, what="the sweep to finish", interval=0.5)
    trials = {t["trial"]: t for t in view["trial_views"]}
    assert [trials[n]["parameters"]["lr"] for n in range(3)] == [1.0, 0.5, 0.01]
    assert trials[0]["state"] == trials[1]["state"] == "succeeded"
    lagging = trials[2]
    assert lagging["state"] == "cancelled" and lagging["failure_class"] == "stopped_early"
    assert "worse than the median" in lagging["reason"]
    assert view["best_trial"] == 0 and trials[0]["best"] and view["stopped_early"] == 1
    assert trials[0]["value"] == pytest.approx(1.0 / 26, rel=1e-6)

    # The trial is an ordinary job: listed, filtered by sweep, described with its own verdict.
    page = th.json("jobs")
    mine = [j for j in page["jobs"] if j["sweep_id"] == sweep_id]
    assert sorted(j["id"] for j in mine) == sorted(t["job_id"] for t in trials.values())
    job = th.describe(lagging["job_id"])
    assert job["verdict"]["failure_class"] == "stopped_early" and not job["verdict"]["retriable"]
    assert job["spec"]["sweep"] == {"id": sweep_id, "trial": 2}
    assert job["spec"]["parameters"]["lr"] == 0.01
    assert "done 1.0" in th.logs(trials[0]["job_id"])
    assert "done 0.01" not in th.logs(lagging["job_id"])  # it really was stopped
    assert not job_processes(lagging["job_id"])

    # Never more than two trials active (submitted and not ended) at one moment.
    jobs = [th.describe(t["job_id"]) for t in trials.values()]
    assert overlaps([(j["created_at"], j["finished_at"]) for j in jobs]) <= 2

    shown = th.run("sweep", "show", sweep_id).stdout
    assert "stopped early" in shown and "Best:       trial 0 by loss (min)" in shown
    listed = th.run("sweeps").stdout
    assert sweep_id in listed and "finished" in listed
    assert "stopped_early" in th.run("jobs").stdout


def test_cancelling_a_sweep_cancels_its_trials(trainhub_env: Trainhub):
    th = trainhub_env
    notebook = write_notebook(th.workspace)
    created = th.json(
        "sweep", notebook, "-p", "lr=range:0.1:0.4:0.1", "-p", "pause=1.0",
        "--max-running", "2",
    )  # fmt: skip
    sweep_id = created["id"]
    assert created["trials"] == 4
    first = [t["job_id"] for t in created["trial_views"]]
    wait_for(
        lambda: all(th.describe(j)["state"] == "running" for j in first[:1]),
        timeout=120,
        what="a trial to run",
    )
    cancelled = th.json("sweep", "cancel", sweep_id)
    assert cancelled["state"] == "cancelled"
    assert not (th.home / "jobs" / ".sweeps" / sweep_id).exists()  # nothing left to submit
    for job_id in first:
        job = th.wait(job_id)
        assert job["state"] == "cancelled" and job["verdict"]["failure_class"] == "cancelled"
        assert not job_processes(job_id)
    view = th.json("sweep", "show", sweep_id)  # reconciled again: nothing more submitted
    assert view["submitted"] == 2 and view["state"] == "cancelled"
    again = th.run("sweep", "cancel", sweep_id, check=False)
    assert again.returncode == 0  # cancelling a cancelled sweep changes nothing
    missing = th.run("sweep", "show", "no-such-sweep", check=False)
    assert missing.returncode != 0 and "No sweep no-such-sweep" in missing.stderr


def finished(th: Trainhub, sweep_id: str) -> dict:
    def ended():
        view = th.json("sweep", "show", sweep_id)  # each CLI call reconciles: advances it
        return view if view["state"] == "finished" else None

    return wait_for(ended, timeout=240, what="the sweep to finish", interval=0.5)


def frozen_notebook(th: Trainhub) -> nbformat.NotebookNode:
    """frozen.ipynb, whose code imports helper.py beside it."""
    (th.workspace / "helper.py").write_text("VERSION = 'original'\n")
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("lr = 0.1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell("from helper import VERSION\nprint('ran', VERSION, lr)"),
    ]
    nbformat.write(nb, th.workspace / "frozen.ipynb")
    return nb


def test_trials_run_the_code_the_sweep_was_created_with(trainhub_env: Trainhub):
    th = trainhub_env
    nb = frozen_notebook(th)
    created = th.json("sweep", "frozen.ipynb", "-p", "lr=[0.1,0.2,0.3]", "--max-running", "1")
    sweep_id = created["id"]
    assert created["submitted"] == 1  # the later trials are compiled after what follows

    # The workspace moves on: the notebook says something else, the helper is gone.
    nb.cells[1] = nbformat.v4.new_code_cell("print('ran', 'edited', lr)")
    nbformat.write(nb, th.workspace / "frozen.ipynb")
    (th.workspace / "helper.py").unlink()

    view = finished(th, sweep_id)
    for trial in view["trial_views"]:
        lr = trial["parameters"]["lr"]
        assert trial["state"] == "succeeded", th.logs(trial["job_id"], check=False)
        assert f"ran original {lr}" in th.logs(trial["job_id"])
    assert [t["parameters"]["lr"] for t in view["trial_views"]] == [0.1, 0.2, 0.3]
    assert not (th.home / "jobs" / ".sweeps" / sweep_id).exists()  # gone with the sweep


def test_a_trial_of_a_frozen_workspace_changed_since_is_refused_saying_so(trainhub_env: Trainhub):
    th = trainhub_env
    frozen_notebook(th)
    created = th.json("sweep", "frozen.ipynb", "-p", "lr=[0.1,0.2]", "--max-running", "1")
    sweep_id = created["id"]
    planted = th.home / "jobs" / ".sweeps" / sweep_id / "source" / "helper.py"
    planted.write_text("VERSION = 'planted'\n")  # as job code on the same volume could
    view = finished(th, sweep_id)
    first, second = view["trial_views"]
    assert first["state"] == "succeeded" and "ran original 0.1" in th.logs(first["job_id"])
    assert second["job_id"] is None and "was changed after it was frozen" in second["error"]
