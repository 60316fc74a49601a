"""Idle GPU sessions: warn, then stop servers whose GPUs stay under a utilization threshold.

A hub-managed service in the manner of jupyterhub-idle-culler: it lists active servers
through the hub REST API with its own token (scopes ``list:users``, ``read:users`` and
``admin:servers``: the last one lets it read each server's spawner state, where the pod
name and namespace are, and stop servers), asks a utilization source how busy each
session's GPUs were, and applies :func:`decide`. Sessions without GPUs are left to the
ordinary idle culler.

The warning also goes to the server itself, through the proxy (scope ``access:servers``),
as a notice that JupyterLab shows; why a server was stopped is kept beside the state file
(:mod:`trainhub_spawner.stops`) for the spawn form.

    python -m trainhub_spawner.idle --threshold-percent=5 --warn-after-minutes=30 \\
        --stop-after-minutes=60 --prometheus-url=http://prometheus.monitoring:9090

Utilization comes from Prometheus with NVIDIA's DCGM exporter (``DCGM_FI_DEV_GPU_UTIL``
labelled with the pod), the source GPU clusters already run. No sample means "unknown",
which never counts as idle: a server is stopped only on evidence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import urllib.parse
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from traitlets import Float, Unicode, default
from traitlets.config import Application

from trainhub_spawner.service_signals import stop_requested
from trainhub_spawner.stops import Stop, record_stop, replace_json, stops_file


@dataclass(frozen=True)
class IdlePolicy:
    threshold_percent: float = 5.0
    warn_after_minutes: float = 30.0
    stop_after_minutes: float = 60.0

    def __post_init__(self) -> None:
        if not 0 <= self.threshold_percent <= 100:
            raise ValueError(
                f"threshold_percent: {self.threshold_percent} is not between 0 and 100"
            )
        if not 0 <= self.warn_after_minutes <= self.stop_after_minutes:
            raise ValueError(
                "warn_after_minutes must be between 0 and stop_after_minutes "
                f"({self.warn_after_minutes} > {self.stop_after_minutes})"
            )


@dataclass(frozen=True)
class IdleState:
    """What the service remembers per server: since when its GPUs have been under the
    threshold (None: busy or unknown), and when it was warned about this idle stretch."""

    low_since: float | None = None
    warned_at: float | None = None


class Action(StrEnum):
    KEEP = "keep"
    WARN = "warn"
    STOP = "stop"


def observe(
    state: IdleState, now: float, utilization: float | None, policy: IdlePolicy
) -> IdleState:
    """Fold one utilization reading (percent, averaged over the session's GPUs) into the state."""
    if utilization is None or utilization >= policy.threshold_percent:
        return IdleState()  # busy (or unknown): a new idle stretch must start over
    if state.low_since is None:
        return replace(state, low_since=now, warned_at=None)
    return state


def decide(state: IdleState, now: float, policy: IdlePolicy) -> Action:
    if state.low_since is None:
        return Action.KEEP
    idle_minutes = (now - state.low_since) / 60
    if idle_minutes >= policy.stop_after_minutes:
        return Action.STOP
    if idle_minutes >= policy.warn_after_minutes and state.warned_at is None:
        return Action.WARN
    return Action.KEEP


def warning_sentence(user: str, gpus: int, state: IdleState, now: float, policy: IdlePolicy) -> str:
    idle = 0.0 if state.low_since is None else (now - state.low_since) / 60
    left = max(policy.stop_after_minutes - idle, 0)
    gpu_word = "GPU" if gpus == 1 else "GPUs"
    return (
        f"{user}'s server has used less than {policy.threshold_percent:g}% "
        f"of its {gpus} {gpu_word} "
        f"for {idle:.0f} minutes; it will be stopped in {left:.0f} minutes unless it gets busy"
    )


def stopped_sentence(gpus: int, now: float, policy: IdlePolicy) -> str:
    """Why a server was stopped, as the spawn form says it ("This server was ...")."""
    gpu_word = "GPU" if gpus == 1 else "GPUs"
    minutes = policy.stop_after_minutes
    minute_word = "minute" if minutes == 1 else "minutes"
    at = time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(now))
    return (
        f"stopped at {at}: its {gpus} {gpu_word} stayed under {policy.threshold_percent:g}% "
        f"for {minutes:g} {minute_word}"
    )


@dataclass(frozen=True)
class GpuServer:
    """An active server that holds GPUs, as the hub API describes it."""

    user: str
    name: str  # "" for the default server
    namespace: str
    pod: str
    gpus: int
    team: str = ""  # from the profile's slug, "<team>.<pool>"
    url: str = ""  # the server's path behind the proxy, "/user/<name>/[<server>/]"

    @property
    def key(self) -> str:
        return f"{self.user}/{self.name}"


