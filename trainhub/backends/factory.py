"""Builds the backend and the job service that the settings describe."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from trainhub import settings

if TYPE_CHECKING:
    from trainhub.backends.base import Backend
    from trainhub.jobs.service import JobService


def backend_class(name: str | None = None) -> type[Backend]:
    """The backend named by TRAINHUB_BACKEND (``local`` unless the hub's spawner says otherwise)."""
    name = name or settings.backend_name()
    if name == "local":
        from trainhub.backends.local.backend import LocalBackend

        return LocalBackend
    if name == "kubernetes":
        from trainhub.backends.kubernetes.backend import KubernetesBackend

        return KubernetesBackend
    raise ValueError(f"TRAINHUB_BACKEND={name!r}: unknown backend (use 'local' or 'kubernetes')")


def make_service(workspace: Path | None = None) -> JobService:
    """The job service for this environment (local backend unless configured otherwise)."""
    from trainhub.jobs.service import JobService
    from trainhub.schedules.local import attach

    backend = backend_class().from_settings(settings.home())
    service = JobService(
        backend,
        workspace_root=workspace or settings.workspace_root(),
        jobs_root=backend.jobs_root,
        allow_pip=settings.allow_pip(),
    )
    attach(service, settings.home())
    return service


@cache
def shared_service() -> JobService:
    """The one job service of this process (a notebook's kernel, the CLI), built on first use."""
    return make_service()
