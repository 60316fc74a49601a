"""Each member's own user id, given by the hub before their first session where members have
their own (the teams file's ``controller.per_user_ids``): kept in the team namespace's
ConfigMap ``trainhub-user-ids`` (owner label -> id), which the admission policy reads and
nothing but the hub and admins may change. An id is never given twice: the files of a member
who left stay theirs."""

from __future__ import annotations

from typing import Any

from trainhub.backends.kubernetes.identity import (
    USER_IDS_CONFIGMAP,
    next_user_id,
    owner_label,
    user_id_in,
)
from trainhub.backends.kubernetes.names import meta
from trainhub.teams import Team

TRIES = 10  # concurrent spawns of one team write the same ConfigMap: each retry reads it again


class NoUserId(RuntimeError):
    """The ConfigMap kept changing under this spawn's writes."""


async def ensure_user_id(api_client: Any, team: Team, user: str, first: int) -> int:
    """``user``'s id in ``team``, given now (the next free one, from ``first``) where the
    ConfigMap has none; a write that lost the race to another spawn's reads it again."""
    from kubernetes_asyncio.client import CoreV1Api
    from kubernetes_asyncio.client.rest import ApiException

    core, ns = CoreV1Api(api_client), team.namespace
    for _ in range(TRIES):
        try:
            current = await core.read_namespaced_config_map(USER_IDS_CONFIGMAP, ns)
            data, version = dict(current.data or {}), current.metadata.resource_version
        except ApiException as e:
            if e.status != 404:
                raise
            data, version = {}, None
        given = user_id_in(data, user)
        if given is not None:
            return given
        uid = next_user_id(data, first)
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(USER_IDS_CONFIGMAP, ns),
            "data": {**data, owner_label(user): str(uid)},
        }
        try:
            if version is None:
                await core.create_namespaced_config_map(ns, body)
            else:  # at the version read: another spawn's write in between is a conflict
                body["metadata"]["resourceVersion"] = version
                await core.replace_namespaced_config_map(USER_IDS_CONFIGMAP, ns, body)
        except ApiException as e:
            if e.status == 409:
                continue
            raise
        return uid
    raise NoUserId(
        f"no user id could be given to {user} in team {team.name}: ConfigMap "
        f"{USER_IDS_CONFIGMAP} kept changing; try again"
    )
