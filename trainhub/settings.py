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


def workspace_root() -> Path:
    return Path(os.environ.get("TRAINHUB_WORKSPACE") or os.getcwd()).resolve()


def make_service(workspace: Path | None = None):
    """The job service for this environment (local backend unless configured otherwise)."""
    from trainhub.jobs.service import JobService

    backend: Backend
    backend_name = os.environ.get("TRAINHUB_BACKEND", "local")
    if backend_name == "local":
        from trainhub.backends.local.backend import LocalBackend

        home = paths.home()
        backend = LocalBackend(home)
        jobs_root = paths.jobs_root(home)
    elif backend_name == "kubernetes":
        from trainhub.backends.kubernetes.backend import KubernetesBackend

        k8s = KubernetesBackend.from_env()
        backend, jobs_root = k8s, k8s.jobs_root
    else:
        raise ValueError(f"TRAINHUB_BACKEND={backend_name!r}: unknown backend (use 'local' or 'kubernetes')")
    return JobService(
        backend, workspace_root=workspace or workspace_root(), jobs_root=jobs_root, allow_pip=allow_pip()
    )
