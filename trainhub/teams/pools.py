"""The teams file's pools: sets of alike GPU nodes, chosen by node labels, with the taints
their jobs tolerate (each one a Kueue ResourceFlavor)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from trainhub.teams.fields import DNS_LABEL, FileModel
from trainhub.teams.sharing import Sharing

LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class Toleration(FileModel):
    key: str
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    def manifest(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Pool(FileModel):
    """A set of alike GPU nodes, chosen by node labels (a Kueue ResourceFlavor)."""

    name: str = Field(pattern=DNS_LABEL, max_length=63)
    node_labels: dict[str, str] = Field(min_length=1)
    tolerations: list[Toleration] = Field(default_factory=list)
    gpu_product: str | None = Field(None, description="e.g. NVIDIA-A100-SXM4-80GB")
    gpus_per_node: int = Field(ge=0, le=16)
    gpu_only: bool = Field(
        False, description="Only jobs that ask for GPUs run here; a CPU-only job is refused"
    )
    autoscaled: bool = Field(
        False,
        description="A cluster autoscaler adds its nodes on demand: no node now is expected, "
        "not a mistake to warn of",
    )
    sharing: Sharing | None = Field(
        None,
        description="Each GPU offered as shares (time-slicing or MIG): only sessions and jobs "
        "that ask for a share run here; gpus_per_node counts whole GPUs",
    )
    description: str = ""

    @field_validator("node_labels")
    @classmethod
    def _label_keys(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not LABEL_KEY.match(key):
                raise ValueError(f"{key!r} is not a Kubernetes label key")
        return v

    @property
    def shared_resource(self) -> str | None:
        return None if self.sharing is None else self.sharing.resource
