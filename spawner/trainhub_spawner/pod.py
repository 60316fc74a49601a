"""What a session's pod looks like, as KubeSpawner trait values: a pure function of the session.

The notebook server runs in its team's namespace under its user's own ServiceAccount where a
controller runs (``rbac.session_account_objects``: the session Role, narrowed to its user's
Jobs and Services by the admission policy), else the team's shared notebook ServiceAccount
(whose Role lets the server extension submit Jobs there and nothing else), with the team's
shared volume at its usual path, the teams file mounted from a ConfigMap, the environment
that points the server extension at the Kubernetes backend, and Pod Security ``restricted``
settings. GPU requests equal limits; node selector and tolerations come from the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from trainhub.alerts.channels import member_alerts_path
from trainhub.backends.kubernetes.identity import session_account
from trainhub.backends.kubernetes.manifests import HOME
from trainhub.backends.kubernetes.names import GPU, NOTEBOOK_ACCOUNT, TEAM_LABEL
from trainhub.jobs.ownership import RunAs
from trainhub.jobs.shares import share_text
from trainhub.teams import TeamDataset, Teams
from trainhub_spawner.profiles import Session

TEAMS_FILE = "/etc/trainhub/teams.yaml"
TEAMS_CONFIGMAP = "trainhub-teams"
TEAMS_CONFIGMAP_KEY = "teams.yaml"
POOL_LABEL = "trainhub.io/pool"
ROLE_LABEL = "trainhub.io/role"
SESSION_GPUS_LABEL = "trainhub.io/session-gpus"
NOTEBOOK_ROLE = "notebook"

CONTAINER_SECURITY = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
POD_SECURITY = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
# A member running as their own id gets a fresh home (as their jobs' pods do).
SESSION_HOME = HOME


def jobs_root(session: Session) -> str:
    """Job directories live on the team's shared volume (the Kubernetes backend's default)."""
    return str(PurePosixPath(session.team.shared_volume.mount_path) / "jobs")


def account_for(teams: Teams, user: str) -> str:
    """The ServiceAccount ``user``'s session runs as: their own where a controller keeps the
    jobs (a session then only submits and reads), else the team's shared one."""
    return NOTEBOOK_ACCOUNT if teams.controller is None else session_account(user)


def session_environment(
    session: Session,
    teams_file: str = TEAMS_FILE,
    user: str | None = None,
    member: RunAs | None = None,
) -> dict[str, str]:
    team = session.team
    env = {
        "TRAINHUB_BACKEND": "kubernetes",
        "TRAINHUB_TEAM": team.name,
        "TRAINHUB_K8S_NAMESPACE": team.namespace,
        "TRAINHUB_K8S_QUEUE": team.local_queue,
        "TRAINHUB_JOBS_ROOT": jobs_root(session),
        "TRAINHUB_TEAMS_FILE": teams_file,
        "TRAINHUB_SESSION_POOL": session.pool.name,
    }
    if user is not None:
        # The user's alert channels, on the team's volume: the cluster's controller announces
        # the user's jobs by them (trainhub/alerts/channels.py: member_channels).
        mount = PurePosixPath(team.shared_volume.mount_path)
        env["TRAINHUB_ALERTS_FILE"] = str(mount / member_alerts_path(user))
    if member is not None:
        env["TRAINHUB_RUN_AS"] = str(member)  # its jobs run as the member too
    if session.share is not None and session.pool.sharing is not None:
        # Which share the session holds, for its server extension to say (a time-sliced
        # replica sees the whole GPU: nothing inside the pod tells it that it is shared).
        env["TRAINHUB_GPU_SHARE"] = share_text(session.share)
        env["TRAINHUB_GPU_SHARING"] = session.pool.sharing.strategy
    elif session.gpus == 0:
        # CUDA images set NVIDIA_VISIBLE_DEVICES=all; "void" keeps a GPU-less session GPU-less
        # on nodes whose container runtime would otherwise expose every device.
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
    return env


