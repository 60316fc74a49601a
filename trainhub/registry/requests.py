"""The registry's request bodies, as the REST API validates them (and documents them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainhub.registry.service import MAX_DESCRIPTION, MAX_REASON


class RegisterModel(BaseModel):
    """Register a job's checkpoint or output as the next version of ``name``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=100, description="The model's name")
    source: str = Field(
        alias="from",
        min_length=1,
        max_length=1000,
        description="JOB (its newest checkpoint, else its outputs folder), JOB:STEP (that "
        "checkpoint) or JOB:PATH (a file or folder of its outputs)",
    )
    description: str = Field("", max_length=MAX_DESCRIPTION)


class MoveAlias(BaseModel):
    """Point an alias at a version; ``version: null`` removes it."""

    model_config = ConfigDict(extra="forbid")

    version: int | None = Field(ge=1, le=2**31, description="The version; null removes it")
    reason: str = Field("", max_length=MAX_REASON, description="Written in the audit log")


class ArchiveVersion(BaseModel):
    """Archive a version (it stays, out of ``NAME`` alone), or bring it back."""

    model_config = ConfigDict(extra="forbid")

    archived: bool = True
    reason: str = Field("", max_length=MAX_REASON, description="Written in the audit log")
