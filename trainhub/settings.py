"""Which backend and where: read from the environment, so the CLI, the Python API inside a
notebook and the server extension agree without any configuration file."""

from __future__ import annotations

import os
from pathlib import Path

from trainhub import paths
from trainhub.backends.base import Backend


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def allow_pip() -> bool:
    """Admins turn ``%pip install`` in submitted notebooks off with TRAINHUB_ALLOW_PIP=0."""
    return _flag("TRAINHUB_ALLOW_PIP", True)


def warm_start() -> bool:
    """TRAINHUB_WARM_START=0: torchrun starts each rank's runner itself (see trainhub.handoff)."""
    return _flag("TRAINHUB_WARM_START", True)


def workspace_root() -> Path:
    return Path(os.environ.get("TRAINHUB_WORKSPACE") or os.getcwd()).resolve()


def make_service(workspace: Path | None = None):
    """The job service for this environment (local backend unless configured otherwise)."""
    from trainhub.jobs.service import JobService

    backend = backend_class().from_settings(paths.home())
    return JobService(
        backend, workspace_root=workspace or workspace_root(), jobs_root=backend.jobs_root,
        allow_pip=allow_pip(),
    )


def backend_class() -> type[Backend]:
    """TRAINHUB_BACKEND: 'local' (the default) or 'kubernetes' (set by the hub's spawner)."""
    name = os.environ.get("TRAINHUB_BACKEND", "local")
    if name == "local":
        from trainhub.backends.local.backend import LocalBackend

        return LocalBackend
    if name == "kubernetes":
        from trainhub.backends.kubernetes.backend import KubernetesBackend

        return KubernetesBackend
    raise ValueError(f"TRAINHUB_BACKEND={name!r}: unknown backend (use 'local' or 'kubernetes')")
