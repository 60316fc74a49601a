"""A team's quota in the teams file: its nominal share of each pool, what it may borrow from
and lend to its cohort, and Kueue's preemption policy between them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from trainhub.teams.fields import FileModel, resource_quantity


class Limits(FileModel):
    """Per-resource caps; a resource left out has no cap."""

    gpus: int | None = Field(None, ge=0)
    cpu: str | None = None
    memory: str | None = None

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def resource_quantity(cls, v: Any, info: ValidationInfo) -> str | None:
        return None if v is None else resource_quantity(info, v)


class PoolQuota(FileModel):
    gpus: int = Field(ge=0)
    cpu: str
    memory: str
    borrowing_limit: Limits | None = Field(
        None, description="How much more this team may borrow; none: unbounded"
    )
    lending_limit: Limits | None = Field(
        None, description="How much of its quota others may borrow; none: all"
    )

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def resource_quantity(cls, v: Any, info: ValidationInfo) -> str:
        return resource_quantity(info, v)


class Preemption(FileModel):
    """Kueue's ClusterQueue preemption policy, in its own words."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = (
        "LowerPriority"
    )
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"
