"""Schedules on the local backend, on a fake clock, with real jobs: a due time fires one job
from the frozen workspace; concurrency forbid skips and replace cancels; missed times after
downtime; pause, resume, run now, delete; claims left by a dead submitter are matched to
their job or fired again, never twice; a failed run is announced through the alerts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import nbformat
import pytest

from tests.local.conftest import wait_for
from tests.local.test_alerts import Receiver
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.service import JobService
from trainhub.schedules.model import Run, RunState, run_tag
from trainhub.schedules.notify import announcer
from trainhub.schedules.service import Schedules

pytestmark = pytest.mark.slow

BERLIN = ZoneInfo("Europe/Berlin")
CREATED = datetime(2026, 6, 1, 12, tzinfo=BERLIN).timestamp()
HOUR = 3600.0


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def notebook(path: Path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("word = 'frozen'\npause = 0")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)


class Env:
    def __init__(self, tmp_path: Path):
        self.home = tmp_path / "home"
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        notebook(
            self.workspace / "say.ipynb", "import time\ntime.sleep(pause)\nprint('said', word)"
        )
        notebook(self.workspace / "fail.ipynb", "raise RuntimeError('the nightly data is missing')")
        self.clock = Clock(CREATED)

    def schedules(self) -> Schedules:
        """A fresh service on the same data directory: another process's view, as a restart."""
        backend = LocalBackend(self.home)
        service = JobService(backend, workspace_root=self.workspace, jobs_root=backend.jobs_root)
        return Schedules(service, clock=self.clock)

    def announcing_schedules(self, webhook: str, monkeypatch: pytest.MonkeyPatch) -> Schedules:
        """A fresh service whose failed and refused runs are announced to ``webhook``, through
        the owner's alerts file."""
        alerts = self.home / "alerts.yaml"
        self.home.mkdir(parents=True, exist_ok=True)
        alerts.write_text(json.dumps({"webhooks": [webhook]}))
        monkeypatch.setenv("TRAINHUB_ALERTS_FILE", str(alerts))
        s = self.schedules()
        s.on_refused = announcer(self.home)  # as local.attach sets it
        return s

    def job(self, s: Schedules, job_id: str, states: tuple[str, ...] = ("succeeded",)):
        def ended():
            s.service.backend.reconcile()
            job = s.service.backend.get(job_id)
            return job if job is not None and job.state.value in states else None

        return wait_for(ended, timeout=120, what=f"{job_id} to be {states}")


def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    """An Env on a trainhub home of its own, with none of the machine's alerts or teams."""
    for name in ("TRAINHUB_ALERTS_FILE", "TRAINHUB_ALERTS_OUTBOX", "TRAINHUB_TEAMS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRAINHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRAINHUB_GPUS", "0")
    monkeypatch.setenv("TRAINHUB_CANCEL_GRACE", "5")
    return Env(tmp_path)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolated_env(tmp_path, monkeypatch)


def request(source: str = "say.ipynb", **fields: object) -> dict[str, object]:
    return {
        "name": "nightly",
        "target": {"kind": "notebook", "job": {"name": "nightly", "source": {"path": source}}},
        "cron": "0 2 * * *",
        "timezone": "Europe/Berlin",
        **fields,
    }


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 6, day, hour, minute, tzinfo=BERLIN).timestamp()


def test_a_due_time_fires_one_job_that_runs_the_frozen_workspace(env: Env):
    s = env.schedules()
    created = s.create(request(), user="ada")
    # What is in the workspace after creation is not what the schedule runs.
    notebook(env.workspace / "say.ipynb", "print('said', 'edited later')")
    assert created.next_at == at(2, 2)
    assert s.tick(created.id) == at(2, 2) and s.describe(created.id, user="ada").runs == []

    env.clock.now = at(2, 2) + 0.5
    assert s.tick(created.id) == at(3, 2)
    run = s.describe(created.id, user="ada").runs[0]
    assert run.at == at(2, 2) and run.state == RunState.SUBMITTED and run.job_id
    job = env.job(s, run.job_id)
    assert "said frozen" in (Path(job.job_dir) / "logs" / "rank-0.log").read_text()
    assert run_tag(created.id, Run(at=at(2, 2), state=RunState.SUBMITTED)) in job.spec.tags
    assert "failure" in [n.value for n in job.spec.notify]  # the alerts' own path

    # Ticking again at the same moment, or from another process, fires nothing more.
    assert env.schedules().tick(created.id) == at(3, 2)
    assert len(s.describe(created.id, user="ada").runs) == 1
    history = s.describe(created.id, user="ada").runs
    assert history[0].outcome == "succeeded"


