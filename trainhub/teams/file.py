"""The whole teams file: its pools, images, teams, priorities and controller, checked across
sections when read (:mod:`trainhub.teams.references`), and the lookups callers use."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from trainhub.teams.controller import Controller
from trainhub.teams.fields import FileModel
from trainhub.teams.images import Image
from trainhub.teams.pools import Pool
from trainhub.teams.references import ReferenceErrors, known_names, reference_errors
from trainhub.teams.team import Team, TeamDataset

PRIORITY_NAMES = ("low", "normal", "high")


class Teams(FileModel):
    pools: list[Pool] = Field(min_length=1)
    images: list[Image] = Field(default_factory=list)
    image_catalog: str | None = Field(
        None, description="YAML file with more images (path relative to this file)"
    )
    priorities: dict[Literal["low", "normal", "high"], int] = Field(
        default_factory=lambda: {"low": 100, "normal": 1000, "high": 10000}  # type: ignore[arg-type]
    )
    teams: list[Team] = Field(min_length=1)
    controller: Controller | None = Field(
        None, description="trainhub's controller on the cluster; none: sessions reconcile"
    )

    @field_validator("priorities")
    @classmethod
    def _ordered(cls, v: dict[str, int]) -> dict[str, int]:
        missing = [p for p in PRIORITY_NAMES if p not in v]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        values = [v[p] for p in PRIORITY_NAMES]
        if values != sorted(set(values)):
            raise ValueError("values must increase strictly from low to normal to high")
        return v

    @model_validator(mode="after")
    def _references(self) -> Teams:
        errors = reference_errors(self)
        if errors:
            raise ReferenceErrors(errors)
        return self

    # --- lookups ---------------------------------------------------------------------------------
    def team(self, name: str) -> Team:
        for team in self.teams:
            if team.name == name:
                return team
        raise KeyError(f"no team {name!r} (known: {known_names(t.name for t in self.teams)})")

    def pool(self, name: str) -> Pool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(f"no pool {name!r} (known: {known_names(p.name for p in self.pools)})")

    def image(self, name: str) -> Image:
        for image in self.images:
            if image.name == name:
                return image
        raise KeyError(f"no image {name!r} (known: {known_names(i.name for i in self.images)})")

    def readable_datasets(self, team: str) -> dict[str, tuple[Team, TeamDataset]]:
        """The datasets team ``team`` may read: its own, and those other teams share with it
        (``teams: [...]``), each with the team that declared it."""
        found: dict[str, tuple[Team, TeamDataset]] = {}
        for owner in self.teams:
            for name, ds in owner.datasets.items():
                if owner.name == team or team in ds.teams:
                    found.setdefault(name, (owner, ds))
        return dict(sorted(found.items()))

    def teams_of(self, groups: list[str]) -> list[Team]:
        """The teams a JupyterHub user with these groups belongs to."""
        return [t for t in self.teams if set(t.groups) & set(groups)]
