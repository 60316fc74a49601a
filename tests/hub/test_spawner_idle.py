"""The idle-GPU policy: warn once, then stop, only on evidence of idleness; the warning
posted to the server, why a server was stopped kept for the spawn form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainhub.usage.prometheus import IdleSession
from trainhub_spawner.gpu_sessions import GpuServer, gpu_servers, notice_url, sessions_document
from trainhub_spawner.idle_policy import (
    Action,
    IdlePolicy,
    IdleState,
    decide,
    observe,
    stopped_sentence,
    warning_sentence,
)
from trainhub_spawner.metrics_service import read_sessions
from trainhub_spawner.stops import (
    KEEP_SECONDS,
    Stop,
    form_notice,
    read_stops,
    record_stop,
    stops_file,
)

POLICY = IdlePolicy(threshold_percent=10, warn_after_minutes=20, stop_after_minutes=30)


def run(readings: list[float | None], step_minutes: float = 5) -> list[Action]:
    """Feed one reading per step; apply the service's own bookkeeping after each decision."""
    state, actions = IdleState(), []
    for i, util in enumerate(readings):
        now = i * step_minutes * 60
        state = observe(state, now, util, POLICY)
        action = decide(state, now, POLICY)
        if action is Action.WARN:
            state = IdleState(state.low_since, warned_at=now)
        actions.append(action)
    return actions


def test_idle_gpus_are_warned_once_then_stopped() -> None:
    # idle from t=0: warn at 20 min, stop at 30 min
    assert run([0, 1, 2, 3, 4, 5, 6]) == [Action.KEEP] * 4 + [Action.WARN, Action.KEEP, Action.STOP]


def test_a_busy_reading_starts_the_idle_stretch_over() -> None:
    actions = run([0, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0])
    assert actions[4] is Action.WARN
    assert Action.STOP not in actions[:11]
    assert actions[9] is Action.KEEP and actions[10] is Action.WARN  # a new stretch, a new warning
    assert actions[11] is Action.KEEP


def test_utilization_at_the_threshold_is_busy() -> None:
    assert run([10] * 10) == [Action.KEEP] * 10
    assert run([9.9] * 7)[-1] is Action.STOP


def test_missing_readings_never_count_as_idle() -> None:
    assert run([None] * 10) == [Action.KEEP] * 10
    actions = run([0, 0, 0, None, 0, 0, 0, 0])
    assert Action.STOP not in actions  # the gap restarted the stretch at 20 min


def test_warn_and_stop_together_when_warning_is_disabled_by_equal_minutes() -> None:
    p = IdlePolicy(threshold_percent=5, warn_after_minutes=30, stop_after_minutes=30)
    state = observe(IdleState(), 0, 0, p)
    assert decide(state, 29 * 60, p) is Action.KEEP
    assert decide(state, 30 * 60, p) is Action.STOP


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold_percent": 101}, "threshold_percent: 101 is not between 0 and 100"),
        (
            {"warn_after_minutes": 50, "stop_after_minutes": 40},
            "warn_after_minutes must be between",
        ),
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IdlePolicy(**kwargs)


def test_the_warning_says_how_long_and_what_happens_next() -> None:
    state = IdleState(low_since=0)
    assert warning_sentence("ada", 1, state, 20 * 60, POLICY) == (
        "ada's server has used less than 10% of its 1 GPU for 20 minutes; "
        "it will be stopped in 10 minutes unless it gets busy"
    )


