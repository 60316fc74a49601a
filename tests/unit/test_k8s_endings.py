"""Every ending of a job on Kubernetes told as the local backend tells it
(trainhub/backends/kubernetes/status.py over the job directory's evidence,
trainhub/lifecycle/results.py): a complete Job is a success only if no rank left a cell
without a word; a crash or the job's own signal in a cell is that cell's code failure, read
from the torchrun summary the pod's first process kept; a time limit is a stop naming its cell."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.unit.test_verdicts import TORCHRUN_SUMMARY
from trainhub.backends.kubernetes import recovery, status
from trainhub.jobs.directory import JobDir, agent_log_name
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.results import Evidence, agent_output, attempt_evidence
from trainhub.lifecycle.verdict import RunningCell, end_state

IN_CELL_2 = {0: RunningCell(1, 1767225600.0)}  # since 2026-01-01T00:00:00Z
MESSAGE = "Container trainer for pod team/nb-0-x0 failed with exit code 1 matching FailJob rule"


def summary(rank: int, code: int) -> str:
    """torchrun's failure summary naming ``rank`` as the root cause, ended with ``code``."""
    return TORCHRUN_SUMMARY.replace("rank      : 1 (local_rank: 1)", f"rank      : {rank}").replace(
        "exitcode  : -9 (pid: 19986)", f"exitcode  : {code} (pid: 19986)"
    )


def failed_job(reason: str = "PodFailurePolicy", message: str = MESSAGE, **spec: Any) -> dict:
    cond = {
        "type": "Failed",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:04Z",
    }
    return {"metadata": {}, "spec": spec, "status": {"conditions": [cond]}}


def pod(worker: int, code: int, reason: str = "Error") -> dict:
    term = {"exitCode": code, "reason": reason, "finishedAt": "2026-01-01T00:00:03Z"}
    return {
        "metadata": {
            "name": f"nb-{worker}-x{worker}",
            "annotations": {"batch.kubernetes.io/job-completion-index": str(worker)},
        },
        "status": {
            "phase": "Failed" if code else "Succeeded",
            "containerStatuses": [{"name": "trainer", "state": {"terminated": term}}],
        },
    }


def told(
    job: dict, pods: list[dict], results: dict | None = None, logs: dict[int, str] | None = None
) -> tuple[Verdict | None, JobState]:
    """The verdict and the state a record of that Job gets, from the evidence."""
    kept = logs or {}
    evidence = Evidence(results or {}, IN_CELL_2, lambda worker: kept.get(worker, ""))
    verdict = status.ending_verdict(job, pods, evidence, attempt=0)
    return verdict, end_state(verdict)


def test_a_crash_in_a_cell_is_that_cells_code_failure_never_retried() -> None:
    verdict, state = told(failed_job(), [pod(0, 1)], logs={0: summary(0, -11)})
    assert state == JobState.FAILED and verdict is not None
    assert (verdict.failure_class, verdict.rank, verdict.cell_index, verdict.signal) == (
        FailureClass.CODE,
        0,
        1,
        "SIGSEGV",
    )
    assert verdict.reason.startswith("rank 0 crashed with SIGSEGV in cell 2")
    # Where no torchrun output was kept (an older image), the pod's exit is all there is.
    unkept, _ = told(failed_job(), [pod(0, 1)])
    assert unkept is not None and unkept.failure_class == FailureClass.INFRASTRUCTURE
    assert unkept.reason == "worker 0 exited with code 1 without reporting an error"


def test_the_jobs_own_sigterm_is_its_failure_and_a_sigkill_stays_the_infrastructures() -> None:
    own, _ = told(failed_job(), [pod(0, 1)], logs={0: summary(0, -15)})
    assert own is not None and (own.failure_class, own.cell_index) == (FailureClass.CODE, 1)
    assert "was ended by SIGTERM in cell 2, a signal trainhub did not send" in own.reason
    killed, _ = told(failed_job(), [pod(0, 1)], logs={0: summary(0, -9)})
    assert killed is not None and killed.failure_class == FailureClass.INFRASTRUCTURE
    assert killed.reason == "rank 0 was killed by SIGKILL"


def test_os_exit_before_the_last_cell_is_reported_by_the_rank_and_fails_the_job() -> None:
    report = {
        "outcome": "error",
        "failure_class": "code",
        "exception": "SystemExit",
        "message": "os._exit(0) before the notebook's last cell: the cells after cell 2 "
        "did not run",
        "cell_index": 1,
        "line": 3,
    }
    verdict, state = told(failed_job(), [pod(0, 1)], {0: report}, {0: summary(0, 1)})
    assert state == JobState.FAILED and verdict is not None
    assert (verdict.failure_class, verdict.cell_index, verdict.line) == (FailureClass.CODE, 1, 3)
    assert "os._exit(0) before the notebook's last cell" in verdict.reason