def session_overrides(
    session: Session,
    *,
    teams_file: str = TEAMS_FILE,
    teams_configmap: str | None = TEAMS_CONFIGMAP,
    uid: int = 1000,
    gid: int = 100,
    datasets: Mapping[str, TeamDataset] | None = None,
    account: str = NOTEBOOK_ACCOUNT,
    user: str | None = None,
    member: RunAs | None = None,
    home: str = SESSION_HOME,
) -> dict[str, Any]:
    """KubeSpawner trait name -> value for this session's pod, run as ``account``
    (:func:`account_for`).

    ``member``: the user's own ids, where members have their own: the session runs as them,
    without fsGroup (the kubelet would hand the team volume's files to that group), with a
    fresh ``home`` (the image's belongs to the image's user), and its jobs run as them too.

    ``teams_configmap`` None means the teams file is baked into the image at ``teams_file``.
    ``datasets``: those the team may read (``Teams.readable_datasets``; default its own): each
    claim is mounted read-only at /datasets/<name>, as in the team's job pods."""
    team, pool = session.team, session.pool
    shared = team.shared_volume
    volumes: list[dict[str, Any]] = [
        {"name": "trainhub-shared", "persistentVolumeClaim": {"claimName": shared.claim}},
    ]
    mounts: list[dict[str, Any]] = [{"name": "trainhub-shared", "mountPath": shared.mount_path}]
    if member is not None:
        volumes.append({"name": "trainhub-home", "emptyDir": {}})
        mounts.append({"name": "trainhub-home", "mountPath": home})
        uid = gid = member.user
    if teams_configmap:
        volumes.append(
            {
                "name": "trainhub-teams",
                "configMap": {
                    "name": teams_configmap,
                    "items": [{"key": TEAMS_CONFIGMAP_KEY, "path": "teams.yaml"}],
                },
            }
        )
        mounts.append(
            {
                "name": "trainhub-teams",
                "mountPath": str(PurePosixPath(teams_file).parent),
                "readOnly": True,
            }
        )
    for name, ds in (team.datasets if datasets is None else datasets).items():
        if ds.claim is None:
            continue  # a path dataset is already on the shared volume
        volumes.append(
            {
                "name": f"dataset-{name}".replace("_", "-"),
                "persistentVolumeClaim": {"claimName": ds.claim, "readOnly": True},
            }
        )
        mount = {
            "name": f"dataset-{name}".replace("_", "-"),
            "mountPath": team.dataset_mount(name),
            "readOnly": True,
        }
        if ds.sub_path:
            mount["subPath"] = ds.sub_path
        mounts.append(mount)

    gpus = session.gpu_requests
    return {
        "namespace": team.namespace,
        "service_account": account,
        # The server extension submits Jobs with this account's token.
        "automount_service_account_token": True,
        "image": session.image.image,
        "environment": session_environment(session, teams_file, user, member),
        "extra_resource_guarantees": dict(gpus),
        "extra_resource_limits": dict(gpus),
        "node_selector": dict(pool.node_labels),
        "tolerations": [t.manifest() for t in pool.tolerations],
        "volumes": volumes,
        "volume_mounts": mounts,
        "uid": uid,
        "gid": gid,
        "fs_gid": None if member is not None else gid,
        "privileged": False,
        "allow_privilege_escalation": False,
        "container_security_context": dict(CONTAINER_SECURITY),
        "pod_security_context": dict(POD_SECURITY),
        "extra_labels": {
            TEAM_LABEL: team.name,
            POOL_LABEL: pool.name,
            ROLE_LABEL: NOTEBOOK_ROLE,
            SESSION_GPUS_LABEL: str(session.gpus)
            if session.share is None
            else f"{float(session.share):.4g}",
        },
    }


def teams_configmap_manifest(
    teams: Teams, namespace: str, name: str = TEAMS_CONFIGMAP
) -> dict[str, Any]:
    """The teams file as sessions read it: self-contained (catalog images folded in)."""
    data = teams.model_dump(mode="json", exclude={"image_catalog"}, exclude_none=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "trainhub"},
        },
        "data": {TEAMS_CONFIGMAP_KEY: yaml.safe_dump(data, sort_keys=False)},
    }


def session_requests(
    overrides: dict[str, Any], cpu: str | None, memory: str | None
) -> dict[str, str]:
    """The requests the pod will carry, keyed as ResourceQuota spells them."""
    out = {f"requests.{k}": v for k, v in overrides.get("extra_resource_guarantees", {}).items()}
    if cpu:
        out["requests.cpu"] = cpu
    if memory:
        out["requests.memory"] = memory
    return out


def pod_deviation(
    pod: dict[str, Any], session: Session, namespace: str, account: str = NOTEBOOK_ACCOUNT
) -> str | None:
    """Why this pod manifest is not the session's, as a sentence; None when it is.

    The last look before the pod is created, so that configuration (an admin's override,
    a hook) cannot move a session to another namespace, image, account or size."""
    team = session.team
    if namespace != team.namespace:
        return f"sessions of team {team.name} run in namespace {team.namespace}, not {namespace}"
    spec = pod.get("spec") or {}
    if spec.get("serviceAccountName", account) != account:
        return f"sessions run as the {account} service account, not {spec['serviceAccountName']}"
    containers = spec.get("containers") or []
    notebook = next((c for c in containers if c.get("name") == "notebook"), None)
    if notebook is None:
        return "the session pod has no notebook container"
    if notebook.get("image") != session.image.image:
        return (
            f"image {notebook.get('image')!r} is not one of team {team.name}'s curated images "
            f"({', '.join(team.images)})"
        )
    wanted = session.gpu_requests
    held = dict.fromkeys({GPU, *wanted}, 0)
    for c in [*containers, *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for resource in held:
            limit = int((res.get("limits") or {}).get(resource, 0))
            request = int((res.get("requests") or {}).get(resource, limit))
            if limit != request:
                what = "GPU" if resource == GPU else resource
                return (
                    f"container {c.get('name')}: {what} requests ({request}) must equal "
                    f"limits ({limit})"
                )
            held[resource] += limit
        ctx = c.get("securityContext") or {}
        if ctx.get("privileged") or ctx.get("allowPrivilegeEscalation", True):
            return f"container {c.get('name')} may not run privileged or escalate privileges"
    if held[GPU] != session.gpus:
        return f"the session asks for {session.gpus} GPUs but its pod requests {held[GPU]}"
    for resource, count in wanted.items():
        if held[resource] != int(count):
            return f"the session asks for {count} {resource} but its pod requests {held[resource]}"
    selector = spec.get("nodeSelector") or {}
    if any(selector.get(k) != v for k, v in session.pool.node_labels.items()):
        return f"the session pod must run on pool {session.pool.name}'s nodes"
    return None