def gpu_servers(users: list[dict[str, Any]]) -> list[GpuServer]:
    """Ready servers holding GPUs, from ``GET /users?state=ready`` with server state included."""
    out = []
    for user in users:
        for name, server in (user.get("servers") or {}).items():
            if not server.get("ready"):
                continue
            state = server.get("state") or {}
            options = server.get("user_options") or {}
            try:
                gpus = int(options.get("gpus", 0))
            except (TypeError, ValueError):
                gpus = 0
            if gpus > 0 and state.get("pod_name") and state.get("namespace"):
                team = str(options.get("profile") or "").partition(".")[0]
                out.append(
                    GpuServer(
                        user["name"],
                        name,
                        state["namespace"],
                        state["pod_name"],
                        gpus,
                        team,
                        str(server.get("url") or ""),
                    )
                )
    return out


def sessions_document(
    servers: list[GpuServer], states: dict[str, IdleState], done: dict[str, Action], now: float
) -> dict[str, Any]:
    """What the metrics service reads: each GPU session still up after this pass."""
    return {
        "time": now,
        "sessions": [
            {
                "user": s.user,
                "server": s.name,
                "team": s.team,
                "gpus": s.gpus,
                "idle": states.get(s.key, IdleState()).low_since is not None,
                "idle_since": states.get(s.key, IdleState()).low_since,
            }
            for s in servers
            if done.get(s.key) is not Action.STOP
        ],
    }


def write_sessions(
    path: str,
    servers: list[GpuServer],
    states: dict[str, IdleState],
    done: dict[str, Action],
    now: float,
) -> None:
    replace_json(path, sessions_document(servers, states, done, now))


def notice_url(proxy_url: str, server: GpuServer) -> str:
    """Where the server takes notices, through the proxy as a browser reaches it."""
    return proxy_url.rstrip("/") + server.url.rstrip("/") + "/trainhub/api/notices"


