"""Real JupyterHub + configurable-http-proxy + TrainHubSpawner against the test control plane.

The tests share one hub and build on one another in file order (spawned servers stay up):
ada (team vision) and bo (team nlp) see their own profiles and spawn; cy (nlp) is refused
over quota; a forged image through the REST API is refused; the ResourceQuota holds on its
own; a hub restart keeps the servers; the idle-GPU service warns, then stops an idle server.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

import pytest
from kubernetes import client

from tests.hub.conftest import HubWorld, wait_for

pytestmark = pytest.mark.timeout(600)


def form_choices(page: str) -> dict[str, dict[str, list[str]]]:
    """{profile slug: {option: [choice values]}} as the spawn form offers them."""
    out: dict[str, dict[str, list[str]]] = {}
    for slug in re.findall(
        r'<input type="radio"\s+name="profile"\s+id="[^"]*"\s+value="([^"]+)"', page
    ):
        out[slug] = {}
        for option in ("image", "gpus"):
            select = re.search(
                rf'<select name="profile-option-{re.escape(slug)}--{option}".*?</select>',
                page,
                re.S,
            )
            assert select, f"no {option} choice for {slug}"
            out[slug][option] = re.findall(r'<option value="([^"]+)"', select.group(0))
    return out


def spawn_with_form(world: HubWorld, user: str, fields: dict[str, str], server: str = "") -> Any:
    s = world.hub.login(user)
    url = f"{world.hub.url}/hub/spawn/{user}" + (f"/{server}" if server else "")
    page = s.get(url, timeout=60)
    assert page.status_code == 200, page.text[-1000:]
    return s.post(url, data={**fields, "_xsrf": s.cookies.get("_xsrf", "")}, timeout=120)


def pod_of(world: HubWorld, team: str, user: str) -> Any:
    pods = [
        p
        for p in world.pods(team)
        if p.metadata.annotations.get("hub.jupyter.org/username") == user
    ]
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return pods[0]


def test_each_user_sees_only_their_teams_profiles(hub_world: HubWorld) -> None:
    ada = hub_world.hub.login("ada").get(f"{hub_world.hub.url}/hub/spawn", timeout=60).text
    assert form_choices(ada) == {
        "vision.a100": {"image": ["pytorch"], "gpus": ["0", "1"]},
        "vision.t4": {"image": ["pytorch"], "gpus": ["0", "1"]},
    }
    bo = hub_world.hub.login("bo").get(f"{hub_world.hub.url}/hub/spawn", timeout=60).text
    assert form_choices(bo) == {
        "nlp.a100": {"image": ["pytorch", "pytorch-nlp"], "gpus": ["0", "1", "2"]},
        "nlp.t4": {"image": ["pytorch", "pytorch-nlp"], "gpus": ["0", "1", "2"]},
    }
    assert "Team nlp on A100 80GB" in bo and "vision" not in bo


def test_two_users_of_two_teams_spawn_into_their_namespaces(hub_world: HubWorld) -> None:
    r = spawn_with_form(
        hub_world,
        "ada",
        {
            "profile": "vision.t4",
            "profile-option-vision.t4--image": "pytorch",
            "profile-option-vision.t4--gpus": "1",
        },
    )
    assert r.status_code == 200, r.text[-1000:]
    # bo spawns through the REST API with the same options a form would post
    token = hub_world.hub.user_token("bo")
    r = hub_world.hub.api(
        "POST",
        "/users/bo/server",
        token=token,
        json={"profile": "nlp.a100", "image": "pytorch-nlp", "gpus": "2"},
    )
    assert r.status_code in (201, 202), r.text
    hub_world.hub.wait_ready("ada")
    hub_world.hub.wait_ready("bo")

    ada = pod_of(hub_world, "vision", "ada")
    assert ada.metadata.namespace == hub_world.namespaces["vision"]
    [c] = ada.spec.containers
    assert c.image == "ghcr.io/trainhub/pytorch:2.5.1-cuda12.4"
    assert c.resources.limits["nvidia.com/gpu"] == c.resources.requests["nvidia.com/gpu"] == "1"
    assert ada.spec.node_selector == {"trainhub.io/pool": "t4"}
    assert ada.spec.service_account_name == "trainhub-notebook"
    assert ada.spec.automount_service_account_token is True
    assert ada.spec.node_name.startswith("kwok-t4") or "t4" in ada.spec.node_name
    env = {e.name: e.value for e in c.env}
    assert env["TRAINHUB_BACKEND"] == "kubernetes"
    assert env["TRAINHUB_K8S_NAMESPACE"] == hub_world.namespaces["vision"]
    assert env["TRAINHUB_TEAM"] == "vision"
    assert env["JUPYTERHUB_USER"] == "ada"

    bo = pod_of(hub_world, "nlp", "bo")
    [c] = bo.spec.containers
    assert c.image == "ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4"
    assert c.resources.limits["nvidia.com/gpu"] == "2"
    assert bo.spec.node_selector == {"trainhub.io/pool": "a100"}
    assert not pod_of_or_none(hub_world, "vision", "bo")

    # the hub serves each through the proxy, from the server started out of the pod's own spec
    for user in ("ada", "bo"):
        status = _through_proxy(hub_world, user)
        assert status.status_code == 200, status.text
    record = hub_world.local_server(ada.metadata.name)
    assert record["namespace"] == hub_world.namespaces["vision"]
    assert {"JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "TRAINHUB_TEAM"} <= set(record["env"])


def pod_of_or_none(world: HubWorld, team: str, user: str) -> Any:
    return [
        p
        for p in world.pods(team)
        if p.metadata.annotations.get("hub.jupyter.org/username") == user
    ]


def _through_proxy(world: HubWorld, user: str) -> Any:
    import requests

    token = world.hub.user_token(user)
    return requests.get(
        f"{world.hub.url}/user/{user}/api/status",
        timeout=60,
        headers={"Authorization": f"token {token}"},
    )


def test_an_over_quota_spawn_is_refused_with_the_sentence(hub_world: HubWorld) -> None:
    # bo holds 2 of team nlp's 3 GPUs; cy (nlp) asks for 2 more
    r = spawn_with_form(
        hub_world,
        "cy",
        {
            "profile": "nlp.a100",
            "profile-option-nlp.a100--image": "pytorch",
            "profile-option-nlp.a100--gpus": "2",
        },
    )
    sentence = "team nlp uses 2 of 3 GPUs; this profile needs 2"
    text = html.unescape(r.text)
    if sentence not in text:  # a slow refusal is reported by the spawn page's progress stream
        events = hub_world.hub.api("GET", "/users/cy/server/progress").text
        assert sentence in events, text[-2000:]
    assert not pod_of_or_none(hub_world, "nlp", "cy")
    # one GPU still fits
    token = hub_world.hub.user_token("cy")
    r = hub_world.hub.api(
        "POST", "/users/cy/server", token=token, json={"profile": "nlp.t4", "gpus": "1"}
    )
    assert r.status_code in (201, 202), r.text
    hub_world.hub.wait_ready("cy")
    r = hub_world.hub.api("DELETE", "/users/cy/server", token=token)
    assert r.status_code in (202, 204), r.text
    wait_for("cy's pod to go", lambda: not pod_of_or_none(hub_world, "nlp", "cy"), timeout=120)


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (
            {"profile": "vision.a100", "image": "docker.io/evil/miner:1"},
            "image 'docker.io/evil/miner:1' is not allowed: team vision allows its catalog images "
            "only (pytorch)",
        ),
        (
            {"profile": "vision.a100", "image": "ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4"},
            "image 'ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4' "
            "is not allowed: team vision allows its catalog images only",
        ),
        ({"profile": "nlp.a100", "gpus": "1"}, "profile 'nlp.a100' is not offered to you"),
        (
            {"profile": "vision.a100", "namespace": "kube-system"},
            "option 'namespace' cannot be chosen",
        ),
        (
            {"profile": "vision.a100", "gpus": "8"},
            "'8' GPUs is not a session size of team vision in pool a100",
        ),
    ],
)
def test_forged_options_through_the_rest_api_are_refused(
    hub_world: HubWorld, options: dict, sentence: str
) -> None:
    token = hub_world.hub.user_token("ada")
    before = {p.metadata.name for ns in ("vision", "nlp") for p in hub_world.pods(ns)}
    r = hub_world.hub.api("POST", "/users/ada/servers/forged", token=token, json=options)
    assert r.status_code == 403, r.text
    assert sentence in r.json()["message"]
    after = {p.metadata.name for ns in ("vision", "nlp") for p in hub_world.pods(ns)}
    assert after == before


def _gpu_pod(name: str, gpus: int) -> dict[str, Any]:
    secure = {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"trainhub.io/pool": "a100"},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.invalid/x:1",
                    "securityContext": secure,
                    "resources": {
                        "limits": {"nvidia.com/gpu": str(gpus)},
                        "requests": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
    }


def test_the_resource_quota_holds_without_the_spawner(hub_world: HubWorld) -> None:
    """Pods created straight through the API (as a raced spawn would): the last one is refused."""
    core = client.CoreV1Api(hub_world.api)
    ns = hub_world.namespaces["nlp"]
    wait_for(
        "the quota to count bo's GPUs",
        lambda: (
            core.read_namespaced_resource_quota("trainhub-quota", ns).status.used.get(
                "requests.nvidia.com/gpu"
            )
            == "2"
        ),
    )
    core.create_namespaced_pod(ns, _gpu_pod("filler", 1))  # 3 of 3
    try:
        with pytest.raises(client.ApiException) as refused:
            core.create_namespaced_pod(ns, _gpu_pod("one-too-many", 1))
        assert refused.value.status == 403
        assert "exceeded quota: trainhub-quota" in refused.value.body
        assert (
            "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=3, limited: "
            "requests.nvidia.com/gpu=3" in refused.value.body
        )
    finally:
        core.delete_namespaced_pod("filler", ns, grace_period_seconds=0)


def test_a_hub_restart_keeps_running_servers(hub_world: HubWorld) -> None:
    hub = hub_world.hub
    before = {
        u: pod_of(hub_world, t, u).metadata.uid for u, t in (("ada", "vision"), ("bo", "nlp"))
    }
    local = hub_world.local_server(pod_of(hub_world, "vision", "ada").metadata.name)
    hub.stop()
    hub.start()
    for user in ("ada", "bo"):
        assert hub.server(user)["ready"], user
        assert _through_proxy(hub_world, user).status_code == 200
    after = {u: pod_of(hub_world, t, u).metadata.uid for u, t in (("ada", "vision"), ("bo", "nlp"))}
    assert after == before
    assert (
        hub_world.local_server(pod_of(hub_world, "vision", "ada").metadata.name)["pid"]
        == local["pid"]
    )


def _notices(world: HubWorld, user: str, token: str) -> list[dict[str, Any]]:
    """The notices of the user's server, read through the proxy as JupyterLab reads them."""
    import requests

    r = requests.get(
        f"{world.hub.url}/user/{user}/trainhub/api/notices",
        timeout=30,
        headers={"Authorization": f"token {token}"},
        allow_redirects=False,
    )
    return r.json()["notices"] if r.status_code == 200 else []


