"""What the config endpoint answers, and the dry run of a submit (pure apart from the backend)."""

from __future__ import annotations

from typing import Any

from annotated_types import Le

from trainhub.backends.base import Backend
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import JobSpec, Resources

LIMIT_FIELDS = {
    "max_workers": "workers",
    "max_processes_per_worker": "processes_per_worker",
    "max_gpus_per_worker": "gpus_per_worker",
}


def spec_upper_bound(field: str) -> int:
    """The ``le=`` bound the JobSpec puts on a Resources field."""
    for item in Resources.model_fields[field].metadata:
        if isinstance(item, Le):
            return int(item.le)
    raise LookupError(f"Resources.{field} has no upper bound")


def backend_limits(backend: Backend) -> dict[str, int]:
    """The most a job may ask for: the spec's bounds, narrowed to the machine when it is known."""
    limits = {key: spec_upper_bound(field) for key, field in LIMIT_FIELDS.items()}
    capacity = getattr(backend, "capacity", None)  # the local backend knows its machine
    if capacity is not None:
        limits["max_workers"] = min(limits["max_workers"], capacity.slots)
        limits["max_processes_per_worker"] = min(limits["max_processes_per_worker"], capacity.slots)
        limits["max_gpus_per_worker"] = min(limits["max_gpus_per_worker"], len(capacity.gpus))
    return limits


def config_payload(
    backend: Backend,
    *,
    user: str,
    allow_pip: bool,
    images: list[dict[str, Any]],
    teams: list[dict[str, Any]],
    limits: dict[str, int],
) -> dict[str, Any]:
    catalog = backend.catalog()  # a cluster's teams file, unless the admin configured a list
    return {
        "backend": backend.name,
        "features": sorted(f.value for f in backend.features),
        "images": images or catalog["images"],
        "teams": teams or catalog["teams"],
        "limits": {**backend_limits(backend), **limits},
        "user": user,
        "allow_pip": allow_pip,
    }


def dry_run(service: JobService, body: dict[str, Any], *, user: str) -> JobSpec:
    """Everything a submit checks, without making a job."""
    return service.validate(body, user=user)
