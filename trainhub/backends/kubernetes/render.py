"""Pure renderers: the teams file -> the cluster objects that enforce it.

Namespaces (Pod Security ``restricted``), ResourceQuota, LimitRange, the notebook's
ServiceAccount and RBAC, NetworkPolicies, Kueue ResourceFlavors, WorkloadPriorityClasses,
ClusterQueues and LocalQueues, and a ValidatingAdmissionPolicy that keeps Jobs in team
namespaces on their team's queue. Nothing here talks to a cluster.
"""

from __future__ import annotations

from typing import Any

import yaml

from trainhub.backends.kubernetes.controlplane import controller_objects
from trainhub.jobs.spec import parse_quantity
from trainhub.teams import Limits, Team, Teams

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TEAM_LABEL = "trainhub.io/team"
MANAGED_LABEL = "trainhub.io/managed"
NAMESPACE_QUEUE_LABEL = "trainhub.io/local-queue"
ROLE_LABEL = "trainhub.io/role"
WORKER_ROLE = "worker"
NOTEBOOK_ACCOUNT = "trainhub-notebook"
QUEUE_READER = "trainhub-queue-reader"
REQUIRE_QUEUE_POLICY = "trainhub-require-team-queue"
# Requests given to containers that name none (so that quota can count them). No GPU default:
# a pod that asks for no GPU must never get one.
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "256Mi"}

Manifest = dict[str, Any]


def priority_class_name(priority: str) -> str:
    return f"trainhub-{priority}"


def _meta(
    name: str, namespace: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/managed-by": "trainhub", **(labels or {})}
    return meta


# --- quantities --------------------------------------------------------------------------------
def _cpu(value: str) -> float:
    return float(parse_quantity(value))


def format_bytes(n: int) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def format_cpu(cores: float) -> str:
    return str(int(cores)) if cores == int(cores) else f"{round(cores * 1000)}m"


def _limit(limits: Limits | None, resource: str) -> float | None:
    if limits is None:
        return None
    value = {"gpus": limits.gpus, "cpu": limits.cpu, "memory": limits.memory}[resource]
    if value is None:
        return None
    if resource == "memory":
        return float(parse_quantity(str(value)))
    return float(value) if resource == "gpus" else _cpu(str(value))


def _nominal(team: Team, pool: str, resource: str) -> float:
    q = team.quota[pool]
    return {"gpus": float(q.gpus), "cpu": _cpu(q.cpu), "memory": float(parse_quantity(q.memory))}[
        resource
    ]


def reachable(teams: Teams, team: Team, resource: str) -> float:
    """The most of ``resource`` Kueue could ever admit for ``team``: nominal plus what it may
    borrow from the rest of its cohort, over all its pools. Used as the namespace's hard cap."""
    total = 0.0
    for pool, q in team.quota.items():
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
        total += nominal + (lendable if cap is None else min(cap, lendable))
    return total


# --- namespaced objects -------------------------------------------------------------------------
def namespace(team: Team) -> Manifest:
    labels = {TEAM_LABEL: team.name, MANAGED_LABEL: "true", NAMESPACE_QUEUE_LABEL: team.local_queue}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta(team.namespace, labels=labels),
    }


def resource_quota(teams: Teams, team: Team) -> Manifest:
    hard = {
        "requests.cpu": format_cpu(reachable(teams, team, "cpu")),
        "requests.memory": format_bytes(int(reachable(teams, team, "memory"))),
        f"requests.{GPU}": str(int(reachable(teams, team, "gpus"))),
    }
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta("trainhub-quota", team.namespace),
        "spec": {"hard": hard},
    }


def limit_range(team: Team) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta("trainhub-defaults", team.namespace),
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUESTS)}]},
    }


