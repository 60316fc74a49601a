"""torchrun's elastic agent, run in this process (``python -m trainhub.rank.agent <torchrun
arguments>``), keeping an account of what its c10d rendezvous decided.

The rendezvous says which rounds an agent joined and completed, which nodes it found dead and
removed, and which heartbeats failed. torchrun logs that at DEBUG and INFO, below what the
agent prints (WARNING: the output the verdict reads, trainhub.lifecycle.verdict). So it goes to
a file of its own in the job directory, ``logs/rendezvous-<worker>-attempt-<n>.log``, every
heartbeat left out. Without it, a job whose agents split into two worlds could not say why
(trainhub.jobs.world; docs/architecture.md, "Elastic jobs on Kubernetes"). Warnings still go
to the agent's output as before."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from trainhub.jobs import confined
from trainhub.jobs.directory import rendezvous_log_name

RENDEZVOUS_LOGGER = "torch.distributed.elastic.rendezvous.dynamic_rendezvous"
# Every agent's heartbeat, each second, and the sync that carries it: the account would be
# little else. What a sync carries is said before it ("... Pending sync."); a failed one stays.
_EVERY_SECOND = ("keep-alive heartbeat", "has successfully synced its local changes")


def rendezvous_log(environ: Mapping[str, str]) -> tuple[Path, str] | None:
    """(job directory, file) for this agent's account; None outside a job. A pod's worker is
    its index (NODE_RANK); one machine's agents, alike, are told apart by process."""
    job_dir, attempt = environ.get("TRAINHUB_JOB_DIR"), environ.get("TRAINHUB_ATTEMPT", "0")
    worker = environ.get("NODE_RANK") or f"pid{os.getpid()}"
    if not job_dir or not attempt.isdigit():
        return None
    return Path(job_dir), rendezvous_log_name(worker, int(attempt))


class _JobFileHandler(logging.Handler):
    """Appends each record to a file of the job's own (never through a link in its place); a
    failed write drops the record: the account never stops the job."""

    def __init__(self, job_dir: Path, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.job_dir, self.name = job_dir, name
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.addFilter(lambda r: r.levelno >= logging.WARNING or not _routine(r.getMessage()))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError, ValueError):
            confined.append(self.job_dir, self.name, (self.format(record) + "\n").encode())


def _routine(message: str) -> bool:
    return any(words in message for words in _EVERY_SECOND)


def keep_rendezvous_log(job_dir: Path, name: str) -> None:
    logger = logging.getLogger(RENDEZVOUS_LOGGER)
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_JobFileHandler(job_dir, name))
    # As before: its warnings on the agent's output, as Python prints a logger's records when
    # no handler is configured (a handler of ours would otherwise take their place).
    shown = logging.StreamHandler(sys.stderr)
    shown.setLevel(logging.WARNING)
    logger.addHandler(shown)
    logger.propagate = False


def main(argv: list[str] | None = None) -> None:
    where = rendezvous_log(os.environ)
    if where is not None:
        keep_rendezvous_log(*where)
    from torch.distributed.run import main as torchrun

    torchrun(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
