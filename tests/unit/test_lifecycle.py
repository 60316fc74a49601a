"""The lifecycle rules both backends apply (trainhub/lifecycle/): the ranks' reports read without
following what the job planted, the checkpoint an attempt resumes from, the retry event, and
the alert a preemption raises."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.unit.test_checkpoint_confined import _write_checkpoint
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import Verdict
from trainhub.jobs.specparts import CheckpointRef, NotifyOn, RetryPolicy
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.notify import preemption_alert_kind
from trainhub.lifecycle.results import rank_results
from trainhub.lifecycle.resume import resume_source
from trainhub.lifecycle.retry import plan_retry, retry_event


def _report(jobdir: JobDir, attempt: int, name: str, result: dict) -> Path:
    path = jobdir.status / str(attempt) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))
    return path


def test_rank_results_are_the_reports_of_that_attempt_by_rank(tmp_path: Path) -> None:
    jobdir = JobDir(tmp_path / "job")
    _report(jobdir, 1, "rank-0.json", {"outcome": "ok"})
    _report(jobdir, 1, "rank-3.json", {"outcome": "error", "exception": "ValueError"})
    _report(jobdir, 1, "rank-x.json", {"outcome": "ok"})  # not a rank's
    _report(jobdir, 1, "notes.json", {"outcome": "ok"})
    _report(jobdir, 0, "rank-1.json", {"outcome": "error"})  # an earlier attempt's
    assert rank_results(jobdir, 1) == {
        0: {"outcome": "ok"},
        3: {"outcome": "error", "exception": "ValueError"},
    }
    assert rank_results(jobdir, 2) == {}  # no rank reported yet


def test_a_report_or_folder_the_job_replaced_by_a_link_counts_as_missing(tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-job.json"
    elsewhere.write_text(json.dumps({"outcome": "error", "exception": "Planted"}))
    jobdir = JobDir(tmp_path / "job")
    _report(jobdir, 0, "rank-0.json", {"outcome": "ok"})
    os.symlink(elsewhere, jobdir.status / "0" / "rank-1.json")
    assert rank_results(jobdir, 0) == {0: {"outcome": "ok"}}
    planted = tmp_path / "planted"
    _report(JobDir(planted), 1, "rank-0.json", {"outcome": "error", "exception": "Planted"})
    os.symlink(planted / "status" / "1", jobdir.status / "1")
    assert rank_results(jobdir, 1) == {}


def test_an_attempt_resumes_from_the_jobs_own_latest_checkpoint_else_the_one_asked_for(
    tmp_path: Path,
) -> None:
    earlier, job = tmp_path / "earlier", tmp_path / "job"
    for step in (10, 20):
        _write_checkpoint(earlier / "checkpoints", step)
    job.mkdir()
    jobs = {"earlier": earlier}
    asked = CheckpointRef(job_id="earlier", step=10)

    assert resume_source(job, None, jobs.get) is None  # a first attempt, nothing asked
    source = resume_source(job, asked, jobs.get)
    assert source is not None and (source.step, source.path.parent) == (10, earlier / "checkpoints")
    latest = resume_source(job, CheckpointRef(job_id="earlier"), jobs.get)
    assert latest is not None and latest.step == 20
    assert resume_source(job, CheckpointRef(job_id="gone"), jobs.get) is None

    _write_checkpoint(job / "checkpoints", 3)  # a retry, once the job saved its own
    own = resume_source(job, asked, jobs.get)
    assert own is not None and (own.step, own.path.parent) == (3, job / "checkpoints")


def test_the_retry_event_is_the_plan_and_the_step_it_resumes_from() -> None:
    lost = Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason="rank 1 was killed")
    plan = plan_retry(lost, RetryPolicy(backoff_seconds=5), {}, attempt=2, now=100.0)
    assert plan is not None
    assert retry_event(plan, 40) == {
        "attempt": 3,
        "failure_class": "infrastructure",
        "reason": "rank 1 was killed",
        "backoff_seconds": 5.0,
        "not_before": 105.0,
        "retries": {"infrastructure": 1},
        "resume_step": 40,
    }
    assert retry_event(plan, None)["resume_step"] is None


def test_a_preemption_raises_an_alert_only_when_asked() -> None:
    assert preemption_alert_kind([NotifyOn.PREEMPTION, NotifyOn.END]) == "preemption"
    assert preemption_alert_kind([NotifyOn.FAILURE, NotifyOn.END]) is None
