"""What each team namespace needs so that the hub can run sessions there, and nothing more.

Zero-to-JupyterHub grants its hub a Role in the hub's own namespace only, and the team
namespaces deny all ingress (see ``namespaces.network_policies``). Sessions run in team
namespaces, so each gets a Role bound to the hub's ServiceAccount, and a NetworkPolicy that
lets the hub and the proxy (and nothing else) reach the notebook servers:

    python -m trainhub_spawner.hub_objects hub_config/teams.yaml --hub-namespace jhub |
        kubectl apply -f -
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT, ROLE_LABEL
from trainhub.teams import Team, Teams, load_teams
from trainhub_spawner.pod import NOTEBOOK_ROLE

HUB_ROLE = "trainhub-hub"
RBAC = "rbac.authorization.k8s.io"


def notebook_ingress(team: Team, hub_namespace: str, port: int = 8888) -> dict[str, Any]:
    """The hub and the proxy (Zero-to-JupyterHub's component labels) may reach notebook servers."""
    peers = [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": hub_namespace}},
            "podSelector": {
                "matchExpressions": [
                    {"key": "component", "operator": "In", "values": ["hub", "proxy"]}
                ]
            },
        }
    ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "trainhub-hub-to-notebooks",
            "namespace": team.namespace,
            "labels": {"app.kubernetes.io/managed-by": "trainhub"},
        },
        "spec": {
            "podSelector": {"matchLabels": {ROLE_LABEL: NOTEBOOK_ROLE}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": port}]}],
        },
    }


def hub_objects(
    teams: Teams, hub_namespace: str, service_account: str = "hub"
) -> list[dict[str, Any]]:
    rules = [
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["get", "list"]},
        # the teams file that sessions mount (TrainHubSpawner.teams_configmap)
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]},
    ]
    if teams.controller is not None:
        # each user's own session account, bound to the session Role (bind: to that Role only)
        rules += [
            {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create"]},
            {"apiGroups": [RBAC], "resources": ["rolebindings"], "verbs": ["create"]},
            {
                "apiGroups": [RBAC],
                "resources": ["roles"],
                "resourceNames": [NOTEBOOK_ACCOUNT],
                "verbs": ["bind"],
            },
        ]
    out: list[dict[str, Any]] = []
    for team in teams.teams:

        def meta(ns: str = team.namespace) -> dict[str, Any]:
            return {
                "name": HUB_ROLE,
                "namespace": ns,
                "labels": {"app.kubernetes.io/managed-by": "trainhub"},
            }

        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta(),
                "rules": rules,
            }
        )
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta(),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": HUB_ROLE,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": service_account, "namespace": hub_namespace}
                ],
            }
        )
        out.append(notebook_ingress(team, hub_namespace))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainhub_spawner.hub_objects", description=__doc__.split("\n")[0]
    )
    parser.add_argument("teams_file")
    parser.add_argument("--hub-namespace", required=True)
    parser.add_argument("--service-account", default="hub")
    args = parser.parse_args(argv)
    objs = hub_objects(load_teams(args.teams_file), args.hub_namespace, args.service_account)
    sys.stdout.write("".join("---\n" + yaml.safe_dump(o, sort_keys=False) for o in objs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
