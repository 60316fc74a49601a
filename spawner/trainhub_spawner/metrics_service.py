"""The cluster-wide Prometheus exporter: a hub-managed service (tornado) at
``/services/trainhub-metrics/metrics``.

    python -m trainhub_spawner.metrics_service   # started by the hub (hub_config)

Every scrape is authenticated by the hub (``HubAuthenticated``): the scraper sends a hub
token that holds ``access:services!service=trainhub-metrics`` (hub_config registers a
``prometheus`` service with such a token when TRAINHUB_METRICS_SCRAPE_TOKEN is set); a
request without one answers 403. Metrics are computed at scrape time from the job backends
(:func:`cluster_backends`: the local store, or one Kubernetes backend per team of the teams
file) and the idle-GPU service's sessions file, through a registry of its own per scrape.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from jupyterhub.services.auth import HubAuth, HubAuthenticated
from tornado import ioloop, web
from tornado.log import app_log

from trainhub import settings
from trainhub.alerts import saturation
from trainhub.alerts.channels import TeamEvent
from trainhub.alerts.saturation import Saturation
from trainhub.teams import load_teams
from trainhub.usage.compute import held_gpus
from trainhub.usage.prometheus import (
    CONTENT_TYPE,
    IdleSession,
    Snapshot,
    backend_snapshot,
    exposition,
)
from trainhub_spawner.service_signals import stop_requested

NAME = "trainhub-metrics"


def cluster_backends() -> list[Any]:
    """Every team's jobs: the local store (TRAINHUB_BACKEND=local, every user's jobs in it), or
    one Kubernetes backend per team of TRAINHUB_TEAMS_FILE, each reading its namespace and the
    team's shared volume (which this service's pod must mount for the usage figures)."""
    from trainhub.backends import factory

    if settings.backend_name() != "kubernetes":
        return [factory.backend_class().from_settings(settings.home())]
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.teams import load_teams

    teams = load_teams(os.environ.get("TRAINHUB_TEAMS_FILE", "/etc/trainhub/teams.yaml"))
    return [KubernetesBackend(teams, team.name) for team in teams.teams]


class QuotaWatch:
    """Every minute: each team whose jobs hold all the GPUs of its quota (the teams file's
    nominal quota, summed over pools) for ``alerts.quota_saturated_minutes`` is announced to
    the team's channels, once per stretch (trainhub.alerts.saturation)."""

    def __init__(self, backends: list[Any]):
        self.backends = backends
        self.states: dict[str, Saturation] = {}

    def check(self, now: float | None = None) -> list[str]:
        from trainhub.alerts.announce import announce_team, team_alerts

        now = time.time() if now is None else now
        teams_file = os.environ.get("TRAINHUB_TEAMS_FILE")
        if not teams_file or not Path(teams_file).is_file():
            return []
        teams = load_teams(teams_file)
        held: dict[str, float] = {}
        for record in backend_snapshot(self.backends).records:
            if record.state.active:
                team = record.team or record.spec.team or ""
                held[team] = held.get(team, 0) + held_gpus(record)  # a 1/4 share is 0.25
        announced = []
        for team in teams.teams:
            alerts = team_alerts(team.name)
            quota = sum(q.gpus for q in team.quota.values())
            minutes = alerts.quota_saturated_minutes if alerts else 30.0
            state, fire = saturation.observe(
                self.states.get(team.name, Saturation()),
                now,
                held.get(team.name, 0),
                quota,
                minutes,
            )
            self.states[team.name] = state
            if fire and state.since is not None:
                text = saturation.sentence(held.get(team.name, 0), quota, state.since, now)
                announce_team(settings.home(), team.name, TeamEvent.QUOTA_SATURATED, text)
                announced.append(team.name)
        return announced


def read_sessions(path: str) -> list[IdleSession]:
    """The idle-GPU service's latest pass (trainhub_spawner.gpu_sessions.write_sessions); no
    file yet: no session seen."""
    if not path:
        return []
    try:
        document = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return []
    return [
        IdleSession(str(s["user"]), str(s.get("team") or ""), float(s["gpus"]), bool(s["idle"]))
        for s in document.get("sessions", [])
    ]


class MetricsHandler(HubAuthenticated, web.RequestHandler):
    def initialize(self, hub_auth: HubAuth, backends: list[Any], sessions_file: str) -> None:
        self.hub_auth = hub_auth
        self.backends = backends
        self.sessions_file = sessions_file

    def snapshot(self) -> Snapshot:
        return backend_snapshot(self.backends, sessions=read_sessions(self.sessions_file))

    async def get(self) -> None:
        if self.current_user is None:  # never a redirect to a login page: a scraper is no browser
            raise web.HTTPError(403, "a hub token with access to this service is required")
        loop = ioloop.IOLoop.current()
        body = await loop.run_in_executor(None, exposition, self.snapshot)  # off the event loop
        self.set_header("Content-Type", CONTENT_TYPE)
        self.finish(body)


def make_app(
    backends: list[Any] | None = None, sessions_file: str | None = None
) -> web.Application:
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{NAME}/")
    hub_auth = HubAuth(cache_max_age=60)
    return web.Application(
        [
            (
                prefix.rstrip("/") + "/metrics",
                MetricsHandler,
                {
                    "hub_auth": hub_auth,
                    "backends": cluster_backends() if backends is None else backends,
                    "sessions_file": (
                        os.environ.get("TRAINHUB_IDLE_STATE_FILE", "")
                        if sessions_file is None
                        else sessions_file
                    ),
                },
            )
        ]
    )


async def serve() -> None:
    from urllib.parse import urlparse

    stop = stop_requested()  # before listening: a hub that sees it up may stop it
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10102"))
    backends = cluster_backends()
    server = make_app(backends).listen(url.port or 80, url.hostname or "127.0.0.1")
    watch = QuotaWatch(backends)

    async def check_quotas() -> None:
        try:
            await ioloop.IOLoop.current().run_in_executor(None, watch.check)
        except Exception:
            app_log.exception("trainhub: the quota check failed")

    checks = ioloop.PeriodicCallback(check_quotas, 60_000)
    checks.start()
    await stop.wait()
    checks.stop()
    server.stop()


def main() -> None:
    asyncio.run(serve())


if __name__ == "__main__":
    main()
