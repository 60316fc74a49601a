"""Pure renderers: the teams file -> the cluster objects that enforce it.

Namespaces (Pod Security ``restricted``), ResourceQuota, LimitRange, the sessions' RBAC (the
team's shared account, or where a controller runs each user's own account), NetworkPolicies,
the shared volume's claim (when the teams file sizes it), Kueue ResourceFlavors,
WorkloadPriorityClasses, ClusterQueues and LocalQueues, and ValidatingAdmissionPolicies that
keep Jobs in team namespaces on their team's queue and, where a controller runs, a session's
writes on its own user's Jobs and Services. Nothing here talks to a cluster.
"""

from __future__ import annotations

from typing import Any

import yaml

from trainhub.backends.kubernetes.controlplane import controller_objects
from trainhub.backends.kubernetes.identity import (
    HUB_USER_ANNOTATION,
    SESSION_ACCOUNT_PREFIX,
    USER_LABEL,
    owner_label,
    session_account,
)
from trainhub.jobs.quantities import format_bytes, format_cpu, parse_cpu, parse_quantity
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
SESSION_RIGHTS_POLICY = "trainhub-session-rights"
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


def notebook_rbac(team: Team, controlled: bool = False) -> list[Manifest]:
    """What a team member's session may do: run and watch jobs in its own namespace.

    ``controlled`` (a controller runs): the Role alone, bound by the spawner to each user's
    own session account (``session_account_objects``), and no Workload patch (suspension goes
    through the controller); the admission policy narrows its Jobs and Services to its user's.
    Otherwise the team's one shared ServiceAccount holds it, Workload patch included."""
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
    ]
    role: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(NOTEBOOK_ACCOUNT, ns),
        "rules": rules,
    }
    if controlled:
        return [role]
    # Suspend and resume deactivate and activate the team's own Workloads (spec.active).
    rules.append({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["patch"]})
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(NOTEBOOK_ACCOUNT, ns),
            "automountServiceAccountToken": True,
        },
        role,
        _role_binding(NOTEBOOK_ACCOUNT, NOTEBOOK_ACCOUNT, ns),
    ]


