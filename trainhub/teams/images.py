"""The teams file's curated images (pinned references, their scans) and a team's image policy:
which images its jobs and sessions may run (applied by :mod:`trainhub.imagepolicy`)."""

from __future__ import annotations

import datetime
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from trainhub.teams.fields import DNS_LABEL, FileModel

# An image must say which build it means: a tag other than "latest", or a digest.
PINNED_IMAGE = re.compile(r"^[^\s@]+(:(?!latest$)[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})$")


def is_pinned(reference: str) -> bool:
    """A tag other than 'latest', or a digest: the reference says which build it means."""
    return bool(PINNED_IMAGE.match(reference))


class Scan(FileModel):
    """The image's latest vulnerability scan, as the admin's scanner reported it."""

    status: Literal["passed", "failed", "unscanned"] = "unscanned"
    at: datetime.date | None = Field(None, description="When it was scanned (YYYY-MM-DD)")


class Image(FileModel):
    """A curated image; researchers pick it by name."""

    name: str = Field(pattern=DNS_LABEL, max_length=63)
    image: str = Field(description="Reference pinned by tag or by digest")
    description: str = ""
    frameworks: dict[str, str] = Field(
        default_factory=dict, description="e.g. torch: '2.5', cuda: '12.4'"
    )
    owner: str = Field("", description="Who answers for the image, e.g. a person or a list")
    version: str = Field("", description="The image's own version; empty: the reference's tag")
    dockerfile_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the Dockerfile it is built from (images/build.py --pin-dockerfiles)",
    )
    scan: Scan = Field(default_factory=Scan)

    @field_validator("image")
    @classmethod
    def _pinned(cls, v: str) -> str:
        if not PINNED_IMAGE.match(v):
            raise ValueError(
                f"{v!r} is not pinned: give a tag other than 'latest' or an @sha256: digest"
            )
        return v


class ImagePolicy(FileModel):
    """Which images a team's jobs and sessions may run (:mod:`trainhub.imagepolicy`):
    the catalog images the team lists, or also any pinned image below ``allowed_prefixes``."""

    policy: Literal["catalog", "prefixes"] = "catalog"
    allowed_prefixes: list[str] = Field(
        default_factory=list, description="e.g. ghcr.io/vision-lab/ (with policy: prefixes)"
    )

    @field_validator("allowed_prefixes")
    @classmethod
    def _prefixes(cls, v: list[str]) -> list[str]:
        for prefix in v:
            if not prefix or any(c.isspace() for c in prefix) or "@" in prefix:
                raise ValueError(f"{prefix!r} is not an image prefix such as ghcr.io/acme/")
            if not prefix.endswith("/"):
                # Without it "ghcr.io/acme" would also allow ghcr.io/acme-other/...
                raise ValueError(f"{prefix!r} must end with '/', e.g. {prefix}/")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ImagePolicy:
        if self.policy == "prefixes" and not self.allowed_prefixes:
            raise ValueError("policy 'prefixes' needs allowed_prefixes")
        if self.policy == "catalog" and self.allowed_prefixes:
            raise ValueError("allowed_prefixes go with policy 'prefixes', not 'catalog'")
        return self
