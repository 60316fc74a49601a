"""The teams file's ``controller:`` section: trainhub's controller on the cluster, its
namespace, image, replicas and resources (rendered by
:mod:`trainhub.backends.kubernetes.controlplane`)."""

from __future__ import annotations

from pydantic import Field

from trainhub.teams.fields import DNS_LABEL, FileModel


class ControllerResources(FileModel):
    cpu: str = "250m"
    memory: str = "512Mi"
    memory_limit: str = "1Gi"


class Controller(FileModel):
    """trainhub's control plane on the cluster (trainhub.controller): with this section, it
    keeps every job's promises (states, verdicts, retries, sweeps, alerts, usage) and sessions
    and the CLI only submit and read. It mounts every team's volume at the team's own
    ``mount_path`` through a claim of its own namespace (``shared_volume.controller_claim``)."""

    namespace: str = Field("trainhub-system", pattern=DNS_LABEL, max_length=63)
    image: str = Field(
        "trainhub-controller", description="A catalog image's name, or a pinned reference"
    )
    replicas: int = Field(2, ge=1, le=5, description="Candidates for the lease; one acts")
    resources: ControllerResources = Field(default_factory=ControllerResources)
    metrics_port: int = Field(8080, ge=1024, le=65535)
    per_user_ids: bool = Field(
        True,
        description="Each member's sessions and jobs run as a user id of their own and their "
        "job directories are theirs on the team volume (private until shared, never writable by "
        "teammates); the controller acts on them as their owner. False: a team's members share "
        "one id, and within a team the volume is no boundary",
    )
    first_user_id: int = Field(
        100000,
        ge=1000,
        description="Each member's sessions and jobs run as a user id of their own, given by "
        "the hub from this one up (kept in each team namespace's ConfigMap trainhub-user-ids)",
    )
