"""``TrainHubSpawner``: KubeSpawner whose choices come from the teams file.

Each user sees their teams' profiles only; each spawn request is checked three times
before a pod exists (form, ``load_user_options``, and the final pod manifest), and
refused with a sentence when it asks for an image, namespace or size the user's team
does not offer, or for more GPUs than are left of the team's quota. Kubernetes still
enforces all of it (ResourceQuota, RBAC, Pod Security): these checks give good answers,
they are not the wall.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

from kubespawner import KubeSpawner
from tornado import web
from traitlets import Bool, Integer, Unicode, default

from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT
from trainhub.jobs.ownership import RunAs
from trainhub.teams import Teams, load_teams
from trainhub_spawner import pod as pods
from trainhub_spawner.accounts import ensure_session_account
from trainhub_spawner.profiles import (
    Refused,
    Session,
    options_from_formdata,
    profile_list,
    resolve_session,
)
from trainhub_spawner.quota import read_quotas, shortfall
from trainhub_spawner.stops import form_notice, read_stops, stops_file
from trainhub_spawner.user_ids import NoUserId, ensure_user_id

DEFAULT_TEAMS_FILE = "/etc/trainhub/teams.yaml"


# Resources are the session's alone: an admin's extra GPU request must not ride along.
_REPLACED = {"extra_resource_limits", "extra_resource_guarantees"}


class SpawnRefused(web.HTTPError):
    """403 with a sentence that JupyterHub shows on the spawn form and page, and in the API."""

    def __init__(self, sentence: str):
        super().__init__(403, "%s", sentence)
        self.jupyterhub_message = sentence

    def __str__(self) -> str:
        return self.jupyterhub_message


class _TeamsCache:
    """The teams file, re-read when it changes on disk (a ConfigMap update, an admin's edit)."""

    def __init__(self) -> None:
        self._key: tuple[str, float] | None = None
        self._teams: Teams | None = None

    def get(self, path: str) -> Teams:
        key = (path, Path(path).stat().st_mtime)
        if key != self._key or self._teams is None:
            self._teams = load_teams(path)
            self._key = key
        return self._teams


_TEAMS = _TeamsCache()


def _merge_list(current: list[Any], ours: list[Any]) -> list[Any]:
    """Admin-configured items stay; ours replace any of the same name (idempotent on re-apply)."""
    names = {item.get("name") for item in ours if isinstance(item, dict)} - {None}
    kept = [
        x for x in current if x not in ours and not (isinstance(x, dict) and x.get("name") in names)
    ]
    return kept + ours


class TrainHubSpawner(KubeSpawner):
    teams_file = Unicode(
        help="The teams file (pools, images, teams). Default: $TRAINHUB_TEAMS_FILE, else "
        f"{DEFAULT_TEAMS_FILE}."
    ).tag(config=True)
    teams_configmap = Unicode(
        pods.TEAMS_CONFIGMAP,
        help="ConfigMap, kept in each team namespace by the spawner, from which sessions mount "
        "the teams file. Empty: the file is baked into the images at session_teams_file.",
    ).tag(config=True)
    session_teams_file = Unicode(
        pods.TEAMS_FILE, help="Where sessions find the teams file (TRAINHUB_TEAMS_FILE)."
    ).tag(config=True)
    check_quota = Bool(
        True,
        help="Read the team's ResourceQuota before creating the pod and refuse, with a sentence, "
        "a session that does not fit. The quota is enforced by the API server either way.",
    ).tag(config=True)
    session_uid = Integer(1000, help="User id the session runs as (non-root).").tag(config=True)
    session_gid = Integer(100, help="Group id (and fsGroup) of the session.").tag(config=True)
    session_home = Unicode(
        pods.SESSION_HOME,
        help="The session image's home directory: where members run as ids of their own, a "
        "fresh directory is mounted there (the image's belongs to the image's user).",
    ).tag(config=True)
    idle_state_file = Unicode(
        help="The idle-GPU service's state file; why it stopped a server is read from beside "
        "it and said on the spawn form. Default: $TRAINHUB_IDLE_STATE_FILE; empty: nothing said.",
    ).tag(config=True)

    session: Session | None = None
    _configured: dict[str, Any] | None = None
    # When this spawner last started a server (seconds since the epoch); kept in its state,
    # which outlives a stop, so an idle stop before it is old news.
    started_at: float | None = None

    @default("teams_file")
    def _default_teams_file(self) -> str:
        return os.environ.get("TRAINHUB_TEAMS_FILE", DEFAULT_TEAMS_FILE)

    @default("idle_state_file")
    def _default_idle_state_file(self) -> str:
        return os.environ.get("TRAINHUB_IDLE_STATE_FILE", "")

    @default("enable_user_namespaces")
    def _default_user_namespaces(self) -> bool:
        return False  # sessions live in their team's namespace

    @default("profile_list")
    def _default_profile_list(self) -> Any:
        return _profiles_for

    @default("options_from_form")
    def _default_options_from_form(self) -> Any:
        return self._checked_options_from_form

    # --- the user's teams -------------------------------------------------------------------
    def teams(self) -> Teams:
        return _TEAMS.get(self.teams_file)

    def user_groups(self) -> list[str]:
        return sorted(g.name for g in getattr(self.user, "groups", []) or [])

    def resolve(self, user_options: Any) -> Session:
        try:
            return resolve_session(self.teams(), self.user_groups(), user_options)
        except Refused as e:
            raise SpawnRefused(str(e)) from None

    def _checked_options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, str]:
        options = options_from_formdata(formdata)
        self.resolve(options)  # refused here, the form comes back with the sentence
        return options

    # --- the spawn form ------------------------------------------------------------------------
    async def get_options_form(self) -> str:
        """The profiles form, headed by why the idle-GPU service stopped this server, if it
        did and the server has not started since."""
        form = await super().get_options_form()
        if not (form and self.idle_state_file):
            return form
        user = self.user.name if self.user else ""
        stop = read_stops(stops_file(self.idle_state_file)).get(f"{user}/{self.name}")
        return form_notice(stop, self.started_at) + form

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.started_at is not None:
            state["trainhub_started_at"] = self.started_at
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        started_at = state.get("trainhub_started_at")
        if isinstance(started_at, int | float):
            self.started_at = float(started_at)

    def start(self) -> Any:
        # KubeSpawner's start hands back the future it keeps for progress(): not awaited here.
        self.started_at = time.time()
        return super().start()

    # --- the spawn ----------------------------------------------------------------------------
    async def load_user_options(self) -> None:
        """Resolve ``user_options`` (from the form or posted to the REST API) against the
        user's teams, then set every pod trait from the session; nothing from the request
        reaches the pod except through :func:`resolve_session`."""
        session = self.resolve(self.user_options)
        member = await self._member_ids(session)
        overrides = pods.session_overrides(
            session,
            teams_file=self.session_teams_file,
            teams_configmap=self.teams_configmap or None,
            uid=self.session_uid,
            gid=self.session_gid,
            datasets={
                name: ds
                for name, (_, ds) in self.teams().readable_datasets(session.team.name).items()
            },
            account=pods.account_for(self.teams(), self.user.name),
            user=self.user.name,
            member=member,
            home=self.session_home,
        )
        # Merge onto what the admin configured, never onto an earlier session of this server
        # (a GPU session after a CPU one must not keep NVIDIA_VISIBLE_DEVICES=void).
        configured = self._configured_values(overrides)
        for name, value in overrides.items():
            base = configured[name]
            if isinstance(value, dict) and isinstance(base, dict) and name not in _REPLACED:
                value = {**base, **value}
            elif isinstance(value, list) and isinstance(base, list):
                value = _merge_list(base, value)
            setattr(self, name, value)
        self.session = session

    async def _member_ids(self, session: Session) -> RunAs | None:
        """The user's own ids in their team, given now where they have none yet; None where
        the team's members share one (no controller, or ``per_user_ids`` off)."""
        controller = self.teams().controller
        if controller is None or not controller.per_user_ids:
            return None
        try:
            uid = await ensure_user_id(
                self.api.api_client, session.team, self.user.name, controller.first_user_id
            )
        except NoUserId as e:
            raise SpawnRefused(str(e)) from None
        return RunAs(uid, uid)

    def _configured_values(self, overrides: dict[str, Any]) -> dict[str, Any]:
        if self._configured is None:
            self._configured = {name: copy.deepcopy(getattr(self, name)) for name in overrides}
        return self._configured

    async def get_pod_manifest(self) -> Any:
        """The pod, checked once more against the session, then against the team's quota:
        the last step before KubeSpawner creates it."""
        manifest = await super().get_pod_manifest()
        session = self.session or self.resolve(self.user_options)
        as_sent = self.api.api_client.sanitize_for_serialization(manifest)
        account = pods.account_for(self.teams(), self.user.name)
        problem = pods.pod_deviation(as_sent, session, self.namespace, account)
        if problem:
            raise SpawnRefused(problem)
        if self.check_quota:
            await self._check_quota(session)
        if self.teams_configmap:
            await self._ensure_teams_configmap(session)
        if account != NOTEBOOK_ACCOUNT:
            await ensure_session_account(self.api.api_client, session.team, self.user.name)
        return manifest

    def session_needs(self, session: Session) -> dict[str, str]:
        """What the pod will request, as the quota names it."""
        needs = {f"requests.{pods.GPU}": str(session.gpus)}
        needs |= {f"requests.{r}": n for r, n in session.gpu_requests.items()}
        if self.cpu_guarantee:
            needs["requests.cpu"] = f"{self.cpu_guarantee}"
        if self.mem_guarantee:
            needs["requests.memory"] = f"{int(self.mem_guarantee)}"
        return needs

    async def _check_quota(self, session: Session) -> None:
        quotas = await read_quotas(self.api, session.team.namespace, self.k8s_api_request_timeout)
        sentence = shortfall(session.team.name, quotas, self.session_needs(session))
        if sentence:
            raise SpawnRefused(sentence)

    async def _ensure_teams_configmap(self, session: Session) -> None:
        """Keep the teams file that sessions mount up to date in the team's namespace."""
        from kubernetes_asyncio.client.rest import ApiException

        manifest = pods.teams_configmap_manifest(
            self.teams(), session.team.namespace, self.teams_configmap
        )
        ns, name = session.team.namespace, self.teams_configmap
        try:
            current = await self.api.read_namespaced_config_map(name, ns, _preload_content=False)
            data = json.loads(await current.read()).get("data") or {}
            if data == manifest["data"]:
                return
            await self.api.replace_namespaced_config_map(name, ns, manifest)
        except ApiException as e:
            if e.status != 404:
                raise
            try:
                await self.api.create_namespaced_config_map(ns, manifest)
            except ApiException as e2:
                if e2.status != 409:  # another spawn created it meanwhile
                    raise


async def _profiles_for(spawner: TrainHubSpawner) -> list[dict[str, Any]]:
    return profile_list(spawner.teams(), spawner.user_groups())
