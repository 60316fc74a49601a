"""Claims (trainhub.jobs.claims): a claim's submitter judged alive or gone by its real
process, and its job found by key."""

from __future__ import annotations

import subprocess
import sys
import time

from trainhub.jobs import claims


def claim_of_a_process_that_ended() -> str:
    """A claim made by a real child process, which then exits."""
    out = subprocess.run(
        [sys.executable, "-c", "from trainhub.jobs import claims; print(claims.claimer())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def test_a_live_submitter_keeps_its_claim_however_old():
    now = time.time()
    assert claims.settle(now, claims.claimer(), now, lambda: None) == claims.PENDING
    old = now - claims.CLAIM_SECONDS * 4
    assert claims.settle(old, claims.claimer(), now, lambda: None) == claims.PENDING


def test_a_dead_submitter_leaves_a_stale_claim_unless_its_job_is_found():
    by = claim_of_a_process_that_ended()
    now = time.time()
    assert claims.settle(now, by, now, lambda: None).stale
    assert claims.settle(now, by, now, lambda: "job-1") == claims.Settled(job_id="job-1")


def test_a_submitter_elsewhere_is_judged_by_the_claims_age():
    by = "another-host:1:1.000"
    now = time.time()
    assert claims.settle(now - 10, by, now, lambda: None) == claims.PENDING
    assert claims.settle(now - claims.CLAIM_SECONDS - 1, by, now, lambda: None).stale
    # A pid reused by another process is not the claimer.
    mine = claims.claimer().rsplit(":", 1)[0] + ":1.000"
    assert claims.settle(now, mine, now, lambda: None).stale
