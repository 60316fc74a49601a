"""The hub's servers that hold GPUs, as the idle-GPU service sees them: read from the hub
API's user list, reached through the proxy for notices, and reported after each pass to the
metrics service (the state file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainhub.jobs.shares import parse_share
from trainhub_spawner.idle_policy import Action, IdleState
from trainhub_spawner.profiles import session_size
from trainhub_spawner.stops import replace_json


@dataclass(frozen=True)
class GpuServer:
    """An active server that holds GPUs, as the hub API describes it."""

    user: str
    name: str  # "" for the default server
    namespace: str
    pod: str
    gpus: float  # whole GPUs, or a share's fraction of one (0.25 for "1/4")
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
            gpus = held(options.get("gpus", 0))
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


def held(size: object) -> float:
    """The GPUs a session's spawn option holds: 2 for "2", 0.25 for the share "1/4" (so the
    idle-GPU service watches shared sessions too and the metrics count their fraction); 0 for
    anything that is no session size."""
    value = session_size(size)
    if isinstance(value, str):
        return float(parse_share(value))
    return float(value or 0)


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