def test_a_complete_job_succeeded_only_if_no_rank_left_a_cell_without_a_word() -> None:
    complete = {"metadata": {}, "spec": {}, "status": {"conditions": [{"type": "Complete"}]}}
    complete["status"]["conditions"][0]["status"] = "True"
    assert status.job_state(complete, []) == JobState.SUCCEEDED  # the objects' word
    quit_early, state = told(complete, [pod(0, 0)])  # C's _exit(0) inside cell 2
    assert state == JobState.FAILED and quit_early is not None
    assert (quit_early.failure_class, quit_early.cell_index) == (FailureClass.CODE, 1)
    assert "exited with status 0 in cell 2, before the notebook's last cell" in quit_early.reason
    assert told(complete, [pod(0, 0)], {0: {"outcome": "ok"}}) == (None, JobState.SUCCEEDED)
    evidence = Evidence()  # a script's rank, or one that said nothing of any cell
    assert status.ending_verdict(complete, [], evidence, attempt=0) is None
    # An elastic job that shrank from 3 ranks to 2: rank 2 was stopped inside cell 2 by the
    # membership change; ranks 0 and 1 ran to the end.
    shrunk = Evidence({0: {"outcome": "ok"}, 1: {"outcome": "ok"}}, {2: RunningCell(1, 0.0)})
    assert status.ending_verdict(complete, [], shrunk, attempt=0, world=2) is None
    assert status.ending_verdict(complete, [], shrunk, attempt=0) is not None  # fixed size: told


def test_an_elastic_jobs_last_world_is_the_one_that_claimed_its_directory_last() -> None:
    """Grown back to 3 workers seconds before its world of 2 ended: the new worker never joined
    a world, so the ranks that end the job are the world of 2's, whatever the Job's size."""
    job = {"spec": {"parallelism": 3}}
    assert status.last_world(job, Evidence(world_size=2), ranks_per_worker=1) == 2
    assert status.last_world(job, Evidence(), ranks_per_worker=2) == 6  # no claim: its size


def test_a_time_limit_is_a_stop_naming_the_cell_and_how_long_it_had_run() -> None:
    for kind in ("FailureTarget", "Failed"):
        job = failed_job("DeadlineExceeded", "Job was active longer than specified deadline")
        job["spec"]["activeDeadlineSeconds"] = 4
        job["status"]["conditions"][0]["type"] = kind
        assert status.job_state(job, [pod(0, 143)]) == JobState.CANCELLED
        verdict, state = told(job, [pod(0, 143)])
        assert state == JobState.CANCELLED and verdict is not None
        assert (verdict.failure_class, verdict.cell_index) == (FailureClass.CANCELLED, 1)
        assert verdict.reason == (
            "ran longer than its max runtime (0:00:04); cell 2 had been running for 4.0 s"
        )


def test_a_complete_job_marked_for_a_retry_reads_as_retrying() -> None:
    plan = recovery.RetryPlan(1, "code", "r", 0.0, 0.0)
    job = {
        "metadata": {"annotations": {recovery.RETRY_ANNOTATION: plan.to_json()}},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]},
    }
    assert status.job_state(job, []) == JobState.RETRYING


def test_the_evidence_is_read_from_the_job_directory(tmp_path: Path) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    jobdir.emit("cell", rank=0, attempt=1, cell_index=1, phase="start")
    (jobdir.status / "1").mkdir()
    (jobdir.status / "1" / "rank-1.json").write_text(json.dumps({"outcome": "ok"}))
    kept = jobdir.root / agent_log_name(0, 1)
    earlier = "[trainhub] pod nb-0: torchrun ...\n" + summary(0, -11)
    kept.write_text(earlier + "[trainhub] pod nb-0: torchrun ...\nstopped, no summary\n")
    evidence = attempt_evidence(jobdir, 1)
    assert evidence.rank_results == {1: {"outcome": "ok"}}
    assert list(evidence.running) == [0] and evidence.running[0].cell_index == 1
    # The pod's last run of the attempt: an earlier run's summary is no evidence of this one.
    assert evidence.agent_output(0) == "[trainhub] pod nb-0: torchrun ...\nstopped, no summary\n"
    assert evidence.agent_output(1) == "" and agent_output(jobdir, 0, 2) == ""
    # A file the job replaced by a link is read as none.
    os.symlink(kept, jobdir.root / agent_log_name(1, 1))
    assert agent_output(jobdir, 1, 1) == ""


def test_of_two_workers_the_rules_weigh_the_pods_that_failed_by_themselves() -> None:
    """Whichever pod the Job controller names: a killed worker wins over its peer's lost-peer
    error (as torchrun's ranks weigh); a pod deleted after the failure is collateral."""
    lost_peer = {0: {"outcome": "error", "failure_class": "infrastructure", "message": "reset"}}
    named_peer = failed_job(message=MESSAGE)  # names nb-0-x0, the peer that noticed
    logs = {0: summary(0, 1)}
    verdict, _ = told(named_peer, [pod(0, 1), pod(1, 137)], lost_peer, logs)
    assert verdict is not None and verdict.reason == "worker 1 was killed by SIGKILL"

    crashed = failed_job(message=MESSAGE.replace("nb-0-x0", "nb-1-x1"))
    stuck = pod(0, 137)  # stopped by the Job controller's deletion, SIGKILLed after its grace
    stuck["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:40Z"
    evidence = Evidence({}, {1: RunningCell(1, 0.0)}, lambda w: summary(1, -11) if w else "")
    verdict = status.ending_verdict(crashed, [stuck, pod(1, 1)], evidence, attempt=0)
    assert verdict is not None and (verdict.rank, verdict.signal) == (1, "SIGSEGV")
    assert verdict.failure_class == FailureClass.CODE and verdict.cell_index == 1
