"""Who may do what in a team's registry (the rule is pure; the policy is the admin's).

Members register versions, move any alias that is not protected, archive and unarchive.
A protected alias (``production`` by default on a cluster team) is moved only by members who
hold the role that protects it. The admin writes it in the teams file, on the team::

    models:
      roles:
        model-approver: [ada, bo]          # hub user names
      protected_aliases:
        production: model-approver         # alias -> the role that moves it

Locally (one person's machine) nothing is protected unless ``models.yaml`` in the data
directory (``TRAINHUB_MODELS_FILE``) says so, with the same ``models:`` mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainhub.adminfiles import in_file, load_file, top_level, validated
from trainhub.errors import BackendUnavailable, NotAllowed
from trainhub.registry.refs import ALIAS

DEFAULT_ROLE = "model-approver"


class ModelPolicy(BaseModel):
    """A team's ``models:`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: dict[str, list[str]] = Field(
        default_factory=dict, description="Role name -> the hub users who hold it"
    )
    protected_aliases: dict[str, str] = Field(
        default_factory=lambda: {"production": DEFAULT_ROLE},
        description="Alias -> the role whose members alone move it",
    )

    @field_validator("protected_aliases")
    @classmethod
    def _aliases(cls, v: dict[str, str]) -> dict[str, str]:
        for alias in v:
            if not ALIAS.match(alias):
                raise ValueError(f"{alias!r} is not an alias (lower-case letters, digits, _ -)")
        return v


UNPROTECTED = ModelPolicy(protected_aliases={})


def check_move(policy: ModelPolicy, user: str, alias: str, *, model: str, team: str | None) -> None:
    """Refuse (:class:`NotAllowed`, a sentence naming the role) ``user`` moving ``alias`` of
    ``model`` where the alias is protected by a role they do not hold."""
    role = policy.protected_aliases.get(alias)
    if role is None or user in policy.roles.get(role, []):
        return
    holders = ", ".join(policy.roles.get(role, [])) or "nobody yet"
    of_team = f" of team {team}" if team else ""
    raise NotAllowed(
        f"Moving the alias {alias} of model {model} needs the role {role}{of_team} (held by "
        f"{holders}); {user} does not hold it. An admin grants it in models.roles."
    )


class ModelsFileError(BackendUnavailable):
    """A refused local models file (the admin's to mend): ``file: field: sentence``."""


_refused = in_file(ModelsFileError)


def parse_models_file(data: Any, source: str) -> ModelPolicy:
    data = top_level(data, source, _refused, ("models",), "must be a mapping with models:")
    if data is None:
        return UNPROTECTED
    return validated(ModelPolicy, data.get("models") or {}, _refused, source, "models")


def load_models_file(path: Path) -> ModelPolicy:
    """The local policy; no file protects nothing (the machine is one person's)."""
    return load_file(path, parse_models_file, _refused, absent=UNPROTECTED)