def notebook_rbac(team: Team) -> list[Manifest]:
    """What a team member's notebook server may do: run and watch jobs in its own namespace."""
    ns = team.namespace
    read = ["get", "list", "watch"]
    rules = [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": [*read, "create", "delete", "patch"],
        },
        # patch: a job's Service is given its Job as owner once the Job exists
        {
            "apiGroups": [""],
            "resources": ["services"],
            "verbs": [*read, "create", "delete", "patch"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": read},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": read},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": read},
        # Suspend and resume deactivate and activate the team's own Workloads (spec.active).
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["patch"]},
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(NOTEBOOK_ACCOUNT, ns),
            "automountServiceAccountToken": True,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(NOTEBOOK_ACCOUNT, ns),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(NOTEBOOK_ACCOUNT, ns),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": NOTEBOOK_ACCOUNT,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NOTEBOOK_ACCOUNT, "namespace": ns}],
        },
    ]


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
            "metadata": _meta("default-deny-ingress", ns),
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta("job-workers-peers", ns),
            "spec": {
                "podSelector": workers,
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": workers}]}],
            },
        },
    ]


def local_queue(team: Team) -> Manifest:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": _meta(team.local_queue, team.namespace),
        "spec": {"clusterQueue": team.cluster_queue},
    }


# --- cluster objects ----------------------------------------------------------------------------
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
                "metadata": _meta(pool.name),
                "spec": spec,
            }
        )
    return out


def priority_classes(teams: Teams) -> list[Manifest]:
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": _meta(priority_class_name(name)),
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
        "metadata": _meta(team.cluster_queue, labels={TEAM_LABEL: team.name}),
        "spec": spec,
    }


def queue_reader(teams: Teams) -> list[Manifest]:
    """Notebooks may read queue objects, to explain why a job waits (which quota is short),
    and nodes, to refuse a job no node of its pool could ever take (trainhub.jobs.placement)."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(QUEUE_READER),
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues", "resourceflavors", "workloadpriorityclasses"],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(QUEUE_READER),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": QUEUE_READER,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": NOTEBOOK_ACCOUNT, "namespace": t.namespace}
                for t in teams.teams
            ],
        },
    ]


def require_queue_policy() -> list[Manifest]:
    """Kueue only manages Jobs that name a queue; this refuses, in every trainhub namespace, a
    Job that names none or another team's queue, so no Job can bypass quota."""
    expression = (
        f"has(object.metadata.labels) && '{QUEUE_LABEL}' in object.metadata.labels && "
        f"object.metadata.labels['{QUEUE_LABEL}'] == "
        f"namespaceObject.metadata.labels['{NAMESPACE_QUEUE_LABEL}']"
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": _meta(REQUIRE_QUEUE_POLICY),
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["batch"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["jobs"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": expression,
                        "messageExpression": (
                            f"'Jobs in this namespace must carry the label {QUEUE_LABEL}=' + "
                            f"namespaceObject.metadata.labels['{NAMESPACE_QUEUE_LABEL}'] + "
                            "' so that Kueue admits them within the team quota'"
                        ),
                        "reason": "Forbidden",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": _meta(REQUIRE_QUEUE_POLICY),
            "spec": {
                "policyName": REQUIRE_QUEUE_POLICY,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}}},
            },
        },
    ]


def render(teams: Teams) -> list[Manifest]:
    """Every object, in an order that applies cleanly (namespaces and cluster objects first)."""
    objs: list[Manifest] = [namespace(t) for t in teams.teams]
    objs += controller_objects(teams)
    objs += (
        resource_flavors(teams) + priority_classes(teams) + [cluster_queue(t) for t in teams.teams]
    )
    objs += queue_reader(teams) + require_queue_policy()
    for team in teams.teams:
        objs += [
            resource_quota(teams, team),
            limit_range(team),
            *notebook_rbac(team),
            *network_policies(team),
            local_queue(team),
        ]
    return objs


def to_yaml(objs: list[Manifest]) -> str:
    return "".join(
        "---\n" + yaml.safe_dump(o, sort_keys=False, default_flow_style=False) for o in objs
    )


def file_name(obj: Manifest) -> str:
    """A stable file name per object for ``trainhub admin render --out``."""
    ns = obj["metadata"].get("namespace")
    return "-".join(p for p in (ns, obj["kind"].lower(), obj["metadata"]["name"]) if p) + ".yaml"
