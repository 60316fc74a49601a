"""A pool whose GPUs are shared: each GPU offered as N shares, the way NVIDIA's device plugin
does it, time-sliced replicas advertised as ``nvidia.com/gpu.shared`` (renameByDefault), or
MIG partitions of one profile advertised as ``nvidia.com/mig-<profile>``.

Quota and usage count one share as 1/N GPU: a team's ``gpus: 1`` in a pool of 4 replicas is 4
units of the shared resource in its ClusterQueue and ResourceQuota.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import Field

from trainhub.jobs.shares import MAX_SHARES, MIG_PREFIX, SHARED_GPU
from trainhub.teams.fields import FileModel

# The labels NVIDIA's GPU feature discovery puts on a node that shares its GPUs.
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"


class Sharing(FileModel):
    strategy: Literal["time-slicing", "mig"]
    replicas: int = Field(
        ge=2,
        le=MAX_SHARES,
        description="Shares per GPU: time-sliced replicas, or MIG partitions of the profile",
    )
    profile: str | None = Field(
        None, pattern=r"^[1-7]g\.[0-9]+gb$", description="MIG: each share's profile (1g.10gb)"
    )

    def profile_error(self) -> str | None:
        """Why ``profile`` does not go with ``strategy`` (checked with the file's other rules,
        so that the refusal names ``pools[i].sharing.profile``)."""
        if self.strategy == "mig" and self.profile is None:
            return "MIG sharing names the partition profile each share is, e.g. 1g.10gb"
        if self.strategy == "time-slicing" and self.profile is not None:
            return "only MIG sharing has partition profiles"
        return None

    @property
    def resource(self) -> str:
        """What the nodes advertise and pods request, one unit a share."""
        return SHARED_GPU if self.strategy == "time-slicing" else MIG_PREFIX + str(self.profile)

    @property
    def share(self) -> Fraction:
        return Fraction(1, self.replicas)
