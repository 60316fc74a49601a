"""What the network policies a cluster holds let through, evaluated as the API defines them.

The test node's CNI (bridge) enforces no NetworkPolicy, so the policies are evaluated here for
the pods an install made. By selectors only: ipBlock rules are not taken to match pods (CNIs such
as Cilium never match pod IPs with them). ``world`` is anything with ``api`` (an ApiClient) and
``core`` (its CoreV1Api).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client


@dataclass
class Peer:
    name: str
    namespace: str
    labels: dict[str, str]
    ports: dict[str, int]  # its containers' named ports


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _admits(
    world: Any, subject: Peer, other: Peer, direction: str, port: int, target: Peer
) -> bool:
    """Whether the policies of ``subject``'s namespace let it take traffic from (Ingress) or
    send it to (Egress) ``other`` on ``port`` of ``target``'s containers."""
    policies = client.NetworkingV1Api(world.api).list_namespaced_network_policy(subject.namespace)
    namespaces = {}
    selecting = []
    for policy in policies.items:
        spec = world.api.sanitize_for_serialization(policy.spec)
        types = spec.get("policyTypes") or ["Ingress"] + (["Egress"] if "egress" in spec else [])
        if direction in types and _selects(spec.get("podSelector", {}), subject.labels):
            selecting.append(spec)
    if not selecting:
        return True
    for spec in selecting:
        for rule in spec.get(direction.lower()) or []:
            ports = rule.get("ports") or []
            if ports and not any(
                p.get("port") in (None, port) or target.ports.get(str(p.get("port"))) == port
                for p in ports
            ):
                continue
            peers = rule.get("from" if direction == "Ingress" else "to")
            if peers is None:
                return True
            for peer in peers:
                if "ipBlock" in peer:
                    continue
                if "namespaceSelector" in peer:
                    if other.namespace not in namespaces:
                        ns = world.core.read_namespace(other.namespace)
                        namespaces[other.namespace] = ns.metadata.labels or {}
                    if not _selects(peer["namespaceSelector"], namespaces[other.namespace]):
                        continue
                elif other.namespace != subject.namespace:
                    continue
                if _selects(peer.get("podSelector", {}), other.labels):
                    return True
    return False


def may_connect(world: Any, source: Peer, destination: Peer, port: int) -> bool:
    return _admits(world, source, destination, "Egress", port, destination) and _admits(
        world, destination, source, "Ingress", port, destination
    )


def peer_of(pod: Any) -> Peer:
    return Peer(
        name=pod.metadata.name,
        namespace=pod.metadata.namespace,
        labels=dict(pod.metadata.labels or {}),
        ports={
            p.name: p.container_port for c in pod.spec.containers for p in c.ports or [] if p.name
        },
    )
