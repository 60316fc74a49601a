"""Comments on a cluster follow the job's sharing (trainhub.jobs.sharing) on a real control
plane: a teammate neither reads nor is notified about a private job's comments; once the owner
shares it, the teammate reads them, adds one, is notified of a mention, and is refused
editing the owner's; private again, it is gone for them. The comments are files of the team
volume's ``.comments``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.k8s.test_backend import Team, team  # noqa: F401 - the fixture
from trainhub.comments.board import Comments
from trainhub.errors import NotFound, ReadOnly


def test_a_teammate_comments_on_a_shared_job_and_never_sees_a_private_ones(
    team: Team,  # noqa: F811 - the fixture, imported above
    tmp_path: Path,
) -> None:
    job_id = team.submit("discussed")
    spec = {"name": "bos", "source": {"path": "train.py"}, "team": team.ns}
    team.service.submit(spec, user="bo")  # bo is of the team: his own job
    board = Comments(team.service, home=tmp_path)

    made = board.add({"kind": "job", "target": job_id, "body": "@bo diverged?"}, user="ada")
    assert made.mentions == ["bo"]
    assert (team.backend.jobs_root / ".comments" / f"{made.id}.json").is_file()
    with pytest.raises(NotFound):
        board.list("job", job_id, user="bo")
    assert board.mentions("bo") == []  # a private job: nothing for him to open

    team.service.edit(job_id, {"shared": "team"}, user="ada")
    (seen,) = board.list("job", job_id, user="bo").comments
    assert (seen.body, seen.mine) == ("@bo diverged?", False)
    (notice,) = board.mentions("bo")
    assert notice.message.startswith(f"ada mentioned you on job {job_id}: @bo diverged?")
    reply = board.add({"kind": "job", "target": job_id, "body": "yes, @ada: lr"}, user="bo")
    with pytest.raises(ReadOnly, match="ada's: only they can edit it"):
        board.edit(made.id, {"body": "not mine"}, user="bo")
    listed = board.list("job", job_id, user="ada").comments
    assert [c.id for c in listed] == [made.id, reply.id] and listed[1].mine is False

    team.service.edit(job_id, {"shared": "private"}, user="ada")
    with pytest.raises(NotFound):
        board.list("job", job_id, user="bo")
    with pytest.raises(NotFound):
        board.edit(reply.id, {"body": "still mine?"}, user="bo")
