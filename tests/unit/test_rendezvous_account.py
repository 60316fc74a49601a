"""trainhub.rank.agent: what torchrun's rendezvous decides is kept in the job directory, its
heartbeats left out, its warnings still on the agent's output; outside a job, nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from trainhub.jobs.directory import JobDir, rendezvous_log_name
from trainhub.rank.agent import RENDEZVOUS_LOGGER, rendezvous_log

# What a rendezvous logs, through the agent's setup, in a process of its own.
EMIT = f"""
import logging, sys
from pathlib import Path
from trainhub.rank.agent import keep_rendezvous_log
keep_rendezvous_log(Path(sys.argv[1]), "logs/rendezvous-0-attempt-2.log")
log = logging.getLogger({RENDEZVOUS_LOGGER!r})
log.info("The node 'job-0_7_0' has joined round 3 of the rendezvous 'r' as rank 0 in a "
         "world of size 2.")
log.debug("The node 'job-0_7_0' updated its keep-alive heartbeat time for the rendezvous 'r'.")
log.debug("The node 'job-0_7_0' has successfully synced its local changes with other nodes.")
log.debug("Detected dead node 'job-2_7_0', removing it from the rendezvous")
log.warning("The node 'job-0_7_0' has failed to send a keep-alive heartbeat to the rendezvous 'r'.")
"""


def test_the_account_keeps_rounds_and_dead_nodes_and_the_output_only_warnings(tmp_path: Path):
    job = JobDir(tmp_path / "job").create()
    out = subprocess.run(
        [sys.executable, "-c", EMIT, str(job.root)], capture_output=True, text=True, check=True
    )
    account = (job.root / "logs" / "rendezvous-0-attempt-2.log").read_text().splitlines()
    assert [line.split(" ", 3)[2:] for line in account] == [
        [
            "INFO",
            "The node 'job-0_7_0' has joined round 3 of the rendezvous 'r' as rank 0 in a "
            "world of size 2.",
        ],
        ["DEBUG", "Detected dead node 'job-2_7_0', removing it from the rendezvous"],
        [
            "WARNING",
            "The node 'job-0_7_0' has failed to send a keep-alive heartbeat to the rendezvous 'r'.",
        ],
    ]
    # The agent's output, as torchrun's own: its warnings alone, bare.
    assert out.stderr == (
        "The node 'job-0_7_0' has failed to send a keep-alive heartbeat to the rendezvous 'r'.\n"
    )


def test_a_link_in_the_accounts_place_is_not_written_through(tmp_path: Path) -> None:
    job = JobDir(tmp_path / "job").create()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    (job.root / "logs" / "rendezvous-0-attempt-2.log").symlink_to(elsewhere)
    subprocess.run([sys.executable, "-c", EMIT, str(job.root)], capture_output=True, check=True)
    assert elsewhere.read_text() == ""


def test_where_the_account_goes() -> None:
    job = {"TRAINHUB_JOB_DIR": "/j", "TRAINHUB_ATTEMPT": "1"}
    assert rendezvous_log({**job, "NODE_RANK": "2"}) == (Path("/j"), rendezvous_log_name("2", 1))
    assert rendezvous_log(job)[1].startswith("logs/rendezvous-pid")  # one machine's agents
    assert rendezvous_log({"TRAINHUB_ATTEMPT": "1"}) is None  # not a job's agent
    assert logging.getLogger(RENDEZVOUS_LOGGER).handlers == []  # set up only by main()
