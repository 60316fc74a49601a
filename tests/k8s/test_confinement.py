"""The Kubernetes backend reads a job's spec and events from the team's shared volume without
following links or waiting on FIFOs: a job that replaced them is refused by name, and the team's
job list still shows every other job."""

from __future__ import annotations

import os

import pytest

from tests.k8s import test_backend
from tests.k8s.test_backend import Team
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.states import JobState

team = test_backend.team  # the fixture: a team namespace with its shared volume


def listed(team: Team) -> list[str]:
    return [j.id for j in team.service.list_jobs(user="ada").jobs]


def test_planted_spec_and_events_are_refused_and_the_list_stays_whole(team: Team) -> None:
    planted = team.submit("planted", gpus=1)
    other = team.submit("other", gpus=1)
    team.wait_state(planted, JobState.RUNNING)
    job_dir = team.backend.jobs_root / planted
    theirs = (team.backend.jobs_root / other / "spec.json").read_bytes()

    (job_dir / "spec.json").unlink()
    os.symlink(team.backend.jobs_root / other / "spec.json", job_dir / "spec.json")
    with pytest.raises(NotAJobFile, match=r"spec\.json is a symbolic link"):
        team.service.describe(planted, user="ada")
    assert other in listed(team) and planted not in listed(team)

    # Once the Job object is gone, the job directory alone is the record: still refused.
    team.delete_job(planted)
    with pytest.raises(NotAJobFile, match=r"spec\.json is a symbolic link"):
        team.service.describe(planted, user="ada")
    os.unlink(job_dir / "spec.json")
    (job_dir / "spec.json").write_bytes(theirs.replace(other.encode(), planted.encode()))

    (job_dir / "events.jsonl").unlink()
    os.mkfifo(job_dir / "events.jsonl")
    with pytest.raises(NotAJobFile, match=r"events\.jsonl is a FIFO"):
        team.service.describe(planted, user="ada")
    assert other in listed(team) and planted not in listed(team)
    assert (team.backend.jobs_root / other / "spec.json").read_bytes() == theirs
