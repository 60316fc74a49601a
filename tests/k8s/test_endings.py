"""Every ending told on a real control plane as the local backend tells it (kwok plays the
pods, told how to end; the ranks' evidence is written into the job directory as the runner
and the pod's first process write it): a crash in a cell named from the kept torchrun
summary and never retried, a complete Job whose rank left a cell without a word failed, the
time limit (the Job controller's deadline) and a cancel each a stop naming the cell, and the
executed notebook closed with the verdict. The same with real pods: test_real_endings.py."""

from __future__ import annotations

import json
from typing import Any

from tests.k8s import test_retries
from tests.k8s.test_backend import Team, wait_for
from tests.unit.test_k8s_endings import summary
from trainhub.jobs.directory import JobDir, agent_log_name
from trainhub.jobs.states import FailureClass, JobState

# The fixture: a team on the test cluster (as the retry tests have it).
team = test_retries.team


def submit(team: Team, **fields: Any) -> str:
    spec = {
        "name": "endings",
        "source": {"path": "train.py"},
        "team": team.ns,
        "resources": {"workers": 1, "gpus_per_worker": 1},
        "retry": {"infrastructure": 2, "backoff_seconds": 0},
        **fields,
    }
    return team.service.submit(spec, user="ada").id


def in_cell_2(team: Team, job_id: str) -> JobDir:
    """Rank 0 of attempt 0 inside cell 2, its executed notebook as it writes it meanwhile."""
    jobdir = JobDir(team.backend.jobs_root / job_id)
    jobdir.emit("cell", rank=0, attempt=0, cell_index=0, phase="start")
    jobdir.emit("cell", rank=0, attempt=0, cell_index=0, phase="end", ok=True)
    jobdir.emit("cell", rank=0, attempt=0, cell_index=1, phase="start")
    cells = [
        {"cell_type": "code", "source": "", "metadata": {"trainhub": {"status": s}}}
        for s in ("ok", "running", "not run")
    ]
    meta = {"trainhub": {"rank": 0, "attempt": 0, "state": "running"}}
    (jobdir.root / "notebook.ipynb").write_text(json.dumps({"cells": cells, "metadata": meta}))
    return jobdir


def notebook(jobdir: JobDir) -> tuple[dict[str, Any], list[str]]:
    doc = json.loads((jobdir.root / "notebook.ipynb").read_text())
    return doc["metadata"]["trainhub"], [c["metadata"]["trainhub"]["status"] for c in doc["cells"]]


def ended(team: Team, job_id: str, timeout: float = 90) -> Any:
    """Once reconcile has recorded the job's end."""

    def recorded() -> Any:
        team.backend.reconcile()
        described = team.service.describe(job_id, user="ada")
        states = [e["state"] for e in team.events(job_id) if e["type"] == "state"]
        return described if described.state.terminal and states[-1] == described.state else None

    return wait_for(f"{job_id} ended", recorded, timeout)


def test_a_crash_in_a_cell_is_its_code_failure_and_closes_the_notebook(team: Team) -> None:
    job_id = submit(team)
    team.wait_state(job_id, JobState.RUNNING)
    jobdir = in_cell_2(team, job_id)
    (jobdir.root / agent_log_name(0, 0)).write_text(
        "[trainhub] pod x: torchrun\n" + summary(0, -11)
    )
    team.end_pods(job_id, result="Failed", exit_code="1")
    done = ended(team, job_id)
    assert done.state == JobState.FAILED, done.verdict
    assert (done.verdict.failure_class, done.verdict.cell_index) == (FailureClass.CODE, 1)
    assert done.verdict.reason.startswith("rank 0 crashed with SIGSEGV in cell 2")
    assert done.attempt == 0 and not [e for e in team.events(job_id) if e["type"] == "retry"]
    meta, statuses = notebook(jobdir)
    assert (meta["state"], meta["ended"], statuses) == (
        "failed",
        done.verdict.reason,
        ["ok", "error", "not run"],
    )


def test_a_complete_job_whose_rank_left_a_cell_without_a_word_failed(team: Team) -> None:
    job_id = submit(team)
    team.wait_state(job_id, JobState.RUNNING)
    in_cell_2(team, job_id)
    team.end_pods(job_id, result="Succeeded")
    done = ended(team, job_id)
    assert done.state == JobState.FAILED and done.verdict.failure_class == FailureClass.CODE
    assert "exited with status 0 in cell 2, before the notebook's last cell" in done.verdict.reason


def test_the_time_limit_is_a_stop_naming_the_cell_it_interrupted(team: Team) -> None:
    job_id = submit(team, max_runtime="6s")
    jobdir = in_cell_2(team, job_id)  # from its start: the deadline counts from the Job's
    done = ended(team, job_id, timeout=120)
    assert done.state == JobState.CANCELLED, done.verdict
    assert (done.verdict.failure_class, done.verdict.cell_index) == (FailureClass.CANCELLED, 1)
    assert done.verdict.reason.startswith(
        "ran longer than its max runtime (0:00:06); cell 2 had been running for "
    )
    meta, statuses = notebook(jobdir)
    assert (meta["state"], statuses) == ("stopped", ["ok", "stopped", "not run"])


def test_a_cancel_names_the_cell_it_stops_and_keeps_the_persons_words(team: Team) -> None:
    job_id = submit(team)
    team.wait_state(job_id, JobState.RUNNING)
    jobdir = in_cell_2(team, job_id)
    cancelled = team.service.cancel(job_id, user="ada", reason="wrong data")
    assert cancelled.state == JobState.CANCELLED
    assert (cancelled.verdict.reason, cancelled.verdict.cell_index) == ("wrong data", 1)
    described = team.service.describe(job_id, user="ada")
    assert (described.verdict.reason, described.verdict.cell_index) == ("wrong data", 1)
    meta, statuses = notebook(jobdir)
    assert (meta["state"], meta["ended"], statuses) == (
        "stopped",
        "wrong data",
        ["ok", "stopped", "not run"],
    )
