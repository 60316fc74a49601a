"""Team events delivered for real: the idle-GPU service's warning and a saturated quota (seen
by the metrics service over a real local store) reach the team's webhook, a real HTTP
receiver on loopback, through the outbox and its detached sender."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.local.conftest import wait_for
from tests.local.test_alerts import Receiver
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState
from trainhub_spawner.gpu_sessions import GpuServer
from trainhub_spawner.idle import IdleGpuCuller
from trainhub_spawner.metrics_service import QuotaWatch

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def team_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    receiver = Receiver()
    data = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())
    data["teams"][0]["alerts"] = {"webhooks": [receiver.url], "quota_saturated_minutes": 30}
    teams_file = tmp_path / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("TRAINHUB_TEAMS_FILE", str(teams_file))
    monkeypatch.setenv("TRAINHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRAINHUB_GPUS", "0")
    yield receiver
    receiver.close()


def test_an_idle_gpu_warning_reaches_the_teams_webhook(team_hook: Receiver) -> None:
    culler = IdleGpuCuller()
    culler.initialize([])
    asyncio.run(
        culler.notify(GpuServer("ada", "", "team-vision", "jupyter-ada", 1, "vision"), "ada idles")
    )
    asyncio.run(culler.notify(GpuServer("bo", "", "team-nlp", "jupyter-bo", 1, "nlp"), "bo idles"))
    wait_for(lambda: team_hook.posts, 30, "the team's alert")
    time.sleep(1)
    (_, body), *more = team_hook.posts
    assert not more  # team nlp has no channels
    assert body["text"] == "trainhub team vision: ada idles"


def test_a_quota_saturated_for_long_is_announced_once(team_hook: Receiver, tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "home")
    for n, gpus in enumerate((8, 4)):  # vision's whole quota: 8 A100s and 4 T4s
        record = JobRecord(
            id=f"big-{n}",
            name="big",
            user="ada",
            team="vision",
            priority=1,
            state=JobState.RUNNING,
            spec=parse_spec({"name": "big", "source": {"path": "x.ipynb"}, "team": "vision"}),
            job_dir=str(tmp_path / f"big-{n}"),
            gpus=gpus,
            created_at=time.time(),
        )
        with backend.store.transaction() as conn:
            backend.store.insert(conn, record)
    watch = QuotaWatch([backend])
    now = time.time()
    assert watch.check(now) == []
    assert watch.check(now + 29 * 60) == []
    assert watch.check(now + 31 * 60) == ["vision"]
    assert watch.check(now + 40 * 60) == []  # once per stretch
    wait_for(lambda: team_hook.posts, 30, "the quota alert")
    time.sleep(1)
    ((_, body),) = team_hook.posts
    assert body["text"].startswith("trainhub team vision: its jobs have held 12 of the 12 GPUs")