def _role_binding(name: str, account: str, ns: str) -> Manifest:
    """Binds the session Role to ``account``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(name, ns),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": NOTEBOOK_ACCOUNT,
        },
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
    }


def session_account_objects(team: Team, user: str) -> list[Manifest]:
    """``user``'s own session account in ``team``'s namespace, bound to the session Role
    (made by the spawner, with the hub's rights, before the session's pod)."""
    name = session_account(user)
    account = _meta(name, team.namespace, {USER_LABEL: owner_label(user)})
    account["annotations"] = {HUB_USER_ANNOTATION: user}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": account,
            "automountServiceAccountToken": True,
        },
        _role_binding(name, name, team.namespace),
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
            "metadata": _meta(volume.claim, team.namespace),
            "spec": spec,
        }
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
            "subjects": [_queue_reader_subject(teams, t) for t in teams.teams],
        },
    ]


def _queue_reader_subject(teams: Teams, team: Team) -> Manifest:
    if teams.controller is None:
        return {"kind": "ServiceAccount", "name": NOTEBOOK_ACCOUNT, "namespace": team.namespace}
    # Each user's own session account: the namespace's accounts, whose names are not known here.
    return {
        "kind": "Group",
        "apiGroup": "rbac.authorization.k8s.io",
        "name": f"system:serviceaccounts:{team.namespace}",
    }


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


def session_rights_policy() -> list[Manifest]:
    """A session account (``trainhub-user-<owner>``, identity.py) may create Jobs and Services
    only labelled ``trainhub.io/user=<owner>``, and update, patch or delete only those so
    labelled; the Jobs it creates run as the namespace's default account (a pod of another
    account would hold that account's token). Rendered where a controller runs: its own and
    the hub's accounts (and Kueue's, the garbage collector's, an admin's) are not session
    accounts, so the match conditions leave them out."""
    caller = "request.userInfo.username"

    def owner_of(obj: str) -> str:
        return (
            f"has({obj}.metadata.labels) && '{USER_LABEL}' in {obj}.metadata.labels ? "
            f"{obj}.metadata.labels['{USER_LABEL}'] : ''"
        )

    pod = "object.spec.template.spec"
    default_account = " && ".join(
        f"(!has({pod}.{field}) || {pod}.{field} in ['', 'default'])"
        for field in ("serviceAccountName", "serviceAccount")
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": _meta(SESSION_RIGHTS_POLICY),
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [group],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE", "DELETE"],
                            "resources": [resource],
                        }
                        for group, resource in (("batch", "jobs"), ("", "services"))
                    ]
                },
                "matchConditions": [
                    {
                        "name": "session-accounts",
                        # neither a namespace nor an account name holds a colon
                        "expression": f"{caller}.startsWith('system:serviceaccount:') && "
                        f"{caller}.contains(':{SESSION_ACCOUNT_PREFIX}')",
                    }
                ],
                "variables": [
                    {
                        "name": "prefix",
                        "expression": "'system:serviceaccount:' + request.namespace + "
                        f"':{SESSION_ACCOUNT_PREFIX}'",
                    },
                    {
                        "name": "caller",
                        "expression": f"{caller}.startsWith(variables.prefix) ? "
                        f"{caller}.substring(size(variables.prefix)) : ''",
                    },
                    {
                        "name": "owner",
                        "expression": f"request.operation == 'DELETE' ? '' : {owner_of('object')}",
                    },
                    {
                        "name": "was",
                        "expression": "request.operation == 'CREATE' ? '' : "
                        + owner_of("oldObject"),
                    },
                ],
                "validations": [
                    {
                        "expression": "variables.caller != ''",
                        "messageExpression": f"{caller} + ' acts only in its own team namespace'",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'CREATE' || "
                        "variables.was == variables.caller",
                        "messageExpression": "request.resource.resource + ' ' + request.name + "
                        f"' belongs to {USER_LABEL}=' + variables.was + ', and a session may "
                        "change or delete only those of its own user, ' + variables.caller",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'DELETE' || "
                        "variables.owner == variables.caller",
                        "messageExpression": "'a session labels its Jobs and Services "
                        f"{USER_LABEL}=' + variables.caller + ' (its own user): ' + "
                        "(variables.owner == '' ? 'this one has none' : 'not ' + variables.owner)",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'DELETE' || "
                        f"request.resource.resource != 'jobs' || ({default_account})",
                        "message": "a session's Jobs run as the namespace's default "
                        "ServiceAccount, not another account",
                        "reason": "Forbidden",
                    },
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": _meta(SESSION_RIGHTS_POLICY),
            "spec": {
                "policyName": SESSION_RIGHTS_POLICY,
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
    controlled = teams.controller is not None
    if controlled:
        objs += session_rights_policy()
    for team in teams.teams:
        objs += [
            resource_quota(teams, team),
            limit_range(team),
            *notebook_rbac(team, controlled),
            *network_policies(team),
            *shared_claim(team),
            local_queue(team),
        ]
    return objs


def helm_values(objs: list[Manifest], teams_sha256: str, version: str) -> dict[str, Any]:
    """The values of charts/trainhub that carry the rendered objects. The chart takes them
    whole rather than the teams file: Helm's templates cannot run this renderer (the teams
    file's validation, cohort arithmetic on quantities), and a second renderer written in
    templates would be a copy. ``version`` (trainhub's) must be the chart's appVersion, so
    objects rendered by another release are refused instead of installed."""
    return {"teams": {"renderedBy": version, "sha256": teams_sha256, "objects": objs}}


def to_yaml(objs: list[Manifest]) -> str:
    return "".join(
        "---\n" + yaml.safe_dump(o, sort_keys=False, default_flow_style=False) for o in objs
    )


def file_name(obj: Manifest) -> str:
    """A stable file name per object for ``trainhub admin render --out``."""
    ns = obj["metadata"].get("namespace")
    return "-".join(p for p in (ns, obj["kind"].lower(), obj["metadata"]["name"]) if p) + ".yaml"
