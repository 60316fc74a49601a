"""Where trainhub keeps its state on one machine."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The data directory: ``$TRAINHUB_HOME``, else ``$XDG_DATA_HOME/trainhub``."""
    explicit = os.environ.get("TRAINHUB_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(xdg, "trainhub").resolve()


def jobs_root(base: Path | None = None) -> Path:
    return (base or home()) / "jobs"


def database(base: Path | None = None) -> Path:
    return (base or home()) / "trainhub.db"
