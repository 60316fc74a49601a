"""Pure renderers: the teams file -> the cluster objects that enforce it.

Namespaces (Pod Security ``restricted``), ResourceQuota, LimitRange, the sessions' RBAC (the
team's shared account, or where a controller runs each user's own account), NetworkPolicies,
the shared volume's claim (when the teams file sizes it), Kueue ResourceFlavors,
WorkloadPriorityClasses, ClusterQueues and LocalQueues, and ValidatingAdmissionPolicies that
keep Jobs in team namespaces on their team's queue and, where a controller runs, a session's
writes on its own user's Jobs and Services. Nothing here talks to a cluster.

``render`` puts them together from their modules, beside this one: namespaces.py, queues.py
(Kueue), rbac.py, policies.py (admission) and controlplane.py (the controller's).
"""

from __future__ import annotations

from typing import Any

import yaml

from trainhub.backends.kubernetes.controlplane import controller_objects
from trainhub.backends.kubernetes.names import Manifest
from trainhub.backends.kubernetes.namespaces import (
    limit_range,
    namespace,
    network_policies,
    resource_quota,
    shared_claim,
)
from trainhub.backends.kubernetes.policies import (
    require_queue_policy,
    session_rights_policy,
    session_user_ids_policy,
    user_ids_objects,
)
from trainhub.backends.kubernetes.queues import (
    cluster_queue,
    local_queue,
    priority_classes,
    resource_flavors,
)
from trainhub.backends.kubernetes.rbac import notebook_rbac, queue_reader
from trainhub.teams import Teams


def render(teams: Teams) -> list[Manifest]:
    """Every object, in an order that applies cleanly (namespaces and cluster objects first)."""
    objs: list[Manifest] = [namespace(t) for t in teams.teams]
    objs += controller_objects(teams)
    objs += (
        resource_flavors(teams)
        + priority_classes(teams)
        + [cluster_queue(t, teams) for t in teams.teams]
    )
    objs += queue_reader(teams) + require_queue_policy()
    controlled = teams.controller is not None
    own_ids = controlled and teams.controller.per_user_ids  # type: ignore[union-attr]
    if controlled:
        objs += session_rights_policy()
    if own_ids:
        objs.append(session_user_ids_policy())
    for team in teams.teams:
        objs += [
            resource_quota(teams, team),
            limit_range(team),
            *notebook_rbac(team, controlled, own_ids),
            *network_policies(team),
            *shared_claim(team),
            local_queue(team),
            *(user_ids_objects(team.namespace) if own_ids else []),
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
