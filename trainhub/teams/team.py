"""One team of the teams file: who belongs to it (JupyterHub groups), its namespace, quota,
images, shared volume, datasets, alerts, retention and MLflow server."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import PurePosixPath
from typing import Any

from pydantic import Field, field_validator

from trainhub.alerts.channels import TeamAlerts
from trainhub.datasets.catalog import DatasetEntry, check_names, mount_path
from trainhub.jobs.shares import parse_share, share_text
from trainhub.outputs.retention import Retention
from trainhub.registry.policy import ModelPolicy
from trainhub.teams.fields import DNS_LABEL, FileModel, quantity
from trainhub.teams.images import ImagePolicy
from trainhub.teams.quotas import PoolQuota, Preemption
from trainhub.tracking.config import MlflowServer


class SharedVolume(FileModel):
    """The team's PersistentVolumeClaim holding job directories; mounted at the same path
    everywhere."""

    claim: str = Field(pattern=DNS_LABEL, max_length=253)
    mount_path: str
    controller_claim: str | None = Field(
        None,
        pattern=DNS_LABEL,
        max_length=253,
        description="The claim in the controller's namespace bound to the same storage "
        "(default: <team>-<claim>)",
    )
    # With a size, the claim is one of the rendered objects (admin render/apply, the chart): a
    # ReadWriteMany claim of that size, of storage_class or the cluster's default class.
    # Without, the administrator makes the claim (an existing volume, a static PV).
    size: str | None = None
    storage_class: str | None = Field(None, pattern=DNS_LABEL, max_length=253)

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> str | None:
        return None if v is None else quantity(v)

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        p = PurePosixPath(v)
        if not p.is_absolute() or ".." in p.parts or p == PurePosixPath("/"):
            raise ValueError(f"{v!r} must be an absolute path below /, without '..'")
        return str(p)


# A team's dataset has the one schema of a declared dataset (trainhub.datasets.catalog).
TeamDataset = DatasetEntry


class Team(FileModel):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    groups: list[str] = Field(
        min_length=1, description="JupyterHub groups whose members belong to the team"
    )
    namespace: str = Field(max_length=63)
    quota: dict[str, PoolQuota] = Field(min_length=1, description="Nominal quota per pool")
    cohort: str | None = Field(None, pattern=DNS_LABEL, max_length=63)
    preemption: Preemption = Field(default_factory=Preemption)
    images: list[str] = Field(
        min_length=1, description="Names of the curated images the team may use"
    )
    image_policy: ImagePolicy = Field(default_factory=ImagePolicy)
    session_gpus: list[int | str] = Field(
        default_factory=lambda: [0],
        description='GPU sizes offered for sessions: whole GPUs, or a share "1/N" of a pool '
        "that shares its GPUs N ways",
    )
    shared_volume: SharedVolume
    datasets: dict[str, TeamDataset] = Field(default_factory=dict)
    local_queue: str = Field("jobs", pattern=DNS_LABEL, max_length=63)
    alerts: TeamAlerts | None = Field(
        None, description="Where the team's alerts go (trainhub/alerts): webhooks, e-mail"
    )
    retention: Retention | None = Field(
        None, description="How long the team's job outputs are kept (trainhub cleanup)"
    )
    models: ModelPolicy = Field(
        default_factory=ModelPolicy,
        description="The team's model registry: roles, and the aliases only a role moves "
        "(production, by default)",
    )
    mlflow: MlflowServer | None = Field(
        None,
        description="An MLflow tracking server every job of the team is mirrored into "
        "(trainhub/tracking)",
    )
    wait_grace_minutes: int = Field(
        10,
        ge=0,
        le=24 * 60,
        description="How long a job's pod may wait on a cause that cannot heal by waiting (an "
        "image not found, an untolerated taint) before the job ends with that cause",
    )

    @field_validator("namespace")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if not re.match(DNS_LABEL, v):
            raise ValueError(f"{v!r} is not a DNS label (lower-case letters, digits and '-')")
        if v.startswith("kube-") or v in {"default", "kueue-system"}:
            raise ValueError(f"{v!r} is reserved for the cluster itself")
        return v

    @field_validator("session_gpus")
    @classmethod
    def _sizes(cls, v: list[int | str]) -> list[int | str]:
        sizes: set[int | str] = set()
        for n in v:
            if isinstance(n, str) and n.strip().isdigit():
                n = int(n)
            if isinstance(n, str):
                sizes.add(share_text(parse_share(n)))
            elif n < 0 or n > 16:
                raise ValueError("sizes must be between 0 and 16")
            else:
                sizes.add(n)
        return sorted(sizes, key=lambda n: Fraction(n) if isinstance(n, int) else parse_share(n))

    @field_validator("datasets")
    @classmethod
    def _dataset_names(cls, v: dict[str, TeamDataset]) -> dict[str, TeamDataset]:
        check_names(v)
        return v

    @property
    def session_shares(self) -> list[Fraction]:
        """The shares of a GPU offered for sessions (``"1/4"`` -> 1/4)."""
        return [parse_share(n) for n in self.session_gpus if isinstance(n, str)]

    @property
    def cluster_queue(self) -> str:
        return self.name

    def dataset_mount(self, name: str) -> str:
        return mount_path(name)
