"""The usage report's vocabulary: how to group, since when, and what each group sums."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field

DEFAULT_SINCE = "30d"
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class UsageBy(StrEnum):
    USER = "user"
    TEAM = "team"
    POOL = "pool"
    DAY = "day"  # the UTC day the job ended


@dataclass(frozen=True)
class UsageScope:
    """The ended jobs a usage question is about: those that ended at or after ``since``, only
    ``user``'s, only ``team``'s when given."""

    since: float
    user: str | None = None
    team: str | None = None


def since_time(since: str, now: float | None = None) -> float:
    """Epoch seconds of ``since``: a span back from now (``30d``, ``12h``, ``90m``, ``2w``) or
    a UTC date (``2026-11-01``). A ValueError names what is accepted."""
    now = time.time() if now is None else now
    if m := _SPAN.match(since):
        return now - float(m[1]) * _SECONDS[m[2]]
    try:
        day = datetime.strptime(since.strip(), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(
            f"{since!r} is neither a span back from now (30d, 12h, 90m, 2w) nor a date (YYYY-MM-DD)"
        ) from None
    return day.timestamp()


def utc_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _since(value: str) -> str:
    since_time(value)
    return value


# A usage question's ``since``, checked as :func:`since_time` reads it (each model using it
# gives DEFAULT_SINCE as its default).
Since = Annotated[
    str,
    AfterValidator(_since),
    Field(
        description="Jobs that ended since: a span back from now (30d, 12h, 90m, 2w) or a "
        "UTC date (YYYY-MM-DD)"
    ),
]


class UsageQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: Since = DEFAULT_SINCE
    by: UsageBy = Field(UsageBy.USER, description="Group by user, team, pool or UTC day")


class UsageGroup(BaseModel):
    """Sums over the ended jobs of one group (seconds throughout)."""

    key: str
    jobs: int
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    gpu_allocated_s: float = 0.0
    gpu_busy_s: float = 0.0
    gpu_waste_s: float = 0.0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    queue_wait_s: float = 0.0
    retries: int = 0
    # Goodput (trainhub.usage.goodput), over the jobs that logged steps.
    goodput_allocated_s: float = Field(
        0.0, description="GPU-seconds allocated to the jobs that logged steps"
    )
    gpu_productive_s: float = 0.0
    gpu_redone_s: float = Field(0.0, description="GPU-seconds of steps redone after a restart")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def goodput(self) -> float | None:
        """Productive share of the GPU time of the jobs that logged steps."""
        if self.goodput_allocated_s <= 0:
            return None
        return self.gpu_productive_s / self.goodput_allocated_s


class UsageReport(BaseModel):
    by: UsageBy
    since: float = Field(description="Epoch seconds: jobs that ended at or after it")
    waste_utilization_pct: float = Field(
        description="GPU utilization (%) under which allocated GPU time counts as waste"
    )
    groups: list[UsageGroup] = Field(default_factory=list)
