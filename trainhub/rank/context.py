"""Who this rank is: its rank, the world size, the attempt and the job directory, as torchrun
and trainhub put them in its environment. Read once by the runner, passed to every part of a
rank's run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import JobDir


@dataclass(frozen=True)
class RankContext:
    rank: int
    world_size: int
    attempt: int
    job: JobDir

    @classmethod
    def from_env(cls, bundle_dir: Path) -> RankContext:
        job_dir = os.environ.get("TRAINHUB_JOB_DIR") or str(bundle_dir.resolve().parent)
        return cls(
            rank=int(os.environ.get("RANK", "0")),
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
            attempt=int(os.environ.get("TRAINHUB_ATTEMPT", "0")),
            job=JobDir(job_dir),
        )

    def emit(self, type: str, **fields: Any) -> None:
        """An event in the job's events, saying which rank wrote it in which attempt."""
        self.job.emit(type, rank=self.rank, attempt=self.attempt, **fields)