def test_forbid_skips_a_time_while_a_run_is_active_and_replace_cancels_it(env: Env):
    s = env.schedules()
    slow = {"name": "slow", "source": {"path": "say.ipynb"}, "parameters": {"pause": 300}}
    hourly = {"cron": "0 * * * *", "target": {"kind": "notebook", "job": slow}}
    forbid = s.create(request(**hourly, concurrency="forbid"), user="ada").id
    replace = s.create(
        request(**{**hourly, "name": "slow-replace"}, concurrency="replace"), user="ada"
    ).id
    env.clock.now = at(1, 13) + 1
    s.tick_all()
    first = {sid: s.describe(sid, user="ada").runs[0].job_id for sid in (forbid, replace)}
    for job_id in first.values():
        env.job(s, job_id, states=("running",))

    env.clock.now = at(1, 14) + 1
    s.tick_all()
    skipped = s.describe(forbid, user="ada").runs[0]
    assert skipped.state == RunState.SKIPPED and first[forbid] in skipped.reason
    assert "forbid" in skipped.reason
    replaced = s.describe(replace, user="ada").runs
    assert replaced[0].state == RunState.SUBMITTED and replaced[0].job_id != first[replace]
    cancelled = env.job(s, first[replace], states=("cancelled",))
    assert "replaced by the run of schedule" in (cancelled.cancel_reason or "")
    for job_id in (first[forbid], replaced[0].job_id):
        s.service.backend.cancel(job_id, "the test is over")


def test_after_downtime_run_once_fires_the_latest_time_and_skip_fires_none(env: Env):
    s = env.schedules()
    once = s.create(request(cron="0 * * * *"), user="ada").id
    skip = s.create(request(name="skipper", cron="0 * * * *", missed="skip"), user="ada").id
    late = s.create(request(name="late", starting_deadline="10m"), user="ada").id
    env.clock.now = at(2, 4, 30)  # nothing ticked since 12:00 yesterday
    s.tick_all()
    runs = s.describe(once, user="ada").runs
    assert [r.at for r in runs] == [at(2, 4)] and runs[0].state == RunState.SUBMITTED
    assert "missed" in runs[0].reason
    runs = s.describe(skip, user="ada").runs
    assert [(r.at, r.state) for r in runs] == [(at(2, 4), RunState.SKIPPED)]
    runs = s.describe(late, user="ada").runs  # 02:00 was reached 2.5 h late, past 10 min
    assert [(r.at, r.state) for r in runs] == [(at(2, 2), RunState.SKIPPED)]
    assert "starting deadline" in runs[0].reason
    env.job(s, s.describe(once, user="ada").runs[0].job_id)
    # Back on time: each fires its next time as usual.
    env.clock.now = at(2, 5) + 2
    s.tick_all()
    for sid in (once, skip):
        run = s.describe(sid, user="ada").runs[0]
        assert (run.at, run.state) == (at(2, 5), RunState.SUBMITTED)
        env.job(s, run.job_id)


def test_pause_resume_run_now_and_delete(env: Env):
    s = env.schedules()
    sid = s.create(request(), user="ada").id
    assert s.pause(sid, user="ada").next_at is None
    env.clock.now = at(3, 9)  # two times passed while paused
    assert s.tick(sid) is None and s.describe(sid, user="ada").runs == []
    resumed = s.resume(sid, user="ada")
    assert resumed.next_at == at(4, 2)  # from now on: the paused times are not run
    assert s.tick(sid) == at(4, 2) and s.describe(sid, user="ada").runs == []

    now = s.run_now(sid, user="ada").runs[0]
    assert now.at is None and now.state == RunState.SUBMITTED
    env.job(s, now.job_id)
    with pytest.raises(Exception, match="No schedule"):
        s.describe(sid, user="bo")  # another member's schedule is not there for them

    frozen = env.home / "jobs" / ".schedules" / sid
    assert frozen.is_dir()
    s.delete(sid, user="ada")
    assert not frozen.exists() and s.records.get(sid) is None
    assert s.service.backend.get(now.job_id) is not None  # its jobs stay


def ended_process_claimer() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "from trainhub.jobs import claims; print(claims.claimer())"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip()


def claim_as(s: Schedules, sid: str, at_time: float, claimed_by: str) -> Run:
    """A claim as a scheduler leaves it when it dies between claiming and noting the job."""
    run = Run(at=at_time, state=RunState.CLAIMED, claimed_at=s.clock(), claimed_by=claimed_by)
    with s.records.change(sid) as record:
        assert record is not None
        record.runs.append(run)
        record.last_at = at_time
    return run


