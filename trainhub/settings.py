"""Settings read from the environment, so the CLI, the Python API inside a notebook and the
server extension agree without any configuration file. Only reads: what is built from the
settings (the backend, the job service) is built in :mod:`trainhub.backends.factory`."""

from __future__ import annotations

import os
from pathlib import Path


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def home() -> Path:
    """The data directory: ``$TRAINHUB_HOME``, else ``$XDG_DATA_HOME/trainhub``."""
    explicit = os.environ.get("TRAINHUB_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(xdg, "trainhub").resolve()


def jobs_root(base: Path | None = None) -> Path:
    return (base or home()) / "jobs"


def database(base: Path | None = None) -> Path:
    return (base or home()) / "trainhub.db"


def backend_name() -> str:
    """TRAINHUB_BACKEND: 'local' (the default) or 'kubernetes' (set by the hub's spawner)."""
    return os.environ.get("TRAINHUB_BACKEND", "local")


def allow_pip() -> bool:
    """Admins turn ``%pip install`` in submitted notebooks off with TRAINHUB_ALLOW_PIP=0."""
    return _flag("TRAINHUB_ALLOW_PIP", True)


def workspace_root() -> Path:
    return Path(os.environ.get("TRAINHUB_WORKSPACE") or os.getcwd()).resolve()


def dataset_roots() -> list[Path]:
    """TRAINHUB_DATASET_ROOTS: directories (separated by ``:``) below which a job may name
    datasets, besides the workspace; a path elsewhere is refused without being looked at."""
    raw = os.environ.get("TRAINHUB_DATASET_ROOTS", "")
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]


WASTE_UTILIZATION_ENV = "TRAINHUB_WASTE_UTILIZATION_PCT"


def waste_utilization_pct() -> float:
    """TRAINHUB_WASTE_UTILIZATION_PCT: GPU utilization (%, default 10) under which allocated GPU
    time counts as waste in usage accounting."""
    raw = os.environ.get(WASTE_UTILIZATION_ENV, "").strip()
    if not raw:
        return 10.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise ValueError(f"{WASTE_UTILIZATION_ENV}={raw!r}: expected a percentage from 0 to 100")
    return value


def datasets_file(base: Path | None = None) -> Path:
    """TRAINHUB_DATASETS_FILE, else ``datasets.yaml`` in the data directory: the datasets the
    local backend offers by name (:mod:`trainhub.datasets.catalog`)."""
    explicit = os.environ.get("TRAINHUB_DATASETS_FILE")
    return Path(explicit).expanduser() if explicit else (base or home()) / "datasets.yaml"


def images_file(base: Path | None = None) -> Path:
    """TRAINHUB_IMAGES_FILE, else ``images.yaml`` in the data directory: the images and the
    image policy of the local backend (:mod:`trainhub.imagepolicy`)."""
    explicit = os.environ.get("TRAINHUB_IMAGES_FILE")
    return Path(explicit).expanduser() if explicit else (base or home()) / "images.yaml"


def team() -> str | None:
    """TRAINHUB_TEAM: the team whose datasets this installation's user may read (on a cluster
    the spawner sets it for each session)."""
    return os.environ.get("TRAINHUB_TEAM") or None


def retention_file(base: Path | None = None) -> Path:
    """TRAINHUB_RETENTION_FILE, else ``retention.yaml`` in the data directory: how long the
    local backend keeps job outputs (:mod:`trainhub.outputs.retention`)."""
    explicit = os.environ.get("TRAINHUB_RETENTION_FILE")
    return Path(explicit).expanduser() if explicit else (base or home()) / "retention.yaml"


def models_file(base: Path | None = None) -> Path:
    """TRAINHUB_MODELS_FILE, else ``models.yaml`` in the data directory: which aliases of the
    local model registry are protected, and who holds the roles that move them."""
    explicit = os.environ.get("TRAINHUB_MODELS_FILE")
    return Path(explicit) if explicit else (base or home()) / "models.yaml"
