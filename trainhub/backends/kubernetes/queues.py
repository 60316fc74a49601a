"""Kueue's objects from the teams file: a ResourceFlavor per pool, a WorkloadPriorityClass per
priority, a ClusterQueue per team (its quota per pool, cohort, borrowing and lending limits,
preemption) and the LocalQueue in its namespace.
"""

from __future__ import annotations

from typing import Any

from trainhub.backends.kubernetes.names import (
    GPU,
    KUEUE_API,
    TEAM_LABEL,
    Manifest,
    meta,
    priority_class_name,
)
from trainhub.teams import Pool, Team, Teams


def local_queue(team: Team) -> Manifest:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": meta(team.local_queue, team.namespace),
        "spec": {"clusterQueue": team.cluster_queue},
    }


def resource_flavors(teams: Teams) -> list[Manifest]:
    out = []
    for pool in teams.pools:
        spec: dict[str, Any] = {"nodeLabels": dict(pool.node_labels)}
        if pool.tolerations:
            spec["tolerations"] = [t.manifest() for t in pool.tolerations]
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ResourceFlavor",
                "metadata": meta(pool.name),
                "spec": spec,
            }
        )
    return out


def priority_classes(teams: Teams) -> list[Manifest]:
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": meta(priority_class_name(name)),
            "value": value,
            "description": f"trainhub {name} priority",
        }
        for name, value in teams.priorities.items()
    ]


def _flavor_resource(team: Team, pool: Pool, key: str, resource: str) -> dict[str, Any]:
    """One resource of one flavor. A pool's GPUs are counted in the resource its nodes
    advertise (``nvidia.com/gpu``, or a share's) as units: one GPU of a pool shared N ways is
    N units; the pool has none of the other GPU resources."""
    q = team.quota[pool.name]
    units = 1 if pool.sharing is None else pool.sharing.replicas
    mine = key != "gpus" or resource == (pool.shared_resource or GPU)
    nominal = {"gpus": str(q.gpus * units), "cpu": q.cpu, "memory": q.memory}[key]
    entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal if mine else "0"}
    for field, limits in (("borrowingLimit", q.borrowing_limit), ("lendingLimit", q.lending_limit)):
        value = None if limits is None or not mine else getattr(limits, key)
        if value is not None and team.cohort:  # Kueue refuses both limits outside a cohort
            entry[field] = str(value * units if key == "gpus" else value)
    return entry


def gpu_resources(teams: Teams, team: Team) -> list[str]:
    """The GPU resources of the team's ClusterQueue: whole GPUs, then each kind of share its
    pools offer. Kueue covers a resource in one resource group only, so every flavor lists
    them all (quota 0 where the pool has none)."""
    shared = {teams.pool(p).shared_resource for p in team.quota} - {None}
    return [GPU, *sorted(shared)]  # type: ignore[list-item]


def cluster_queue(team: Team, teams: Teams) -> Manifest:
    gpus = gpu_resources(teams, team)
    resources = [("cpu", "cpu"), ("memory", "memory"), *(("gpus", g) for g in gpus)]
    flavors = [
        {
            "name": pool,
            "resources": [
                _flavor_resource(team, teams.pool(pool), key, res) for key, res in resources
            ],
        }
        for pool in team.quota
    ]
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", *gpus], "flavors": flavors}],
        "preemption": {
            "withinClusterQueue": team.preemption.within_cluster_queue,
            "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": team.preemption.borrow_within_cohort},
        },
    }
    if team.cohort:
        spec["cohortName"] = team.cohort
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": meta(team.cluster_queue, labels={TEAM_LABEL: team.name}),
        "spec": spec,
    }
