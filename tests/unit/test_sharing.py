"""Who may read a job (trainhub.jobs.sharing): the owner; a teammate only when it is shared,
of their team, and its directory is where the team's jobs live."""

from __future__ import annotations

import time
from pathlib import Path

from trainhub.jobs.models import JobRecord
from trainhub.jobs.sharing import is_owner, read_only_sentence, teammate_may_read
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

ROOT = Path("/volumes/nlp/jobs")


def record(job_id: str = "train-1a2b3c4d", **fields: object) -> JobRecord:
    data = {
        "id": job_id,
        "name": "train",
        "user": "bo",
        "team": "nlp",
        "priority": 1,
        "state": JobState.SUCCEEDED,
        "spec": parse_spec({"name": "train", "source": {"path": "t.ipynb"}}),
        "job_dir": str(ROOT / job_id),
        "gpus": 0,
        "created_at": time.time(),
        "shared": "team",
        **fields,
    }
    return JobRecord.model_validate(data)


def test_a_shared_job_of_the_team_is_readable_by_a_teammate() -> None:
    assert teammate_may_read(record(), "cy", "nlp", ROOT)
    assert is_owner(record(), "bo") and not is_owner(record(), "cy")
    assert is_owner(record(), None)  # the CLI on a store of its own


def test_every_condition_is_needed() -> None:
    assert not teammate_may_read(record(shared="private"), "cy", "nlp", ROOT)
    assert not teammate_may_read(record(), "ada", "vision", ROOT)  # another team's session
    assert not teammate_may_read(record(), "cy", None, ROOT)  # no team: nothing shared
    assert not teammate_may_read(record(team=None), "cy", "nlp", ROOT)
    # a record pointing its directory elsewhere, or an id that is a path, is never read
    assert not teammate_may_read(record(job_dir="/volumes/vision/jobs/x"), "cy", "nlp", ROOT)
    assert not teammate_may_read(record(job_dir=str(ROOT / "other")), "cy", "nlp", ROOT)
    assert not teammate_may_read(record("..", job_dir=str(ROOT / "..")), "cy", "nlp", ROOT)


def test_the_refusal_says_whose_it_is() -> None:
    assert read_only_sentence(record(), "cancel") == (
        "Job train-1a2b3c4d is bo's, shared with team nlp to read: only bo can cancel it. "
        "Resubmit it to run it as a job of your own."
    )
