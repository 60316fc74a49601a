"""The sessions' rights: the Role a team member's session holds in its namespace (through the
team's shared account, or where a controller runs each user's own account), and the
ClusterRole that lets sessions read queue objects and nodes.
"""

from __future__ import annotations

from trainhub.backends.kubernetes.controlplane import CONTROLLER
from trainhub.backends.kubernetes.identity import (
    HUB_USER_ANNOTATION,
    USER_LABEL,
    owner_label,
    session_account,
)
from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT, Manifest, meta
from trainhub.teams import Team, Teams

QUEUE_READER = "trainhub-queue-reader"


def notebook_rbac(team: Team, controlled: bool = False, own_ids: bool = False) -> list[Manifest]:
    """What a team member's session may do: run and watch jobs in its own namespace.

    ``controlled`` (a controller runs): the Role alone, bound by the spawner to each user's
    own session account (``session_account_objects``), and no Workload patch (suspension goes
    through the controller); the admission policy narrows its Jobs and Services to its user's.
    Otherwise the team's one shared ServiceAccount holds it, Workload patch included.
    ``own_ids`` (members own their files): no pods' logs either, which RBAC cannot narrow to
    the member's own pods; a job's logs are read from its directory."""
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
        *([] if own_ids else [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]),
        {"apiGroups": [""], "resources": ["events"], "verbs": read},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": read},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": read},
    ]
    role: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta(NOTEBOOK_ACCOUNT, ns),
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
            "metadata": meta(NOTEBOOK_ACCOUNT, ns),
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
        "metadata": meta(name, ns),
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
    account = meta(name, team.namespace, {USER_LABEL: owner_label(user)})
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


def queue_reader(teams: Teams) -> list[Manifest]:
    """Notebooks may read queue objects, to explain why a job waits (which quota is short),
    and nodes, to refuse a job no node of its pool could ever take (trainhub.jobs.placement).
    So may the controller, where there is one: it records why a job waits and ends one that
    no node could ever take (trainhub.backends.kubernetes.waits), and reads nothing else
    outside the team namespaces."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(QUEUE_READER),
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
            "metadata": meta(QUEUE_READER),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": QUEUE_READER,
            },
            "subjects": [_queue_reader_subject(teams, t) for t in teams.teams]
            + _controller_subject(teams),
        },
    ]


def _controller_subject(teams: Teams) -> list[Manifest]:
    if teams.controller is None:
        return []
    return [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": teams.controller.namespace}]


def _queue_reader_subject(teams: Teams, team: Team) -> Manifest:
    if teams.controller is None:
        return {"kind": "ServiceAccount", "name": NOTEBOOK_ACCOUNT, "namespace": team.namespace}
    # Each user's own session account: the namespace's accounts, whose names are not known here.
    return {
        "kind": "Group",
        "apiGroup": "rbac.authorization.k8s.io",
        "name": f"system:serviceaccounts:{team.namespace}",
    }