def test_a_dead_submitters_claim_is_fired_again_once_or_matched_to_its_job(env: Env):
    s = env.schedules()
    lost = s.create(request(cron="0 * * * *"), user="ada").id
    made = s.create(request(name="made"), user="ada").id
    live = s.create(request(name="live"), user="ada").id
    dead = ended_process_claimer()
    env.clock.now = at(2, 2) + 1
    claim_as(s, lost, at(2, 2), dead)  # died before submitting
    run = claim_as(s, made, at(2, 2), dead)  # died after submitting, before noting
    record = s.records.get(made)
    job = s.service.submit(s._spec(record, run), user="ada")
    # A claimer still at work is left to finish.
    code = "from trainhub.jobs import claims; print(claims.claimer(), flush=True); input()"
    sleeper = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        claim_as(s, live, at(2, 2), sleeper.stdout.readline().strip())
        # Started again when the next hour is due too: the lost claim and 03:00 both fire.
        env.clock.now = at(2, 3) + 30
        restarted = env.schedules()
        assert restarted.tick(live) == env.clock.now + 10  # looks again soon at a live claim
        restarted.tick_all()
        restarted.tick_all()
        runs = restarted.describe(live, user="ada").runs
        assert [(r.at, r.state) for r in runs] == [(at(2, 2), RunState.CLAIMED)]
    finally:
        sleeper.kill()
        sleeper.wait()

    runs = restarted.describe(lost, user="ada").runs
    assert [(r.at, r.state) for r in runs] == [
        (at(2, 3), RunState.SUBMITTED),
        (at(2, 2), RunState.SUBMITTED),
    ]
    runs = restarted.describe(made, user="ada").runs
    assert [(r.at, r.state, r.job_id) for r in runs] == [(at(2, 2), RunState.SUBMITTED, job.id)]
    # Exactly one job each: the matched claim was not submitted again.
    for sid, due in ((lost, at(2, 2)), (lost, at(2, 3)), (made, at(2, 2))):
        tag = run_tag(sid, Run(at=due, state=RunState.SUBMITTED))
        found = s.service.backend.list_jobs(JobFilter(user="ada", search=tag), limit=10)
        assert len(found) == 1, (sid, [j.id for j in found])
        env.job(s, found[0].id)


def test_schedulers_ticking_at_once_fire_each_time_once(env: Env):
    sid = env.schedules().create(request(cron="0 * * * *"), user="ada").id
    env.clock.now = at(1, 13) + 1
    tickers = [env.schedules() for _ in range(4)]
    threads = [threading.Thread(target=t.tick, args=(sid,)) for t in tickers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = tickers[0].describe(sid, user="ada").runs
    assert [(r.at, r.state) for r in runs] == [(at(1, 13), RunState.SUBMITTED)]
    env.job(tickers[0], runs[0].job_id)


def test_a_failed_run_and_a_refused_one_are_announced_through_the_owners_alerts(
    env: Env, monkeypatch
):
    receiver = Receiver()
    try:
        s = env.announcing_schedules(receiver.url, monkeypatch)
        failing = s.create(request(source="fail.ipynb"), user="ada").id
        tampered = s.create(request(name="tampered"), user="ada").id
        # Job code could write the frozen folder: a changed file refuses the run.
        (env.home / "jobs" / ".schedules" / tampered / "source" / "say.ipynb").write_text("{}")
        env.clock.now = at(2, 2) + 1
        s.tick_all()
        job_id = s.describe(failing, user="ada").runs[0].job_id
        env.job(s, job_id, states=("failed",))
        refused = s.describe(tampered, user="ada").runs[0]
        assert refused.state == RunState.REFUSED and "changed after it was frozen" in refused.reason
        wait_for(lambda: len(receiver.posts) >= 2, timeout=60, what="both alerts")
        texts = sorted(body["text"] for _, body in receiver.posts)
        assert len(texts) == 2, texts
        failed = next(t for t in texts if job_id in t)
        assert "failed" in failed and "nightly data is missing" in failed
        refusal = next(t for t in texts if tampered in t)
        assert "was refused" in refusal and "changed after it was frozen" in refusal
    finally:
        receiver.close()


def test_a_members_own_process_fires_only_the_members_schedules(env: Env):
    """On a cluster a session's tick fires its member's schedules alone; the controller
    (fires_for None) fires everyone's."""
    s = env.schedules()
    mine = s.create(request(), user="ada").id
    theirs = s.create(request(name="theirs"), user="bo").id
    env.clock.now = at(2, 2) + 1
    s.fires_for = "ada"
    s.tick_all()
    assert [r.at for r in s.describe(mine, user="ada").runs] == [at(2, 2)]
    assert s.describe(theirs, user="bo").runs == []
    s.fires_for = None
    s.tick_all()
    runs = s.describe(theirs, user="bo").runs
    assert [r.at for r in runs] == [at(2, 2)]
    for sid, user in ((mine, "ada"), (theirs, "bo")):
        env.job(s, s.describe(sid, user=user).runs[0].job_id)