def test_only_ready_servers_holding_gpus_are_watched(tmp_path: Path) -> None:
    users = [
        {
            "name": "ada",
            "servers": {
                "": {
                    "ready": True,
                    "url": "/user/ada/",
                    "user_options": {"gpus": "2"},
                    "state": {"pod_name": "jupyter-ada", "namespace": "team-nlp"},
                }
            },
        },
        {
            "name": "bob",
            "servers": {
                "": {
                    "ready": True,
                    "user_options": {"gpus": "0"},
                    "state": {"pod_name": "jupyter-bob", "namespace": "team-nlp"},
                }
            },
        },
        {
            "name": "cy",
            "servers": {
                "lab": {
                    "ready": False,
                    "user_options": {"gpus": "1"},
                    "state": {"pod_name": "jupyter-cy", "namespace": "t"},
                }
            },
        },
        {
            "name": "di",
            "servers": {"": {"ready": True, "user_options": {"gpus": "x"}, "state": {}}},
        },
        {"name": "ed", "servers": {}},
        {
            "name": "fay",
            "servers": {
                "": {
                    "ready": True,
                    "user_options": {"profile": "vision.t4-shared", "gpus": "1/4"},
                    "state": {"pod_name": "jupyter-fay", "namespace": "team-vision"},
                }
            },
        },
    ]
    fay = GpuServer("fay", "", "team-vision", "jupyter-fay", 0.25, team="vision")
    assert gpu_servers(users) == [
        GpuServer("ada", "", "team-nlp", "jupyter-ada", 2, url="/user/ada/"),
        fay,  # a shared session is watched too, holding its share's fraction
    ]
    # What the metrics service reads of the pass: the share's fraction, not a whole GPU.
    document = sessions_document([fay], {fay.key: IdleState(low_since=5)}, {}, 10)
    assert document["sessions"] == [
        {"user": "fay", "server": "", "team": "vision", "gpus": 0.25, "idle": True, "idle_since": 5}
    ]
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps(document))
    assert read_sessions(str(path)) == [IdleSession("fay", "vision", 0.25, True)]
    assert warning_sentence("fay", 0.25, IdleState(low_since=0), 20 * 60, POLICY).startswith(
        "fay's server has used less than 10% of its 1/4 of a GPU for 20 minutes"
    )
    assert "its 1/4 of a GPU stayed under 10%" in stopped_sentence(0.25, 60, POLICY)


def test_the_warning_is_posted_to_the_server_through_the_proxy() -> None:
    ada = GpuServer("ada", "", "ns", "pod", 1, url="/user/ada/")
    assert notice_url("http://proxy-public/", ada) == (
        "http://proxy-public/user/ada/trainhub/api/notices"
    )
    named = GpuServer("ada", "big one", "ns", "pod", 1, url="/base/user/ada/big%20one/")
    assert notice_url("http://127.0.0.1:8000", named) == (
        "http://127.0.0.1:8000/base/user/ada/big%20one/trainhub/api/notices"
    )


def test_the_stop_says_when_and_why() -> None:
    at = 1_746_194_520.0  # 2025-05-02 14:02 UTC
    assert stopped_sentence(1, at, POLICY) == (
        "stopped at 14:02 UTC on 2025-05-02: its 1 GPU stayed under 10% for 30 minutes"
    )
    assert "its 2 GPUs stayed under 10% for 0.1 minutes" in stopped_sentence(
        2, at, IdlePolicy(10, 0.02, 0.1)
    )


def test_the_latest_stop_of_each_server_is_kept_beside_the_state_file(tmp_path: Path) -> None:
    path = stops_file(str(tmp_path / "idle-gpu-sessions.json"))
    assert path == str(tmp_path / "idle-gpu-sessions-stops.json")
    assert read_stops(path) == {}  # none yet
    record_stop(path, Stop("ada", "", 100.0, "stopped first"))
    record_stop(path, Stop("ada", "lab", 200.0, "stopped lab"))
    record_stop(path, Stop("ada", "", 300.0, "stopped again"))
    assert read_stops(path) == {
        "ada/": Stop("ada", "", 300.0, "stopped again"),
        "ada/lab": Stop("ada", "lab", 200.0, "stopped lab"),
    }
    record_stop(path, Stop("bo", "", 200.0 + KEEP_SECONDS + 1, "stopped much later"))
    assert set(read_stops(path)) == {"ada/", "bo/"}  # ada's lab stop was too old to keep
    assert [p.name for p in tmp_path.iterdir()] == [Path(path).name]  # no temporary left
    Path(path).write_text("{not json")
    assert read_stops(path) == {}
    Path(path).write_text(json.dumps({"stops": [{"user": "ada"}]}))
    assert read_stops(path) == {}


