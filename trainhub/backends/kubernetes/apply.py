"""Server-side apply of rendered objects (``trainhub admin apply``): idempotent, one field
manager."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainhub.backends.kubernetes import nodes
from trainhub.jobs import placement
from trainhub.teams import Teams

FIELD_MANAGER = "trainhub-admin"


@dataclass(frozen=True)
class Applied:
    kind: str
    name: str
    namespace: str | None
    changed: bool  # created, or its spec changed (see _version)


def _version(meta: Any) -> tuple[str, Any]:
    """What moves when an apply changes an object. Its generation where it has one: controllers
    write status on their own schedule (the apiserver type-checks a ValidatingAdmissionPolicy
    after it is stored), which moves the resourceVersion although nothing was applied."""
    generation = getattr(meta, "generation", None)
    if generation is not None:
        return "generation", generation
    return "resourceVersion", meta.resourceVersion


def _describe(obj: dict[str, Any]) -> str:
    ns = obj["metadata"].get("namespace")
    return f"{obj['kind']} {ns + '/' if ns else ''}{obj['metadata']['name']}"


def apply_objects(api_client: Any, objs: list[dict[str, Any]]) -> list[Applied]:
    """Apply each object with server-side apply, in order; reports which ones changed."""
    from kubernetes import dynamic
    from kubernetes.client import ApiException

    client = dynamic.DynamicClient(api_client)
    results = []
    for obj in objs:
        resource = client.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        try:
            before = _version(resource.get(name=meta["name"], namespace=namespace).metadata)
        except ApiException as e:
            if e.status != 404:
                raise
            before = None
        try:
            after = _version(
                client.server_side_apply(
                    resource,
                    body=obj,
                    namespace=namespace,
                    field_manager=FIELD_MANAGER,
                    force_conflicts=True,
                ).metadata
            )
        except ApiException as e:
            raise RuntimeError(
                f"applying {_describe(obj)} failed: {e.status} {e.reason}: {e.body}"
            ) from None
        results.append(Applied(obj["kind"], meta["name"], namespace, before != after))
    return results


def pool_warnings(api_client: Any, teams: Teams) -> list[str]:
    """What the admin should know of each pool's nodes: taints its tolerations do not match
    (a job's pods would never be scheduled there)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    out = []
    for pool in teams.pools:
        listed = api_client.sanitize_for_serialization(
            core.list_node(label_selector=nodes.selector(pool)).items
        )
        found = [nodes.node_of(n) for n in listed]
        out += placement.pool_warnings(
            pool.name, found, nodes.tolerations(pool), autoscaled=pool.autoscaled
        )
    return out
