"""The controller's objects (trainhub.controller), rendered from the teams file's
``controller:`` section (pure, like render.py): its namespace, ServiceAccount, the rights it
uses and no more, the teams file as a ConfigMap, a Deployment of leader-elected replicas with
probes, a PodDisruptionBudget, a Service for its metrics and a NetworkPolicy admitting only
their scrapes.

Rights: one ClusterRole names the verbs, bound by a RoleBinding in each team namespace only,
so the controller acts in no other namespace; its Lease is its own namespace's.
"""

from __future__ import annotations

from typing import Any

import yaml

from trainhub.backends.kubernetes.identity import USER_IDS_CONFIGMAP
from trainhub.backends.kubernetes.names import Manifest, meta
from trainhub.teams import Team, Teams

CONTROLLER = "trainhub-controller"
TEAMS_CONFIG = "trainhub-teams"
TEAMS_PATH = "/etc/trainhub"
APP_LABELS = {"app.kubernetes.io/name": CONTROLLER, "app.kubernetes.io/part-of": "trainhub"}
RBAC = "rbac.authorization.k8s.io/v1"
READ = ["get", "list", "watch"]


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    """An object of the controller's: trainhub's metadata, with the controller's labels."""
    return meta(name, namespace, APP_LABELS)


def controller_claim(team: Team) -> str:
    return team.shared_volume.controller_claim or f"{team.name}-{team.shared_volume.claim}"


def team_rules() -> list[dict[str, Any]]:
    """What the controller does in a team namespace: record (read everything a job is made
    of), retry and resume (delete a failed Job, create the next attempt's, keep its Service),
    suspend (deactivate a Workload); and know which member owns which files (the team's user
    ids)."""
    return [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [USER_IDS_CONFIGMAP],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": [*READ, "create", "delete", "patch"],
        },
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create", "patch"]},
        {"apiGroups": [""], "resources": ["pods", "events"], "verbs": READ},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*READ, "patch"]},
    ]


def _rbac(teams: Teams, ns: str) -> list[Manifest]:
    subject = [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": ns}]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CONTROLLER}
    objs: list[Manifest] = [
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": _meta(CONTROLLER),
            "rules": team_rules(),
        },
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": _meta(f"{CONTROLLER}-lease", ns),
            # create cannot be limited to a name (the name is not known before the object is)
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": [CONTROLLER],
                    "verbs": ["get", "update"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": _meta(f"{CONTROLLER}-lease", ns),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": f"{CONTROLLER}-lease",
            },
            "subjects": subject,
        },
    ]
    objs += [
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": _meta(CONTROLLER, t.namespace),
            "roleRef": role_ref,
            "subjects": subject,
        }
        for t in teams.teams
    ]
    return objs


def teams_config(teams: Teams, ns: str) -> Manifest:
    """The teams file as the controller reads it (the parsed file: the catalog included)."""
    data = teams.model_dump(mode="json", exclude_none=True)
    data.pop("image_catalog", None)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(TEAMS_CONFIG, ns),
        "data": {"teams.yaml": yaml.safe_dump(data, sort_keys=False)},
    }


def mlflow_secret(team: str) -> str:
    return f"mlflow-{team}"


def mlflow_dir(team: str) -> str:
    """Where the controller finds team ``team``'s MLflow credential files."""
    return f"/etc/trainhub/mlflow/{team}"


def controller_image(teams: Teams) -> str:
    wanted = teams.controller.image  # type: ignore[union-attr]
    named = {i.name: i.image for i in teams.images}
    return named.get(wanted, wanted)


