"""The user's own ServiceAccount in their team's namespace, made with the hub's rights before
their session's pod, where a controller runs (``pod.account_for``; the objects are
``rbac.session_account_objects``, the rights ``hub_objects``)."""

from __future__ import annotations

from typing import Any

from trainhub.backends.kubernetes.rbac import session_account_objects
from trainhub.teams import Team


async def ensure_session_account(api_client: Any, team: Team, user: str) -> None:
    """Create the account and its binding to the session Role; ones already there are kept
    (the name is the user's alone, so they are this user's)."""
    from kubernetes_asyncio.client import CoreV1Api, RbacAuthorizationV1Api
    from kubernetes_asyncio.client.rest import ApiException

    account, binding = session_account_objects(team, user)
    for create, body in (
        (CoreV1Api(api_client).create_namespaced_service_account, account),
        (RbacAuthorizationV1Api(api_client).create_namespaced_role_binding, binding),
    ):
        try:
            await create(team.namespace, body)
        except ApiException as e:
            if e.status != 409:
                raise
