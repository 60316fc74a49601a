"""A team namespace's own objects: the Namespace (Pod Security ``restricted``), its
ResourceQuota (the most Kueue could ever admit for the team, cohort borrowing included), the
LimitRange of default requests, the NetworkPolicies and the shared volume's claim.
"""

from __future__ import annotations

from typing import Any

from trainhub.backends.kubernetes.names import (
    GPU,
    MANAGED_LABEL,
    NAMESPACE_QUEUE_LABEL,
    ROLE_LABEL,
    TEAM_LABEL,
    WORKER_ROLE,
    Manifest,
    meta,
)
from trainhub.jobs.quantities import format_bytes, format_cpu, parse_cpu, parse_quantity
from trainhub.teams import Limits, Team, Teams

# Requests given to containers that name none (so that quota can count them). No GPU default:
# a pod that asks for no GPU must never get one.
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "256Mi"}


def _limit(limits: Limits | None, resource: str) -> float | None:
    if limits is None:
        return None
    value = {"gpus": limits.gpus, "cpu": limits.cpu, "memory": limits.memory}[resource]
    if value is None:
        return None
    if resource == "memory":
        return float(parse_quantity(str(value)))
    return float(value) if resource == "gpus" else parse_cpu(str(value))


def _nominal(team: Team, pool: str, resource: str) -> float:
    q = team.quota[pool]
    return {
        "gpus": float(q.gpus),
        "cpu": parse_cpu(q.cpu),
        "memory": float(parse_quantity(q.memory)),
    }[resource]


def reachable(teams: Teams, team: Team, resource: str, gpu: str = GPU) -> float:
    """The most of ``resource`` Kueue could ever admit for ``team``: nominal plus what it may
    borrow from the rest of its cohort, over all its pools. Used as the namespace's hard cap.
    GPUs are counted in one GPU resource ``gpu``, over the pools that advertise it, in its
    units (a pool sharing each GPU N ways has N units a GPU)."""
    total = 0.0
    for pool, q in team.quota.items():
        units = 1
        if resource == "gpus":
            sharing = teams.pool(pool).sharing
            if (sharing.resource if sharing else GPU) != gpu:
                continue
            units = sharing.replicas if sharing else 1
        nominal = _nominal(team, pool, resource)
        lendable = 0.0
        if team.cohort:
            for other in teams.teams:
                if other is team or other.cohort != team.cohort or pool not in other.quota:
                    continue
                own = _nominal(other, pool, resource)
                cap = _limit(other.quota[pool].lending_limit, resource)
                lendable += own if cap is None else min(cap, own)
        cap = _limit(q.borrowing_limit, resource)
        total += units * (nominal + (lendable if cap is None else min(cap, lendable)))
    return total


def namespace(team: Team) -> Manifest:
    labels = {TEAM_LABEL: team.name, MANAGED_LABEL: "true", NAMESPACE_QUEUE_LABEL: team.local_queue}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta(team.namespace, labels=labels),
    }


def resource_quota(teams: Teams, team: Team) -> Manifest:
    hard = {
        "requests.cpu": format_cpu(reachable(teams, team, "cpu")),
        "requests.memory": format_bytes(int(reachable(teams, team, "memory"))),
        f"requests.{GPU}": str(int(reachable(teams, team, "gpus"))),
    }
    for shared in sorted({teams.pool(p).shared_resource for p in team.quota} - {None}):
        hard[f"requests.{shared}"] = str(int(reachable(teams, team, "gpus", str(shared))))
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": meta("trainhub-quota", team.namespace),
        "spec": {"hard": hard},
    }


def limit_range(team: Team) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": meta("trainhub-defaults", team.namespace),
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUESTS)}]},
    }


def network_policies(team: Team) -> list[Manifest]:
    """Nothing may connect into the namespace's pods, except a job's workers to one another
    (rendezvous, NCCL). Outbound traffic (DNS, storage, registries) is left to the cluster's
    policy."""
    ns = team.namespace
    workers = {"matchLabels": {ROLE_LABEL: WORKER_ROLE}}
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": meta("default-deny-ingress", ns),
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": meta("job-workers-peers", ns),
            "spec": {
                "podSelector": workers,
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": workers}]}],
            },
        },
    ]


def shared_claim(team: Team) -> list[Manifest]:
    """The team's shared volume, when the teams file sizes it: job directories and files that
    every session and worker of the team mounts, hence ReadWriteMany."""
    volume = team.shared_volume
    if volume.size is None:
        return []
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storage_class:
        spec["storageClassName"] = volume.storage_class
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(volume.claim, team.namespace),
            "spec": spec,
        }
    ]
