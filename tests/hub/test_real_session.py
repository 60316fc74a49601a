"""A real notebook pod: TrainHubSpawner starts the user's server on the cluster's real node.

No stand-in here (no ``get_pod_url`` hook): the pod runs the curated ``base`` image from
``images/build.sh`` (Python, JupyterLab, jupyterhub-singleuser, trainhub: what a session
serves; 0.55 GB, imported into the node's containerd in seconds, where pytorch-cpu's 6.2 GB
take ~4 min and twice that on disk: containerd keeps the layers and their unpacked
snapshots, per cluster, since each cluster's containerd has its own store) in the team's
namespace (Pod Security ``restricted``
enforced), as the notebook ServiceAccount, with the team's shared volume. JupyterHub's
configurable-http-proxy (on 127.0.0.1) reaches the pod's IP on the node's bridge; the pod
reaches the hub API at ``hub_connect_url``, the bridge's gateway address, where the hub's
own server listens (and nowhere else). The teams file has one pool, the real node (its
label, toleration and 2 fake GPUs), and one team.

One test, two servers at once (so the tier costs one spawn): the default server from the
spawn form without a GPU, and a named server with 1 GPU through the REST API, whose kernel
sees one of the node's fake devices through trainhub's NVML sampler.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client

from tests.fixtures.k8s import _cluster_module
from tests.hub.conftest import HubWorld, real_node_pool, running_hub, wait_for
from tests.k8s.test_real_jobs import RUN_AS, built_image, import_built_image

pytestmark = pytest.mark.timeout(900)

USER = "dee"
TEAM = "lab"
POOL = "real"
IMAGE = "base"  # the curated session image without a framework
# Where the pods serve: their IPs on the node's bridge, nothing in between.
REAL_PODS_CONFIG = """
c.KubeSpawner.cpu_guarantee = 0.25
c.KubeSpawner.mem_guarantee = "512M"
# The session's files on the team's shared volume (job pods read bundles from there too).
c.KubeSpawner.notebook_dir = {notebook_dir!r}
"""
# What the kernel of a session reports: its GPU environment and what NVML shows trainhub.
PROBE = """
import json, os
from trainhub.metrics.nvml import GpuSampler, gpu_inventory
sampler = GpuSampler([0])
opened = sampler.open()
sample = sampler.sample() if opened else []
sampler.close()
print(json.dumps({
    "env": {k: os.environ.get(k) for k in (
        "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "FAKE_NVML_STATE", "TRAINHUB_BACKEND")},
    "library": os.path.exists("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"),
    "inventory": gpu_inventory().model_dump(),
    "opened": opened, "reason": sampler.reason, "sample": sample,
    "uid": os.getuid(),
}))
"""


def real_teams_data(suffix: str, node: Any, image: str, shared: Path) -> dict[str, Any]:
    return {
        "pools": [
            real_node_pool(node, POOL),
        ],
        "images": [{"name": IMAGE, "image": image}],
        "teams": [
            {
                "name": TEAM,
                "groups": [TEAM],
                "namespace": f"hub-{TEAM}-{suffix}",
                "quota": {POOL: {"gpus": 2, "cpu": "2", "memory": "4Gi"}},
                "images": [IMAGE],
                "session_gpus": [0, 1],
                "shared_volume": {"claim": "shared", "mount_path": str(shared)},
            }
        ],
    }


@pytest.fixture(scope="module")
def session_image(k8s_real_node: Any) -> str:
    return import_built_image(k8s_real_node, IMAGE)


@pytest.fixture(scope="module")
def real_hub(
    k8s_cluster: Any,
    k8s_real_node: Any,
    session_image: str,
    chp: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HubWorld]:
    tmp = tmp_path_factory.mktemp("realhub")
    shared = tmp / "shared" / TEAM
    shared.mkdir(parents=True)
    os.chown(shared, RUN_AS, 100)  # hostPath volumes get no fsGroup: the session user's own
    data = real_teams_data(secrets.token_hex(3), k8s_real_node, session_image, shared)
    with running_hub(
        k8s_cluster,
        chp,
        tmp,
        data,
        {USER: TEAM},
        hub_ip=k8s_real_node.gateway,
        pods_config=REAL_PODS_CONFIG.replace("{notebook_dir!r}", repr(str(shared))),
        extra_env={"TRAINHUB_IDLE_STOP_MINUTES": "0"},  # no idle service in this hub
    ) as world:
        yield world


@pytest.fixture
def busy_gpus(k8s_real_node: Any) -> Iterator[dict[str, int]]:
    """Each of the node's fake GPUs at its own utilization (uuid -> percent), so that what a
    session samples names the device it was given; the node's state is put back after."""
    path = k8s_real_node.nvml_state
    before = path.read_text()
    fields = dict(line.split("=", 1) for line in before.splitlines() if "=" in line)
    busy = {fields[f"gpu{i}.uuid"]: 41 + i for i in range(int(fields["gpu_count"]))}
    for i in range(len(busy)):  # set, or added where the node's file leaves it out (0)
        fields[f"gpu{i}.utilization_gpu"] = str(41 + i)
    _replace(path, "".join(f"{k}={v}\n" for k, v in fields.items()))
    try:
        yield busy
    finally:
        _replace(path, before)


def _replace(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)  # the library and the device plugin re-read it whole


# --- helpers --------------------------------------------------------------------------------------
def session_pods(world: HubWorld, user: str = USER) -> list[Any]:
    """The user's session pods in the team's namespace (job pods are not hub-spawned)."""
    return [
        p
        for p in world.pods(TEAM)
        if (p.metadata.annotations or {}).get("hub.jupyter.org/username") == user
    ]


def pod_of_server(world: HubWorld, server: str) -> Any:
    pods = [
        p
        for p in session_pods(world)
        if p.metadata.annotations.get("hub.jupyter.org/servername", "") == server
    ]
    assert len(pods) == 1, [p.metadata.name for p in session_pods(world)]
    return pods[0]


def through_proxy(world: HubWorld, token: str, path: str, method: str = "GET", **kw: Any) -> Any:
    return requests.request(
        method,
        f"{world.hub.url}{path}",
        headers={"Authorization": f"token {token}"},
        timeout=60,
        **kw,
    )


def run_in_kernel(world: HubWorld, token: str, base: str, code: str) -> str:
    """Run code in a new kernel of the session (REST + websocket through the proxy); its
    stdout."""
    kernel = through_proxy(world, token, f"{base}/api/kernels", "POST", json={})
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    try:
        return execute(world, token, base, kernel_id, code)
    finally:
        through_proxy(world, token, f"{base}/api/kernels/{kernel_id}", "DELETE")


def execute(world: HubWorld, token: str, base: str, kernel_id: str, code: str) -> str:
    """Run code in a running kernel of the session, through the proxy; its stdout."""
    import websocket

    ws_url = world.hub.url.replace("http://", "ws://") + f"{base}/api/kernels/{kernel_id}/channels"
    conn = websocket.create_connection(
        ws_url, header=[f"Authorization: token {token}"], timeout=120
    )
    try:
        msg_id = uuid.uuid4().hex
        conn.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "username": USER,
                        "session": uuid.uuid4().hex,
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {"code": code, "silent": False, "store_history": False},
                    "channel": "shell",
                }
            )
        )
        out, deadline = [], time.monotonic() + 120
        while time.monotonic() < deadline:
            msg = json.loads(conn.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream":
                out.append(msg["content"]["text"])
            elif kind == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(out)
        raise AssertionError(f"the kernel did not finish; output so far: {out}")
    finally:
        conn.close()


# --- the test -------------------------------------------------------------------------------------
def test_a_real_session_pod_is_spawned_served_through_the_proxy_and_stopped(
    real_hub: HubWorld,
    k8s_real_node: Any,
    session_image: str,
    busy_gpus: dict[str, int],
) -> None:
    world, hub = real_hub, real_hub.hub
    [team] = yaml.safe_load(world.teams_file.read_text())["teams"]
    shared = Path(team["shared_volume"]["mount_path"])
    started = time.monotonic()
    # The default server from the spawn form (no GPU); a named one with 1 GPU through the API.
    s = hub.login(USER)
    url = f"{hub.url}/hub/spawn/{USER}"
    assert s.get(url, timeout=60).status_code == 200
    slug = f"{TEAM}.{POOL}"
    r = s.post(
        url,
        data={
            "profile": slug,
            f"profile-option-{slug}--image": IMAGE,
            f"profile-option-{slug}--gpus": "0",
            "_xsrf": s.cookies.get("_xsrf", ""),
        },
        timeout=120,
    )
    assert r.status_code == 200, r.text[-1000:]
    token = hub.user_token(USER)
    r = hub.api(
        "POST",
        f"/users/{USER}/servers/gpu",
        token=token,
        json={"profile": slug, "image": IMAGE, "gpus": "1"},
    )
    assert r.status_code in (201, 202), r.text
    hub.wait_ready(USER, timeout=300)
    hub.wait_ready(USER, "gpu", timeout=300)
    print(f"two real sessions ready in {time.monotonic() - started:.1f} s")

    # The pods, as the API server has them: on the real node, restricted, the curated image.
    ns = client.CoreV1Api(world.api).read_namespace(world.namespaces[TEAM])
    assert ns.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"
    built = built_image(IMAGE)
    image_id = (
        _cluster_module()._load_node().archive_images(Path(built["archive"]))[built["reference"]]
    )
    cpu_pod, gpu_pod = pod_of_server(world, ""), pod_of_server(world, "gpu")
    for pod in (cpu_pod, gpu_pod):
        assert pod.metadata.namespace == world.namespaces[TEAM]
        assert pod.spec.node_name == k8s_real_node.name
        assert pod.spec.service_account_name == "trainhub-notebook"
        assert pod.status.pod_ip and pod.status.pod_ip.startswith(
            k8s_real_node.subnet.rsplit(".", 1)[0]
        )
        [c] = pod.spec.containers
        assert c.image == session_image
        sc, psc = c.security_context, pod.spec.security_context
        assert psc.run_as_non_root and psc.seccomp_profile.type == "RuntimeDefault"
        # KubeSpawner sets the user on the container, which wins over the pod's.
        uid = sc.run_as_user if sc.run_as_user is not None else psc.run_as_user
        gid = sc.run_as_group if sc.run_as_group is not None else psc.run_as_group
        assert (uid, gid) == (RUN_AS, 100)
        assert sc.run_as_non_root and sc.allow_privilege_escalation is False
        assert sc.capabilities.drop == ["ALL"] and not sc.privileged
        assert sc.seccomp_profile.type == "RuntimeDefault"
        [status] = pod.status.container_statuses
        assert status.ready and status.image_id.endswith(image_id), (status.image_id, image_id)
        env = {e.name: e.value for e in c.env}
        assert env["TRAINHUB_BACKEND"] == "kubernetes"
        assert env["TRAINHUB_K8S_NAMESPACE"] == world.namespaces[TEAM]
        # the hub API on the bridge's gateway, the only address besides loopback it uses
        assert env["JUPYTERHUB_API_URL"].startswith(f"http://{k8s_real_node.gateway}:")
        claims = [v.persistent_volume_claim for v in pod.spec.volumes]
        assert [c.claim_name for c in claims if c] == ["shared"]
    assert gpu_pod.spec.containers[0].resources.limits["nvidia.com/gpu"] == "1"
    assert "nvidia.com/gpu" not in (cpu_pod.spec.containers[0].resources.limits or {})

    # Through configurable-http-proxy to the pods: the server, JupyterLab, trainhub's extension.
    for base in (f"/user/{USER}", f"/user/{USER}/gpu"):
        assert through_proxy(world, token, f"{base}/api/status").status_code == 200
        lab = through_proxy(world, token, f"{base}/lab")
        assert lab.status_code == 200 and "jupyter-config-data" in lab.text
        config = through_proxy(world, token, f"{base}/trainhub/api/config")
        pod = cpu_pod if base == f"/user/{USER}" else gpu_pod
        server_log = client.CoreV1Api(world.api).read_namespaced_pod_log(
            pod.metadata.name, pod.metadata.namespace, tail_lines=60
        )
        assert config.status_code == 200, server_log
        assert config.json()["backend"] == "kubernetes"
        assert [t["name"] for t in config.json()["teams"]] == [TEAM]
        assert config.json()["user"] == USER

    # A file saved in the session lands on the team's shared volume, as the session's user.
    body = {"type": "file", "format": "text", "content": "written in the pod\n"}
    saved = through_proxy(world, token, f"/user/{USER}/api/contents/from-pod.txt", "PUT", json=body)
    assert saved.status_code in (200, 201), saved.text
    on_host = shared / "from-pod.txt"
    assert on_host.read_text() == "written in the pod\n"
    assert on_host.stat().st_uid == RUN_AS

    # The GPU session sees one of the node's fake devices; the CPU session none.
    gpu = json.loads(run_in_kernel(world, token, f"/user/{USER}/gpu", PROBE))
    assert gpu["uid"] == RUN_AS
    assert gpu["env"]["NVIDIA_VISIBLE_DEVICES"] in busy_gpus, (gpu, busy_gpus)
    assert gpu["env"]["CUDA_VISIBLE_DEVICES"] == "0" and gpu["library"]
    assert gpu["opened"], gpu["reason"]
    [inventoried] = gpu["inventory"]["gpus"]
    assert inventoried["uuid"] == gpu["env"]["NVIDIA_VISIBLE_DEVICES"]
    [sampled] = gpu["sample"]
    assert sampled["uuid"] == inventoried["uuid"]
    assert sampled["utilization"] == busy_gpus[sampled["uuid"]]  # that device's, not another's
    cpu = json.loads(run_in_kernel(world, token, f"/user/{USER}", PROBE))
    assert cpu["env"]["NVIDIA_VISIBLE_DEVICES"] == "void" and not cpu["library"]
    assert not cpu["opened"] and "libnvidia-ml.so.1" in cpu["reason"]

    # Stopping the servers removes the pods.
    for server in ("", "gpu"):
        path = f"/users/{USER}/server" if not server else f"/users/{USER}/servers/{server}"
        r = hub.api("DELETE", path, token=token)
        assert r.status_code in (202, 204), r.text
    wait_for("the session pods to go", lambda: not session_pods(world), timeout=180)
    assert hub.server(USER) is None and hub.server(USER, "gpu") is None
