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
from trainhub.teams import Team, Teams


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


def _flavor_resource(team: Team, pool: str, key: str, resource: str) -> dict[str, Any]:
    q = team.quota[pool]
    nominal = {"gpus": str(q.gpus), "cpu": q.cpu, "memory": q.memory}[key]
    entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
    for field, limits in (("borrowingLimit", q.borrowing_limit), ("lendingLimit", q.lending_limit)):
        value = None if limits is None else getattr(limits, key)
        if value is not None and team.cohort:  # Kueue refuses both limits outside a cohort
            entry[field] = str(value)
    return entry


def cluster_queue(team: Team) -> Manifest:
    flavors = [
        {
            "name": pool,
            "resources": [
                _flavor_resource(team, pool, key, res)
                for key, res in (("cpu", "cpu"), ("memory", "memory"), ("gpus", GPU))
            ],
        }
        for pool in team.quota
    ]
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": flavors}],
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
