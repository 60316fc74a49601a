"""The conformance notebooks' endings with real pods on the real node, told as the local backend
tells them (tests/local/conformance): a segfault and the job's own SIGTERM in a cell are that
cell's code failure, never retried, named from the torchrun summary the pod's first process
kept in the job directory; ``os._exit(0)`` before the last cell fails the pod (exit 1, never
a success); the time limit (the Job's activeDeadlineSeconds) is a stop naming the cell it
interrupted, the pod stopped with 143. Each checks the verdict, the cell, the log and the
executed notebook against the notebook's own ``trainhub_conformance`` metadata.

Marked real_node by their fixture (tests/fixtures/k8s.py); the curated pytorch-cpu image as in
test_real_jobs.py (imported once per node).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.k8s.test_backend import wait_for
from tests.k8s.test_real_jobs import (  # noqa: F401 - fixtures
    PodExits,
    RealTeam,
    open_umask,
    pytorch_image,
    real_team,
)
from tests.local.conformance.test_conformance import NOTEBOOKS
from trainhub.jobs.directory import agent_log_name
from trainhub.jobs.states import JobState

RETRIED = {"infrastructure": 2, "backoff_seconds": 0}  # were any of them taken for one
# The spec of each case: the conformance notebook's `submit` arguments, as a spec. The time
# limit is longer than locally: on a cluster it counts from the Job's start, pod start-up
# included, and must find the notebook in its second cell.
LIMIT = "45s"
CASES = {
    "segfault": {"retry": RETRIED},
    "own_sigterm": {"retry": RETRIED},
    "os_exit_before_the_last_cell": {},
    "time_limit": {"max_runtime": LIMIT},
}
# What the pod's first process exits with: the Job fails on a code failure (torchrun's 1,
# never 143, which it ignores); a stop from outside (the deadline's) is 143.
POD_EXIT = {"segfault": 1, "own_sigterm": 1, "os_exit_before_the_last_cell": 1, "time_limit": 143}


def conformance(name: str) -> tuple[Path, dict[str, Any]]:
    (path,) = [p for p in NOTEBOOKS if p.stem == name]
    expect = json.loads(path.read_text())["metadata"]["trainhub_conformance"]
    if name == "time_limit":  # its reason names the limit the spec asked for
        expect["reason"] = expect["reason"].replace("(0:00:04)", "(0:00:45)")
    return path, expect


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_conformance_ending_on_the_real_node_is_told_as_locally(
    real_team: RealTeam,  # noqa: F811 - the fixture, imported above
    name: str,
) -> None:
    t = real_team
    path, expect = conformance(name)
    shutil.copy(path, t.workspace / path.name)
    spec = {
        **t.script_spec(path.name, workers=1),
        **CASES[name],
        "name": name.replace("_", "-"),
    }
    exits = PodExits(t.api, t.ns)
    try:
        job_id = t.submit_spec(spec)
        done = t.ended(job_id)
        # A job stopped at its time limit is recorded before its pod has ended (its grace).
        wait_for(
            "the pod's end",
            lambda: [e for e in exits.seen if e[0].startswith(f"{job_id}-0-")],
            120,
        )
    finally:
        exits.stop()
    log = t.rank_log(job_id, expect.get("log_rank", 0))

    # The verdict and the cell, as the local backend gives them; never retried.
    assert done.state == JobState(expect["state"]), (done.verdict, log[-3000:])
    verdict = done.verdict.model_dump(mode="json") if done.verdict else {}
    assert {k: verdict.get(k) for k in expect.get("verdict", {})} == expect["verdict"], verdict
    assert expect.get("reason", "") in verdict.get("reason", ""), verdict
    events = t.events(job_id)
    assert done.attempt == 0 and not [e for e in events if e["type"] == "retry"], events
    # The log.
    for text in expect.get("log", []):
        assert text in log, log[-3000:]
    # The executed notebook, closed with the verdict where its rank could not.
    jobdir = t.backend.jobs_root / job_id
    executed = json.loads((jobdir / "notebook.ipynb").read_text())
    if "state" in expect.get("notebook", {}):
        assert executed["metadata"]["trainhub"]["state"] == expect["notebook"]["state"]
    if "status" in expect:
        statuses = [c["metadata"].get("trainhub", {}).get("status") for c in executed["cells"]]
        assert statuses == expect["status"], executed["metadata"]
    for position, text in expect.get("first_output", {}).items():
        assert executed["cells"][int(position)]["outputs"][0]["text"] == text

    # How the pod ended, and the torchrun summary its first process kept.
    pods = [(n, code) for n, code, _ in exits.seen if n.startswith(f"{job_id}-0-")]
    assert pods and pods[-1][1] == POD_EXIT[name], exits.seen
    kept = (jobdir / agent_log_name(0, 0)).read_text()
    assert kept.startswith("[trainhub] pod "), kept
    if name in ("segfault", "own_sigterm"):
        assert "Root Cause (first observed failure)" in kept, kept
