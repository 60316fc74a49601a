"""A real JupyterHub (with configurable-http-proxy) in front of the real test control plane.

The hub loads hub_config/jupyterhub_config.py unchanged, then a small test config: the
DummyAuthenticator, loopback addresses, a sqlite database, and KubeSpawner's ``get_pod_url``
hook pointing at :mod:`local_pods` (kwok runs no containers; see there). :func:`running_hub`
builds such a hub for any teams file; test_real_session.py uses it without the hook, its
pods on the real node. The team objects
are applied with ``trainhub admin apply``; the hub talks to the API server as a
ServiceAccount holding only the Roles of :mod:`trainhub_spawner.hub_objects`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import yaml

from tests.fixtures.k8s import shared_claim

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PASSWORD = "correct horse"
USERS = {"ada": "vision", "bo": "nlp", "cy": "nlp"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, fn: Any, timeout: float = 60.0, interval: float = 0.25) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except (requests.ConnectionError, OSError) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# --- the cluster side ----------------------------------------------------------------------------
def browser_trouble(seen: dict[str, Any]) -> str:
    """What researcher_path.cjs saw fail between the browser and the servers, for the log."""
    failed = seen.get("failedRequests", [])
    return (
        f"requests failed on the way: {len(failed)} {failed[:10]}; "
        f"'Server unavailable or unreachable' dismissed {seen.get('connectionLost', 0)} times"
    )


def real_node_pool(node: Any, name: str) -> dict[str, Any]:
    """A teams file's pool of the cluster's one real node (its label, its taint tolerated, its
    two fake GPUs)."""
    return {
        "name": name,
        "node_labels": {"type": node.labels["type"]},
        "gpus_per_node": 2,
        "tolerations": [node.toleration],
        "description": "the real test node",
    }


def teams_data(suffix: str, shared: Path) -> dict[str, Any]:
    images = {
        i["name"]: i
        for i in yaml.safe_load((ROOT / "images" / "catalog.yaml").read_text())["images"]
    }

    def team(name: str, imgs: list[str], sizes: list[int]) -> dict[str, Any]:
        return {
            "name": name,
            "groups": [name],
            "namespace": f"hub-{name}-{suffix}",
            "quota": {
                "a100": {"gpus": 2, "cpu": "16", "memory": "64Gi"},
                "t4": {"gpus": 1, "cpu": "8", "memory": "32Gi"},
            },
            "images": imgs,
            "session_gpus": sizes,
            "shared_volume": {"claim": "shared", "mount_path": str(shared / name)},
        }

    return {
        "pools": [
            {
                "name": "a100",
                "node_labels": {"trainhub.io/pool": "a100"},
                "gpus_per_node": 8,
                "gpu_product": "NVIDIA-A100-SXM4-80GB",
                "description": "A100 80GB",
            },
            {
                "name": "t4",
                "node_labels": {"trainhub.io/pool": "t4"},
                "gpus_per_node": 4,
                "gpu_product": "Tesla-T4",
                "description": "T4 16GB",
            },
        ],
        "images": [images["pytorch"], images["pytorch-nlp"]],
        "teams": [
            team("vision", ["pytorch"], [0, 1]),
            team("nlp", ["pytorch", "pytorch-nlp"], [0, 1, 2]),
        ],
    }


def service_account_kubeconfig(
    admin_kubeconfig: Path, core: Any, ns: str, account: str, out: Path
) -> Path:
    """A kubeconfig that authenticates as ns/account (a bound token), to the same API server."""
    token = core.create_namespaced_service_account_token(
        account, ns, {"spec": {"expirationSeconds": 86400}}
    ).status.token
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]
    out.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": account,
                "clusters": [cluster],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [
                    {"name": account, "context": {"cluster": cluster["name"], "user": account}}
                ],
            }
        )
    )
    return out


# --- a fake Prometheus (the idle service's utilization source) ----------------------------------
class Utilization:
    """Answers PromQL instant queries for DCGM_FI_DEV_GPU_UTIL: busy unless told otherwise."""

    def __init__(self) -> None:
        self.by_pod: dict[str, float] = {}
        self.queries: list[str] = []
        self.warnings: list[dict[str, Any]] = []
        self.port = free_port()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlparse(self.path).query).get("query", [""])[0]
                owner.queries.append(query)
                pod = re.search(r'pod="([^"]+)"', query)
                value = owner.by_pod.get(pod.group(1), 90.0) if pod else 90.0
                body = {
                    "status": "success",
                    "data": {
                        "resultType": "vector",
                        "result": [{"metric": {}, "value": [time.time(), str(value)]}],
                    },
                }
                self._send(body)

            def do_POST(self) -> None:  # the warning webhook
                length = int(self.headers.get("Content-Length", 0))
                owner.warnings.append(json.loads(self.rfile.read(length)))
                self._send({})

            def _send(self, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the hub --------------------------------------------------------------------------------------
TEST_CONFIG = """
import sys
c = get_config()
load_subconfig({hub_config!r})

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = {hub_ip!r}
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{dir}/cookie_secret"
c.JupyterHub.cleanup_servers = False  # a hub restart must keep running servers
c.JupyterHub.allow_named_servers = True
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.ConfigurableHTTPProxy.pid_file = "{dir}/proxy.pid"
c.JupyterHub.services = list(c.JupyterHub.get("services", [])) + [\
{{"name": "test-admin", "api_token": {admin_token!r}}}]
c.JupyterHub.load_roles = list(c.JupyterHub.get("load_roles", [])) + [
    {{"name": "test-admin", "scopes": ["admin:users", "admin:servers", "tokens", "list:users"],
      "services": ["test-admin"]}}]
