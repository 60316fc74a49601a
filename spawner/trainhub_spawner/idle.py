"""Idle GPU sessions: warn, then stop servers whose GPUs stay under a utilization threshold.

A hub-managed service in the manner of jupyterhub-idle-culler: it lists active servers
through the hub REST API with its own token (scopes ``list:users``, ``read:users`` and
``admin:servers``: the last one lets it read each server's spawner state, where the pod
name and namespace are, and stop servers), asks a utilization source how busy each
session's GPUs were, and applies the policy of :mod:`trainhub_spawner.idle_policy`. Sessions
without GPUs are left to the ordinary idle culler.

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
from dataclasses import replace
from typing import Any, ClassVar

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from traitlets import Float, Unicode, default
from traitlets.config import Application

from trainhub_spawner.gpu_sessions import GpuServer, gpu_servers, notice_url, write_sessions
from trainhub_spawner.idle_policy import (
    Action,
    IdlePolicy,
    IdleState,
    decide,
    observe,
    stopped_sentence,
    warning_sentence,
)
from trainhub_spawner.service_signals import stop_requested
from trainhub_spawner.stops import Stop, record_stop, stops_file


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