def test_the_spawn_form_says_a_stop_until_the_server_starts_again() -> None:
    stop = Stop("ada", "", 100.0, "stopped <at> {{ now }} & then")
    said = form_notice(stop, started_at=None)
    assert said == (
        '<div class="alert alert-warning trainhub-stopped" role="alert">'
        "This server was stopped &lt;at&gt; &#123;&#123; now &#125;&#125; &amp; then.</div>\n"
    )
    assert form_notice(stop, started_at=99.0) == said  # started before the stop
    assert form_notice(stop, started_at=101.0) == ""  # started since
    assert form_notice(None, started_at=None) == ""


# --- one pass of the service against a stand-in hub, proxy and Prometheus -------------------------
class StandIn:
    """The hub API, the servers behind the proxy (ada's cannot take notices) and Prometheus."""

    def __init__(self) -> None:
        from tornado import web

        self.notices: list[tuple[str, str, dict]] = []
        self.stopped: list[str] = []
        owner = self

        def server(name: str, url: str) -> dict:
            return {
                "ready": True,
                "url": url,
                "user_options": {"gpus": "1"},
                "state": {"pod_name": f"pod-{name}", "namespace": "team"},
            }

        class Users(web.RequestHandler):
            def get(self) -> None:
                self.write(
                    json.dumps(
                        [
                            {"name": "ada", "servers": {"": server("ada", "/user/ada/")}},
                            {"name": "bo", "servers": {"big": server("bo", "/user/bo/big/")}},
                        ]
                    )
                )

        class Server(web.RequestHandler):
            def delete(self, path: str) -> None:
                owner.stopped.append(path)
                self.set_status(204)

        class Notices(web.RequestHandler):
            def post(self, path: str) -> None:
                if path == "ada":
                    raise web.HTTPError(404)  # a server without the notices route
                owner.notices.append(
                    (path, self.request.headers["Authorization"], json.loads(self.request.body))
                )
                self.set_status(201)

        class Query(web.RequestHandler):
            def get(self) -> None:
                result = [{"metric": {}, "value": [0, "0.5"]}]
                self.write({"status": "success", "data": {"result": result}})

        class Webhook(web.RequestHandler):
            def post(self) -> None:
                raise web.HTTPError(502)  # the chat bridge is down

        self.app = web.Application(
            [
                (r"/hub/api/users", Users),
                (r"/hub/api/users/(.+)", Server),
                (r"/user/(.+)/trainhub/api/notices", Notices),
                (r"/api/v1/query", Query),
                (r"/webhook", Webhook),
            ]
        )


async def test_a_pass_posts_the_warning_to_each_server_and_records_each_stop(
    tmp_path: Path,
) -> None:
    from tornado.httpserver import HTTPServer
    from tornado.testing import bind_unused_port

    from trainhub_spawner.idle import IdleGpuCuller

    stand_in = StandIn()
    sock, port = bind_unused_port()
    http = HTTPServer(stand_in.app)
    http.add_sockets([sock])
    url = f"http://127.0.0.1:{port}"
    state_file = tmp_path / "idle-gpu-sessions.json"
    culler = IdleGpuCuller(
        hub_api_url=f"{url}/hub/api",
        api_token="service-token",
        prometheus_url=url,
        proxy_url=url,
        warning_webhook=f"{url}/webhook",
        state_file=str(state_file),
        warn_after_minutes=0,
        stop_after_minutes=1,
    )
    culler.initialize([])
    try:
        # ada's server refuses the notice and the webhook fails: logged, and bo's is still
        # warned in the same pass
        assert await culler.check(now=0) == {"ada/": Action.WARN, "bo/big": Action.WARN}
        [(path, auth, body)] = stand_in.notices
        assert (path, auth) == ("bo/big", "token service-token")
        assert body["level"] == "warning"
        assert body["message"].startswith("bo's server has used less than 5% of its 1 GPU")
        assert all(s.warned_at == 0 for s in culler.states.values())  # not warned again

        assert await culler.check(now=60) == {"ada/": Action.STOP, "bo/big": Action.STOP}
        assert stand_in.stopped == ["ada/server", "bo/servers/big"]
        stops = read_stops(stops_file(str(state_file)))
        assert stops["bo/big"] == Stop(
            "bo",
            "big",
            60,
            "stopped at 00:01 UTC on 1970-01-01: its 1 GPU stayed under 5% for 1 minute",
        )
        assert set(stops) == {"ada/", "bo/big"}
    finally:
        http.stop()