def test_the_idle_gpu_service_warns_then_stops_an_idle_server(hub_world: HubWorld) -> None:
    """The hub-managed service (1 s checks, warn after 1.2 s and stop after 6 s under 5 %):
    the warning reaches bo's JupyterLab as a notice, and bo's spawn form says why it stopped."""
    bo_pod = pod_of(hub_world, "nlp", "bo").metadata.name
    ada_pod = pod_of(hub_world, "vision", "ada").metadata.name
    bo_token, ada_token = hub_world.hub.user_token("bo"), hub_world.hub.user_token("ada")
    assert _notices(hub_world, "bo", bo_token) == []
    hub_world.utilization.by_pod[bo_pod] = 1.0  # bo's GPUs go idle; ada's stay busy
    started = time.monotonic()
    [notice] = wait_for(
        "the warning in bo's server", lambda: _notices(hub_world, "bo", bo_token), interval=0.1
    )
    assert hub_world.hub.server("bo")["ready"]  # read from the server before it was stopped
    assert notice["level"] == "warning"
    assert notice["source"] == "trainhub-idle-gpu"  # the service's own token, not bo's
    assert "bo's server has used less than 5% of its 2 GPUs" in notice["message"]
    wait_for("bo's server to be stopped", lambda: hub_world.hub.server("bo") is None, timeout=90)
    assert time.monotonic() - started >= 5  # not before the policy's minutes
    warnings = [w for w in hub_world.utilization.warnings if w["user"] == "bo"]
    assert warnings and warnings[0]["message"] == notice["message"]
    assert not any(w["user"] == "ada" for w in hub_world.utilization.warnings)
    assert hub_world.hub.server("ada")["ready"]
    assert _notices(hub_world, "ada", ada_token) == []
    assert any(f'pod="{ada_pod}"' in q for q in hub_world.utilization.queries)
    wait_for("bo's pod to go", lambda: not pod_of_or_none(hub_world, "nlp", "bo"), timeout=120)

    # bo opens the spawn form again: it says why the server was stopped
    form = hub_world.hub.login("bo").get(f"{hub_world.hub.url}/hub/spawn/bo", timeout=60)
    assert form.status_code == 200, form.text[-1000:]
    assert re.search(
        r"This server was stopped at \d\d:\d\d UTC on \d{4}-\d\d-\d\d: "
        r"its 2 GPUs stayed under 5% for 0\.1 minutes\.",
        html.unescape(form.text),
    ), form.text[-3000:]
    assert "nlp.a100" in form_choices(form.text)  # the profiles are still offered below it

    # until a new server of that name has started: then the stop is old news
    r = hub_world.hub.api(
        "POST", "/users/bo/server", token=bo_token, json={"profile": "nlp.t4", "gpus": "0"}
    )
    assert r.status_code in (201, 202), r.text
    hub_world.hub.wait_ready("bo")
    r = hub_world.hub.api("DELETE", "/users/bo/server", token=bo_token)
    assert r.status_code in (202, 204), r.text
    wait_for("bo's server to stop", lambda: hub_world.hub.server("bo") is None, timeout=120)
    form = hub_world.hub.login("bo").get(f"{hub_world.hub.url}/hub/spawn/bo", timeout=60)
    assert form.status_code == 200 and "nlp.a100" in form_choices(form.text)
    assert "This server was stopped" not in html.unescape(form.text)