def deployment(teams: Teams, ns: str) -> Manifest:
    c = teams.controller
    assert c is not None
    port = c.metrics_port
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 10}
    volumes: list[dict[str, Any]] = [
        {"name": "teams", "configMap": {"name": TEAMS_CONFIG}},
        # The root file system is read-only; a sweep's trials compile from a private copy of
        # its frozen workspace (trainhub.bundle.snapshot), at most one at a time.
        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "teams", "mountPath": TEAMS_PATH, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    if _acts_as_members(teams):
        # Its token and CA, readable whoever a thread acts as (it opens connections meanwhile):
        # the kubelet would make a root pod's token its owner's alone.
        volumes.append(_api_credentials())
        mounts.append({"name": "api", "mountPath": SERVICE_ACCOUNT_DIR, "readOnly": True})
    for t in teams.teams:
        volumes.append(
            {"name": f"team-{t.name}", "persistentVolumeClaim": {"claimName": controller_claim(t)}}
        )
        mounts.append({"name": f"team-{t.name}", "mountPath": t.shared_volume.mount_path})
    for t in teams.teams:
        if t.mlflow is not None:
            # The team's MLflow credentials (token_file, password_file below this folder), from
            # a Secret of the controller's namespace: only the controller mirrors on a cluster,
            # so no session holds them. Readable whoever a thread acts as (0444).
            secret = {"secretName": mlflow_secret(t.name), "optional": True, "defaultMode": 0o444}
            volumes.append({"name": f"mlflow-{t.name}", "secret": secret})
            mounts.append(
                {"name": f"mlflow-{t.name}", "mountPath": mlflow_dir(t.name), "readOnly": True}
            )
    container = {
        "name": "controller",
        "image": controller_image(teams),
        "args": [
            "trainhub",
            "controller",
            f"--teams={TEAMS_PATH}/teams.yaml",
            "--identity=$(POD_NAME)",
            f"--port={port}",
        ],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "metrics", "containerPort": port}],
        "livenessProbe": probe | {"initialDelaySeconds": 10, "failureThreshold": 3},
        "readinessProbe": probe | {"httpGet": {"path": "/readyz", "port": "metrics"}},
        "resources": {
            "requests": {"cpu": c.resources.cpu, "memory": c.resources.memory},
            "limits": {"memory": c.resources.memory_limit},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": _capabilities(teams),
        },
        "volumeMounts": mounts,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(CONTROLLER, ns),
        "spec": {
            "replicas": c.replicas,
            "selector": {"matchLabels": APP_LABELS},
            "template": {
                "metadata": {"labels": APP_LABELS},
                "spec": {
                    "serviceAccountName": CONTROLLER,
                    # mounted as "api" where it acts as members
                    "automountServiceAccountToken": not _acts_as_members(teams),
                    # the standby takes over once the lease ends; a release on SIGTERM is sooner
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": _pod_security(teams),
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "topologyKey": "kubernetes.io/hostname",
                                        "labelSelector": {"matchLabels": APP_LABELS},
                                    },
                                }
                            ]
                        }
                    },
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _api_credentials() -> dict[str, Any]:
    """What automountServiceAccountToken would mount, every file readable by all (0444)."""
    return {
        "name": "api",
        "projected": {
            "defaultMode": 0o444,
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


def _acts_as_members(teams: Teams) -> bool:
    return teams.controller is not None and teams.controller.per_user_ids


def _pod_security(teams: Teams) -> dict[str, Any]:
    """Where members own their files, the controller acts on them as their owner
    (trainhub.jobs.ownership: the file-system ids of a thread), which takes root's setuid and
    setgid capabilities and no other; else it runs as the team's shared user."""
    if _acts_as_members(teams):
        return {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}}
    return {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 100,
        "fsGroup": 100,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _capabilities(teams: Teams) -> dict[str, list[str]]:
    if _acts_as_members(teams):
        return {"drop": ["ALL"], "add": ["SETUID", "SETGID"]}
    return {"drop": ["ALL"]}


def controller_objects(teams: Teams) -> list[Manifest]:
    """Every object of the controller; none without a ``controller:`` section."""
    if teams.controller is None:
        return []
    ns, port = teams.controller.namespace, teams.controller.metrics_port
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _meta(ns)
            | {
                # baseline where it acts as members (root, with setuid and setgid alone)
                "labels": _meta(ns)["labels"]
                | {
                    "pod-security.kubernetes.io/enforce": "baseline"
                    if _acts_as_members(teams)
                    else "restricted"
                }
            },
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(CONTROLLER, ns)},
        *_rbac(teams, ns),
        teams_config(teams, ns),
        deployment(teams, ns),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(CONTROLLER, ns),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": APP_LABELS}},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(CONTROLLER, ns),
            "spec": {
                "selector": APP_LABELS,
                "ports": [{"name": "metrics", "port": port, "targetPort": "metrics"}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(f"{CONTROLLER}-metrics-only", ns),
            "spec": {
                "podSelector": {"matchLabels": APP_LABELS},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": port, "protocol": "TCP"}]}],
            },
        },
    ]
