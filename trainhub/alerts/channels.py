"""Where alerts go: the user's alerts file and the team's ``alerts:`` in the teams file.

The user's file is ``$TRAINHUB_HOME/alerts.yaml`` (or ``TRAINHUB_ALERTS_FILE``), beside the
other per-user files of the data directory::

    webhooks: [https://hooks.slack.com/services/T000/B000/XXXX]
    email: [ada@example.org]

A mistake is refused naming the file and the field (``alerts.yaml: webhooks[0]: ...``).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from trainhub.adminfiles import in_file, load_file, parse_yaml, validated

_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")


def _url(v: str) -> str:
    parts = urlsplit(v)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{v[:80]!r} is not an http(s) URL")
    return v


def _address(v: str) -> str:
    if not _ADDRESS.match(v):
        raise ValueError(f"{v[:80]!r} is not an e-mail address")
    return v


WebhookUrl = Annotated[str, AfterValidator(_url)]
Address = Annotated[str, AfterValidator(_address)]


class TeamEvent(StrEnum):
    QUOTA_SATURATED = "quota_saturated"  # every GPU of the team's quota in use for a while
    IDLE_GPU_SESSION = "idle_gpu_session"  # the idle-GPU service warned a session


class Channels(BaseModel):
    """Webhooks (Slack-compatible JSON) and e-mail addresses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    webhooks: list[WebhookUrl] = Field(default_factory=list)
    email: list[Address] = Field(default_factory=list)

    def __add__(self, other: Channels) -> Channels:
        return Channels(
            webhooks=list(dict.fromkeys([*self.webhooks, *other.webhooks])),
            email=list(dict.fromkeys([*self.email, *other.email])),
        )

    @property
    def empty(self) -> bool:
        return not (self.webhooks or self.email)


class TeamAlerts(Channels):
    """A team's channels (teams file, ``teams[i].alerts``) and the team events sent there."""

    events: list[TeamEvent] = Field(
        default_factory=lambda: list(TeamEvent), description="Team events to announce"
    )
    quota_saturated_minutes: float = Field(
        30.0, gt=0, description="How long every GPU of the quota must stay in use"
    )


class AlertsFileError(ValueError):
    pass


def user_alerts_file(home: Path | None = None) -> Path:
    from trainhub import settings

    explicit = os.environ.get("TRAINHUB_ALERTS_FILE")
    return Path(explicit).expanduser() if explicit else (home or settings.home()) / "alerts.yaml"


_refused = in_file(AlertsFileError)


def parse_channels(data: Any, source: str) -> Channels:
    if data is None:
        return Channels()
    return validated(Channels, data, _refused, source)


def user_channels(path: Path | None = None) -> Channels:
    """The user's channels; none when the file does not exist."""
    path = path or user_alerts_file()
    # Named by its name alone, and not in the parser's words: they quote the file, which may
    # not be the user's to show.
    return load_file(
        path, parse_channels, _refused, absent=Channels(), source=path.name, quote=False
    )


def member_alerts_path(user: str) -> PurePosixPath:
    """Where a team member keeps their channels on the team's shared volume (relative to its
    mount path): the session's TRAINHUB_ALERTS_FILE, read by the cluster's controller."""
    safe = re.sub(r"[^A-Za-z0-9._@-]", "-", user).lstrip(".") or "-"
    return PurePosixPath(".trainhub", "users", safe, "alerts.yaml")


def member_channels(team_root: Path, user: str, owner_id: int | None = None) -> Channels:
    """A team member's channels, read as the controller reads them: without following a link
    (a member could point their file at one of the controller's own), at most 64 KiB; where
    members own their files (``owner_id``: the member's id), only a file of theirs counts (a
    teammate could make one in the member's name)."""
    from trainhub.jobs import confined

    relative = member_alerts_path(user)
    try:
        raw = confined.read_bytes(team_root, relative, limit=64 * 1024, owner=owner_id)
        text = raw.decode()
    except FileNotFoundError:
        return Channels()
    except PermissionError:
        raise AlertsFileError(f"{relative.name} is not the member's own file") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise AlertsFileError(f"{relative.name}: cannot be read: {type(e).__name__}") from None
    return parse_channels(parse_yaml(text, relative.name, _refused, quote=False), relative.name)


@dataclass(frozen=True)
class Smtp:
    """TRAINHUB_SMTP_HOST (none: no e-mail), _PORT (25), _FROM, _STARTTLS (0/1), _USER and
    _PASSWORD (read by the sender only, never written to the outbox)."""

    host: str
    port: int = 25
    sender: str = ""
    starttls: bool = False
    user: str | None = None
    password: str | None = None

    @classmethod
    def from_env(cls) -> Smtp | None:
        env = os.environ
        host = env.get("TRAINHUB_SMTP_HOST")
        if not host:
            return None
        return cls(
            host=host,
            port=int(env.get("TRAINHUB_SMTP_PORT") or 25),
            sender=env.get("TRAINHUB_SMTP_FROM") or f"trainhub@{socket.getfqdn()}",
            starttls=env.get("TRAINHUB_SMTP_STARTTLS", "0").lower() in {"1", "true", "yes"},
            user=env.get("TRAINHUB_SMTP_USER") or None,
            password=env.get("TRAINHUB_SMTP_PASSWORD") or None,
        )
