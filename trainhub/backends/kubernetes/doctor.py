"""``trainhub admin doctor``: what a cluster lacks for the teams file, in sentences. One read of
the cluster (:func:`look`) and pure checks over it (:func:`findings`), so each check is tested
without a cluster and the read is one place."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trainhub.backends.kubernetes.controlplane import CONTROLLER, controller_claim
from trainhub.backends.kubernetes.names import GPU, KUEUE_API
from trainhub.backends.kubernetes.selectors import matcher
from trainhub.teams import Teams

KUEUE_CRDS = ("clusterqueues", "localqueues", "resourceflavors", "workloads")


@dataclass
class Seen:
    """What the cluster holds of what the teams file needs."""

    kueue: set[str] = field(default_factory=set)  # Kueue's resources the API server serves
    namespaces: set[str] = field(default_factory=set)
    cluster_queues: set[str] = field(default_factory=set)
    local_queues: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name)
    # labels, and the count of each GPU resource it has (nvidia.com/gpu, a share's)
    nodes: list[tuple[dict[str, str], dict[str, int]]] = field(default_factory=list)
    claims: dict[tuple[str, str], str] = field(default_factory=dict)  # -> phase
    controller: tuple[int, int] | None = None  # (ready, wanted) replicas; None: no Deployment


def findings(teams: Teams, seen: Seen) -> list[str]:
    """Every problem, as a sentence naming the object and what to do; none: ready."""
    found: list[str] = []
    missing = [r for r in KUEUE_CRDS if r not in seen.kueue]
    if missing:
        found.append(
            f"Kueue is not installed ({KUEUE_API} does not serve {', '.join(missing)}): "
            "install Kueue before trainhub's objects"
        )
    for pool in teams.pools:
        wanted = matcher(",".join(f"{k}={v}" for k, v in pool.node_labels.items()))
        resource = pool.shared_resource or GPU  # a shared pool's nodes advertise its shares
        nodes = [gpus.get(resource, 0) for labels, gpus in seen.nodes if wanted(labels)]
        labels = ", ".join(f"{k}={v}" for k, v in pool.node_labels.items())
        if not nodes:
            if not pool.autoscaled:  # its autoscaler adds nodes when jobs ask
                found.append(f"pool {pool.name}: no node has the labels {labels}")
        elif pool.gpus_per_node and not any(nodes):
            found.append(
                f"pool {pool.name}: its nodes ({labels}) offer no {resource}: is the GPU device "
                "plugin running on them"
                + (", sharing its GPUs with renameByDefault?" if pool.sharing else "?")
            )
    for team in teams.teams:
        ns, claim = team.namespace, team.shared_volume.claim
        if ns not in seen.namespaces:
            found.append(f"team {team.name}: no namespace {ns}: run trainhub admin apply")
            continue
        if team.cluster_queue not in seen.cluster_queues:
            found.append(f"team {team.name}: no ClusterQueue {team.cluster_queue}: run admin apply")
        if (ns, team.local_queue) not in seen.local_queues:
            found.append(
                f"team {team.name}: no LocalQueue {ns}/{team.local_queue}: run admin apply"
            )
        phase = seen.claims.get((ns, claim))
        if phase != "Bound":
            found.append(
                f"team {team.name}: its shared volume's claim {ns}/{claim} is "
                f"{'missing' if phase is None else phase.lower()}; it needs a ReadWriteMany "
                "volume (NFS, CephFS) bound to it"
            )
    if teams.controller is not None:
        ns = teams.controller.namespace
        if seen.controller is None:
            found.append(f"controller: no Deployment {ns}/{CONTROLLER}: run trainhub admin apply")
        elif seen.controller[0] < 1:
            found.append(
                f"controller: none of the {seen.controller[1]} replicas of {ns}/{CONTROLLER} "
                "is ready: nothing records jobs' endings, retries or alerts meanwhile"
            )
        for team in teams.teams:
            theirs = controller_claim(team)
            if seen.claims.get((ns, theirs)) != "Bound":
                found.append(
                    f"controller: its claim {ns}/{theirs} for team {team.name}'s volume is not "
                    "bound: bind it to the storage of the team's own claim"
                )
    return found


def look(api: Any, teams: Teams) -> Seen:
    """One read of what :func:`findings` checks, with the admin's client."""
    from kubernetes import client

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    group, version = KUEUE_API.split("/")
    seen = Seen(namespaces={n.metadata.name for n in core.list_namespace().items})
    try:
        served = custom.get_api_resources(group, version, _preload_content=False)
        seen.kueue = {r["name"] for r in json.loads(served.data).get("resources", [])}
    except client.ApiException:
        return seen  # without Kueue, nothing else it holds can be there
    seen.cluster_queues = {
        o["metadata"]["name"]
        for o in custom.list_cluster_custom_object(group, version, "clusterqueues")["items"]
    }
    for team in teams.teams:
        if team.namespace in seen.namespaces:
            seen.local_queues |= {
                (team.namespace, o["metadata"]["name"])
                for o in custom.list_namespaced_custom_object(
                    group, version, team.namespace, "localqueues"
                )["items"]
            }
    seen.nodes = [
        (
            dict(n.metadata.labels or {}),
            {
                k: int(v)
                for k, v in (n.status.allocatable or {}).items()
                if k.startswith("nvidia.com/") and str(v).isdigit()
            },
        )
        for n in core.list_node().items
    ]
    seen.claims = {
        (c.metadata.namespace, c.metadata.name): c.status.phase
        for c in core.list_persistent_volume_claim_for_all_namespaces().items
    }
    if teams.controller is not None:
        try:
            d = apps.read_namespaced_deployment(CONTROLLER, teams.controller.namespace)
            seen.controller = (d.status.ready_replicas or 0, d.spec.replicas or 0)
        except client.ApiException as e:
            if e.status != 404:
                raise
    return seen