c.KubeSpawner.hub_connect_url = "http://{hub_ip}:{hub_port}"
c.KubeSpawner.http_timeout = 180
c.KubeSpawner.start_timeout = 180
c.KubeSpawner.events_enabled = True
c.KubeSpawner.cpu_guarantee = 1
c.KubeSpawner.mem_guarantee = "1G"
"""
# kwok runs no containers: each pod is served on loopback from its own spec (local_pods.py).
LOCAL_PODS_CONFIG = """
sys.path.insert(0, {here!r})
from local_pods import serve_pod
c.KubeSpawner.get_pod_url = serve_pod
"""


@dataclass
class Hub:
    dir: Path
    env: dict[str, str]
    port: int
    admin_token: str
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    log_paths: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(
        self, method: str, path: str, token: str | None = None, **kwargs: Any
    ) -> requests.Response:
        headers = {"Authorization": f"token {token or self.admin_token}"}
        return requests.request(
            method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kwargs
        )

    def start(self) -> None:
        self.starts += 1
        log = self.dir / f"hub-{self.starts}.log"
        self.log_paths.append(log)
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "jupyterhub"),
                "-f",
                str(self.dir / "test_config.py"),
            ],
            cwd=self.dir,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_for("the hub to answer", lambda: self._up(), timeout=120)
        except AssertionError:
            raise AssertionError(f"the hub did not start:\n{self.log_tail()}") from None

    def _up(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"the hub exited with {self.proc.returncode}:\n{self.log_tail()}")
        return self.api("GET", "/").status_code == 200

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)  # the hub and the proxy and services it started
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_paths:
            return ""
        return "\n".join(self.log_paths[-1].read_text(errors="replace").splitlines()[-lines:])

    def login(self, name: str) -> requests.Session:
        s = requests.Session()
        s.get(f"{self.url}/hub/login", timeout=30)
        r = s.post(
            f"{self.url}/hub/login?next=",
            timeout=30,
            data={"username": name, "password": PASSWORD, "_xsrf": s.cookies.get("_xsrf", "")},
        )
        assert r.status_code == 200, r.text[-2000:]
        return s

    def user_token(self, name: str) -> str:
        r = self.api("POST", f"/users/{name}/tokens", json={"note": "test", "expires_in": 3600})
        assert r.status_code == 201, r.text
        return r.json()["token"]

    def server(self, name: str, server: str = "") -> dict[str, Any] | None:
        user = self.api("GET", f"/users/{name}").json()
        return (user.get("servers") or {}).get(server)

    def wait_ready(self, name: str, server: str = "", timeout: float = 180) -> dict[str, Any]:
        def ready() -> Any:
            s = self.server(name, server)
            return s if s and s.get("ready") else None

        try:
            return wait_for(
                f"{name}'s server {server!r} to be ready", ready, timeout=timeout, interval=0.5
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tail()}") from None


@dataclass
class HubWorld:
    hub: Hub
    api: Any  # kubernetes.client.ApiClient (admin)
    teams_file: Path
    namespaces: dict[str, str]  # team -> namespace
    pods_dir: Path
    utilization: Utilization

    def pods(self, team: str) -> list[Any]:
        from kubernetes import client

        return client.CoreV1Api(self.api).list_namespaced_pod(self.namespaces[team]).items

    def local_server(self, pod_name: str) -> dict[str, Any]:
        for record in self.pods_dir.glob("*.json"):
            data = json.loads(record.read_text())
            if data["pod"] == pod_name:
                return data
        raise AssertionError(f"no local server for pod {pod_name}")


@pytest.fixture(scope="session")
def chp() -> str:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-hub.sh")], check=True, capture_output=True, text=True
    )
    return str(Path(out.stdout.strip().splitlines()[-1]) / "configurable-http-proxy")


def prepare_cluster_for_hub(
    kubeconfig: Path, api: Any, teams: Any, teams_file: Path, hub_ns: str, out: Path
) -> Path:
    """Apply the team objects with `trainhub admin apply`, make the hub's namespace,
    ServiceAccount and per-team Roles and the teams' shared claims; returns the kubeconfig
    of the hub's ServiceAccount (written to ``out``)."""
    from kubernetes import client

    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub_spawner.hub_objects import hub_objects

    core = client.CoreV1Api(api)
    applied = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainhub.cli",
            "admin",
            "apply",
            str(teams_file),
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
    )
    assert applied.returncode == 0, applied.stderr
    core.create_namespace({"metadata": {"name": hub_ns}})
    wait_for(
        "the hub namespace's default account",
        lambda: (
            core.list_namespaced_service_account(
                hub_ns, field_selector="metadata.name=default"
            ).items
        ),
    )
    core.create_namespaced_service_account(hub_ns, {"metadata": {"name": "hub"}})
    apply_objects(api, hub_objects(teams, hub_ns))
    for team in teams.teams:
        shared_claim(core, team.namespace, Path(team.shared_volume.mount_path))
    return service_account_kubeconfig(kubeconfig, core, hub_ns, "hub", out)