# --- the service ---------------------------------------------------------------------------------
class IdleGpuCuller(Application):
    name = "trainhub-idle-gpu"
    description = "Warn, then stop JupyterHub servers whose GPUs stay idle."

    threshold_percent = Float(
        5.0, help="GPU utilization (%) under which a session counts as idle."
    ).tag(config=True)
    warn_after_minutes = Float(30.0, help="Idle minutes before the user is warned.").tag(
        config=True
    )
    stop_after_minutes = Float(60.0, help="Idle minutes before the server is stopped.").tag(
        config=True
    )
    interval_seconds = Float(60.0, help="Seconds between checks.").tag(config=True)
    hub_api_url = Unicode(help="The hub REST API (default: $JUPYTERHUB_API_URL).").tag(config=True)
    api_token = Unicode(help="The service's token (default: $JUPYTERHUB_API_TOKEN).").tag(
        config=True
    )
    prometheus_url = Unicode("", help="Prometheus holding DCGM exporter metrics.").tag(config=True)
    utilization_query = Unicode(
        'avg(DCGM_FI_DEV_GPU_UTIL{{namespace="{namespace}",pod="{pod}"}})',
        help="PromQL giving a session's GPU utilization in percent; "
        "{namespace} and {pod} are filled in.",
    ).tag(config=True)
    warning_webhook = Unicode(
        "",
        help="URL that receives each warning as JSON {user, server, message} (e.g. a chat bridge).",
    ).tag(config=True)

    state_file = Unicode(
        help="JSON file rewritten after each pass with the sessions holding GPUs and whether "
        "each is idle, for the metrics service (default: $TRAINHUB_IDLE_STATE_FILE; none: off). "
        "Why each server was stopped is kept beside it (<name>-stops.json) for the spawn form.",
    ).tag(config=True)
    proxy_url = Unicode(
        help="The proxy's public side as this service reaches it: each warning is posted "
        "to the server at <proxy_url>/user/<name>/trainhub/api/notices, and JupyterLab shows "
        "it. Default: $TRAINHUB_PROXY_URL, else the hub's public URL, else "
        "http://proxy-public (Zero to JupyterHub's Service). Empty: not posted.",
    ).tag(config=True)

    aliases: ClassVar[dict[str, str]] = {  # type: ignore[misc]
        "threshold-percent": "IdleGpuCuller.threshold_percent",
        "warn-after-minutes": "IdleGpuCuller.warn_after_minutes",
        "stop-after-minutes": "IdleGpuCuller.stop_after_minutes",
        "interval-seconds": "IdleGpuCuller.interval_seconds",
        "prometheus-url": "IdleGpuCuller.prometheus_url",
        "warning-webhook": "IdleGpuCuller.warning_webhook",
        "state-file": "IdleGpuCuller.state_file",
        "proxy-url": "IdleGpuCuller.proxy_url",
    }

    @default("proxy_url")
    def _default_proxy_url(self) -> str:
        if "TRAINHUB_PROXY_URL" in os.environ:
            return os.environ["TRAINHUB_PROXY_URL"]
        public = urllib.parse.urlsplit(os.environ.get("JUPYTERHUB_PUBLIC_HUB_URL", ""))
        if public.scheme and public.netloc:
            return f"{public.scheme}://{public.netloc}"
        return "http://proxy-public"

    @default("state_file")
    def _default_state_file(self) -> str:
        return os.environ.get("TRAINHUB_IDLE_STATE_FILE", "")

    @default("hub_api_url")
    def _default_api_url(self) -> str:
        return os.environ.get("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api")

    @default("api_token")
    def _default_token(self) -> str:
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    def initialize(self, argv: Any = None) -> None:
        super().initialize(argv)
        self.states: dict[str, IdleState] = {}
        self.policy = IdlePolicy(
            self.threshold_percent, self.warn_after_minutes, self.stop_after_minutes
        )
        self.http = AsyncHTTPClient()

    async def _hub(self, method: str, path: str) -> Any:
        req = HTTPRequest(
            self.hub_api_url.rstrip("/") + path,
            method=method,
            headers={"Authorization": f"token {self.api_token}"},
            allow_nonstandard_methods=True,
        )
        resp = await self.http.fetch(req)
        return json.loads(resp.body) if resp.body else None

    async def utilization(self, server: GpuServer) -> float | None:
        if not self.prometheus_url:
            return None
        query = self.utilization_query.format(namespace=server.namespace, pod=server.pod)
        url = (
            self.prometheus_url.rstrip("/")
            + "/api/v1/query?"
            + urllib.parse.urlencode({"query": query})
        )
        try:
            body = json.loads((await self.http.fetch(url, request_timeout=10)).body)
            result = body["data"]["result"]
            return float(result[0]["value"][1]) if result else None
        except Exception as e:  # an unreachable source means "unknown", never "idle"
            self.log.warning("no GPU utilization for %s: %s", server.key, e)
            return None

    async def notify(self, server: GpuServer, message: str) -> None:
        self.log.warning(message)
        if server.team:  # the team's alert channels, when its teams-file entry asks for it
            from trainhub import settings
            from trainhub.alerts.announce import announce_team
            from trainhub.alerts.channels import TeamEvent

            problem = announce_team(
                settings.home(), server.team, TeamEvent.IDLE_GPU_SESSION, message
            )
            if problem:
                self.log.warning(problem)
        await self.post_notice(server, message)
        if self.warning_webhook:
            body = json.dumps({"user": server.user, "server": server.name, "message": message})
            try:
                await self.http.fetch(
                    self.warning_webhook,
                    method="POST",
                    body=body,
                    headers={"Content-Type": "application/json"},
                    request_timeout=10,
                )
            except Exception as e:  # the other servers of this pass still get their turn
                self.log.warning("could not post the warning to the webhook: %s", e)

    async def post_notice(self, server: GpuServer, message: str) -> None:
        """The warning inside the user's JupyterLab; a server that cannot take it (not up,
        an older image) is logged and the pass goes on."""
        if not (self.proxy_url and server.url):
            return
        url = notice_url(self.proxy_url, server)
        try:
            await self.http.fetch(
                url,
                method="POST",
                body=json.dumps({"level": "warning", "message": message}),
                headers={
                    "Authorization": f"token {self.api_token}",
                    "Content-Type": "application/json",
                },
                request_timeout=10,
            )
        except Exception as e:
            self.log.warning("could not post the warning to %s: %s", url, e)

    async def stop(self, server: GpuServer) -> None:
        user = urllib.parse.quote(server.user, safe="")
        path = (
            f"/users/{user}/server"
            if not server.name
            else f"/users/{user}/servers/{urllib.parse.quote(server.name, safe='')}"
        )
        await self._hub("DELETE", path)

    async def check(self, now: float | None = None) -> dict[str, Action]:
        """One pass over the active servers; returns what was done to each."""
        now = time.time() if now is None else now
        users = await self._hub("GET", "/users?state=ready")
        servers = gpu_servers(users)
        done: dict[str, Action] = {}
        for server in servers:
            state = observe(
                self.states.get(server.key, IdleState()),
                now,
                await self.utilization(server),
                self.policy,
            )
            action = decide(state, now, self.policy)
            if action is Action.WARN:
                await self.notify(
                    server, warning_sentence(server.user, server.gpus, state, now, self.policy)
                )
                state = replace(state, warned_at=now)
            elif action is Action.STOP:
                reason = stopped_sentence(server.gpus, now, self.policy)
                self.log.warning("%s was %s", server.key, reason)
                await self.stop(server)
                if self.state_file:
                    # The time is the decision's, before the stop: any later start is newer.
                    record_stop(
                        stops_file(self.state_file), Stop(server.user, server.name, now, reason)
                    )
                state = IdleState()
            self.states[server.key] = state
            done[server.key] = action
        for key in set(self.states) - {s.key for s in servers}:
            del self.states[key]  # stopped or no longer holding GPUs
        if self.state_file:
            write_sessions(self.state_file, servers, self.states, done, now)
        return done

    async def run(self) -> None:
        stop = stop_requested()
        while not stop.is_set():
            try:
                await self.check()
            except Exception:
                self.log.exception("idle GPU check failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_seconds)

    def start(self) -> None:
        asyncio.run(self.run())


main = IdleGpuCuller.launch_instance

if __name__ == "__main__":
    main()