def write_test_config(
    dir: Path, chp: str, users: Iterable[str], hub_ip: str, pods_config: str
) -> tuple[int, str]:
    """dir/test_config.py: TEST_CONFIG for a hub on free ports and these users, then
    pods_config, a template of the same fields (here, dir, ...). Returns the proxy's public
    port and the admin service's token."""
    port, admin_token = free_port(), secrets.token_hex(16)
    fields = dict(
        hub_config=str(ROOT / "hub_config" / "jupyterhub_config.py"),
        here=str(HERE),
        password=PASSWORD,
        port=port,
        hub_ip=hub_ip,
        hub_port=free_port(),
        dir=dir,
        chp=chp,
        proxy_api_port=free_port(),
        proxy_token=secrets.token_hex(16),
        admin_token=admin_token,
        users=set(users),
    )
    (dir / "test_config.py").write_text(TEST_CONFIG.format(**fields) + pods_config.format(**fields))
    return port, admin_token


@contextlib.contextmanager
def running_hub(
    k8s_cluster: Any,
    chp: str,
    tmp: Path,
    data: dict[str, Any],
    users: dict[str, str],
    *,
    hub_ip: str = "127.0.0.1",
    pods_config: str = LOCAL_PODS_CONFIG,
    extra_env: dict[str, str] | None = None,
) -> Iterator[HubWorld]:
    """A hub for the teams of ``data`` (users: name -> group) on the cluster, torn down after.

    ``hub_ip``: where the hub's own server listens (and pods reach its API); the proxy's
    public side is always on 127.0.0.1. ``pods_config``: what the test config adds about
    where pods serve (loopback stand-ins by default)."""
    from kubernetes import client

    from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT
    from trainhub.teams import parse_teams

    suffix = data["teams"][0]["namespace"].rsplit("-", 1)[-1]
    teams_file = tmp / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(data, sort_keys=False))
    teams = parse_teams(data)
    api = k8s_cluster.api_client()
    core = client.CoreV1Api(api)

    hub_ns = f"hub-system-{suffix}"
    hub_kubeconfig = prepare_cluster_for_hub(
        Path(k8s_cluster.kubeconfig), api, teams, teams_file, hub_ns, tmp / "hub.kubeconfig"
    )

    members = tmp / "members.yaml"
    groups: dict[str, list[str]] = {}
    for user, group in users.items():
        groups.setdefault(group, []).append(user)
    members.write_text(yaml.safe_dump(groups))
    pods_dir = tmp / "pods"
    pods_dir.mkdir()
    accounts = pods_dir / "accounts"  # the sessions' ServiceAccount, as local_pods mounts it
    accounts.mkdir()
    for team in teams.teams if teams.controller is None else []:  # else each user's own
        service_account_kubeconfig(
            Path(k8s_cluster.kubeconfig),
            core,
            team.namespace,
            NOTEBOOK_ACCOUNT,
            accounts / f"{team.namespace}.kubeconfig",
        )
    utilization = Utilization()
    port, admin_token = write_test_config(tmp, chp, users, hub_ip, pods_config)
    hub_env = {
        **os.environ,
        "KUBECONFIG": str(hub_kubeconfig),
        "TRAINHUB_TEAMS_FILE": str(teams_file),
        "TRAINHUB_GROUP_MEMBERS": str(members),
        "TRAINHUB_TEST_PODS_DIR": str(pods_dir),
        "TRAINHUB_PROMETHEUS_URL": utilization.url,
        "TRAINHUB_IDLE_WEBHOOK": utilization.url + "/warnings",
        "TRAINHUB_IDLE_THRESHOLD_PERCENT": "5",
        "TRAINHUB_IDLE_WARN_MINUTES": "0.02",
        "TRAINHUB_IDLE_STOP_MINUTES": "0.1",
        "TRAINHUB_IDLE_INTERVAL_SECONDS": "1",
        "TRAINHUB_PROXY_URL": f"http://127.0.0.1:{port}",  # the idle service posts warnings here
        "TRAINHUB_METRICS_PORT": str(free_port()),  # never a port another hub holds
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spawner")]),
        **(extra_env or {}),
    }
    hub = Hub(dir=tmp, env=hub_env, port=port, admin_token=admin_token)
    world = HubWorld(
        hub=hub,
        api=api,
        teams_file=teams_file,
        namespaces={t.name: t.namespace for t in teams.teams},
        pods_dir=pods_dir,
        utilization=utilization,
    )
    try:
        hub.start()
        yield world
    finally:
        hub.stop()
        for record in pods_dir.glob("*.json"):
            pid = json.loads(record.read_text())["pid"]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        utilization.close()
        for team in teams.teams:
            core.delete_namespace(team.namespace, propagation_policy="Background")
            core.delete_persistent_volume(f"{team.namespace}-shared")
        core.delete_namespace(hub_ns, propagation_policy="Background")
        custom = client.CustomObjectsApi(api)
        for plural, names in (
            ("clusterqueues", [t.name for t in teams.teams]),
            ("resourceflavors", [p.name for p in teams.pools]),
        ):
            for name in names:
                try:
                    custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, name)
                except client.ApiException as e:
                    if e.status != 404:
                        raise
        api.close()


@pytest.fixture(scope="package")
def hub_world(
    k8s_cluster: Any,
    chp: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HubWorld]:
    tmp = tmp_path_factory.mktemp("hub")
    data = teams_data(secrets.token_hex(3), tmp / "shared")
    with running_hub(k8s_cluster, chp, tmp, data, USERS) as world:
        yield world
