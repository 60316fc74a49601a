"""Zero-to-JupyterHub 4.4.0 installed for real: the vendored chart (used from
../shared/vendor/zero-to-jupyterhub-4.4.0, see test_z2jh_values.py), hub_config/values.yaml,
the hub and proxy images built here (images/hub, images/proxy), `helm install` into the test
cluster, and the hub and proxy running as pods on the real node.

What cannot run here is switched off or supplied in this test's values, not in the product's:
no image puller, no ingress; the chart's pods select the real node and tolerate its taint; the
hub's database claim binds a hostPath volume this test makes (its storage class names no
provisioner); a test authenticator (DummyAuthenticator) and a test service's token; the images
are imported into the node's containerd (their references are the product's).

Before the chart, what hub_config/values.yaml's header tells an admin to run: `trainhub admin
apply` of the teams file and the hub's objects in the team namespaces (hub_objects).

Through the proxy's Service (its ClusterIP, reached from the host through kube-proxy's rules):
the hub's API answers with the chart's services beside trainhub's; a user of two teams logs in
and picks one team's profile with 1 GPU in the spawn form; TrainHubSpawner's session pod (the
curated ``base`` image) runs in the team's namespace on the real node under its quota, reaches
the hub's API across namespaces and answers through the proxy (its API, trainhub's server
extension, JupyterLab); a job submitted through the session's REST API runs on the node in
``pytorch-cpu`` and its log reaches the session. The node's CNI enforces no NetworkPolicy, so
the policies the cluster then holds (the chart's and trainhub's) are evaluated for those very
pods (tests/hub/netpolicy.py): hub, proxy and session reach each other where they must, a job's
worker and a stranger do not.

Day 2, while that session and job run: a bigger quota and a new curated image, by `trainhub
admin apply` and `helm upgrade`; the hub's pod is replaced, the session's runs on and answers
again, the job ends well, the queue has the new quota, the next spawn form the new image.

trainhub's controller keeps the release's jobs (the teams file's `controller:` section; a process
of the test with its ServiceAccount's token). The researcher's path in Chromium through the
proxy's Service (researcher_path.cjs without its queue): login, the team's profile, JupyterLab
from the session pod, Submit as job of the example notebook, its logs, metrics and a checkpoint
while it runs; the browser leaves, the chart's idle culler (set short by a `helm upgrade`)
stops the session, and the job's end is recorded by the controller with nobody logged in.

Last, `helm uninstall` keeps the team's claim and the jobs' directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client

from tests.browser import needs_chromium, visit
from tests.fixtures.k8s import shared_claim
from tests.hub.conftest import ROOT, browser_trouble, real_node_pool, wait_for
from tests.hub.netpolicy import Peer, may_connect, peer_of
from tests.hub.test_z2jh_values import HUB_CONFIG, TEST_VALUES, vendored_chart
from tests.k8s.test_controller import Replica, controller_kubeconfig
from tests.k8s.test_real_jobs import RUN_AS, import_built_image
from trainhub.backends.kubernetes.identity import session_account
from trainhub.jobs.directory import JobDir

pytestmark = pytest.mark.timeout(1200)

USER = "dee"
PASSWORD = "correct horse"
# Names no other test's teams use: a team's ClusterQueue is cluster-wide.
TEAM = "physics"
OTHER_TEAM = "chemistry"
POOL = "real"
SESSION_IMAGE = "base"
JOB_IMAGE = "pytorch-cpu"  # the curated image jobs run in
JOB = """\
import os, time
print(f"hello from rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}", flush=True)
time.sleep(30)  # running still while the admin upgrades the release
print("done", flush=True)
"""
NEW_IMAGE = "base-2027"  # the curated image an upgrade adds
DB_CLASS = "trainhub-test-hub-db"  # the hub database's volume: hostPath, made by the test
# The chart's idle culler (jupyterhub-idle-culler, a hub service: cull.*) for the browser's
# test: a session idle for 30 s stopped, looked for every 5 s; the hub reads the proxy's
# record of each server's activity every 5 s as well (its default: every 5 minutes).
SHORT_CULL = {
    "cull": {"timeout": 30, "every": 5},
    "hub": {"config": {"JupyterHub": {"last_activity_interval": 5}}},
}


@dataclass
class Release:
    namespace: str
    api: Any
    url: str  # the proxy's public Service, as the host reaches it
    admin_token: str
    team_namespace: str
    images: dict[str, str]  # hub, proxy, the session's: their references in the node
    teams: dict[str, Any]  # the teams file, as installed
    shared: Path  # the team volumes' host folder (shared/<team>)
    # An admin's day 2: a changed teams file applied (`trainhub admin apply`, `helm upgrade`),
    # with more values where given.
    upgrade: Callable[..., None]
    uninstall: Callable[[], None]
    controller_log: Path

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)

    def hub_api(self, method: str, path: str, token: str | None = None, **kw: Any) -> Any:
        headers = {"Authorization": f"token {token or self.admin_token}"}
        return requests.request(
            method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kw
        )

    def pods_report(self, *namespaces: str) -> str:
        """Each pod of these namespaces: its phase, conditions, events and logs' tail."""
        out = []
        for ns in namespaces or (self.namespace,):
            for pod in self.core.list_namespaced_pod(ns).items:
                name = pod.metadata.name
                conds = [f"{c.type}={c.status}" for c in pod.status.conditions or []]
                out.append(
                    f"--- pod {ns}/{name} on {pod.spec.node_name}: {pod.status.phase} {conds}"
                )
                for s in pod.status.container_statuses or []:
                    out.append(f"    container {s.name}: ready={s.ready} state={s.state}")
                events = self.core.list_namespaced_event(
                    ns, field_selector=f"involvedObject.name={name}"
                ).items
                out += [f"    event {e.reason}: {e.message}" for e in events]
                for c in pod.spec.containers:
                    try:
                        log = self.core.read_namespaced_pod_log(
                            name, ns, container=c.name, tail_lines=80
                        )
                    except client.ApiException as e:
                        log = f"(no log: {e.reason})"
                    out.append(f"    log of {c.name}:\n{log}")
        return "\n".join(out)


def teams_data(suffix: str, node: Any, images: dict[str, str], shared: Path) -> dict[str, Any]:
    """Two teams on the real node's pool, the user in both: the spawn form offers two profiles
    (with one, KubeSpawner shows no form and starts it)."""

    def team(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "groups": [name],
            "namespace": f"hub-{name}-{suffix}",
            "quota": {POOL: {"gpus": 2, "cpu": "2", "memory": "4Gi"}},
            "images": [SESSION_IMAGE, JOB_IMAGE],
            "session_gpus": [0, 1],
            "shared_volume": {"claim": "shared", "mount_path": str(shared / name)},
        }

    return {
        "pools": [real_node_pool(node, POOL)],
        "images": [{"name": n, "image": ref} for n, ref in images.items()],
        "teams": [team(TEAM), team(OTHER_TEAM)],
        # trainhub's controller keeps the jobs, whoever is logged in (a process of the test,
        # with its ServiceAccount's token: tests/k8s/test_controller.py); the members share
        # the pods' user, as the install's sessions run as the image's.
        "controller": {"namespace": f"hub-ctl-{suffix}", "per_user_ids": False},
    }


def image_values(reference: str) -> dict[str, str]:
    name, _, tag = reference.rpartition(":")
    return {"name": name, "tag": tag}


def install_values(node: Any, hub_image: str, proxy_image: str, admin_token: str) -> dict[str, Any]:
    """What this test adds to hub_config/values.yaml: what cannot run here switched off, the
    real node, the hub database's volume, the images built here, a test authenticator."""
    on_node = {"nodeSelector": {"type": node.labels["type"]}}
    return {
        **TEST_VALUES,
        "scheduling": {"corePods": {"tolerations": [node.toleration]}},
        "hub": {
            **on_node,
            "image": image_values(hub_image),
            "db": {"pvc": {"storageClassName": DB_CLASS}},
            "config": {
                "JupyterHub": {"authenticator_class": "dummy"},
                "DummyAuthenticator": {"password": PASSWORD},
                "Authenticator": {"allowed_users": [USER]},
            },
            "services": {"test-admin": {"apiToken": admin_token}},
            "loadRoles": {
                "test-admin": {
                    "scopes": [
                        "admin:users",
                        "admin:servers",
                        "tokens",
                        "list:users",
                        "list:services",
                        "read:services",
                    ],
                    "services": ["test-admin"],
                }
            },
            "extraFiles": {
                "members": {
                    "mountPath": "/usr/local/etc/trainhub/members.yaml",
                    "stringData": yaml.safe_dump({TEAM: [USER], OTHER_TEAM: [USER]}),
                }
            },
            "extraEnv": {
                "TRAINHUB_GROUP_MEMBERS": "/usr/local/etc/trainhub/members.yaml",
                "TRAINHUB_SESSION_CPU": "0.25",
                "TRAINHUB_SESSION_MEMORY": "512M",
            },
        },
        "proxy": {"chp": {**on_node, "image": image_values(proxy_image)}},
    }


@pytest.fixture(scope="module")
def release(
    k8s_cluster: Any,
    k8s_real_node: Any,
    built_tool: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub.backends.kubernetes.controlplane import teams_config
    from trainhub.teams import parse_teams
    from trainhub_spawner.hub_objects import hub_objects

    tmp = tmp_path_factory.mktemp("z2jh")
    helm_bin = built_tool("helm")
    started = time.monotonic()
    images = {
        name: import_built_image(k8s_real_node, name)
        for name in ("hub", "proxy", SESSION_IMAGE, JOB_IMAGE)
    }
    print(f"images in the node in {time.monotonic() - started:.0f} s", file=sys.stderr)

    suffix = secrets.token_hex(3)
    hub_ns = f"jhub-{suffix}"
    shared = tmp / "shared"
    for name in (TEAM, OTHER_TEAM):
        (shared / name).mkdir(parents=True)
        os.chown(shared / name, RUN_AS, 100)  # hostPath volumes get no fsGroup
    data = teams_data(
        suffix, k8s_real_node, {n: images[n] for n in (SESSION_IMAGE, JOB_IMAGE)}, shared
    )
    teams_file = tmp / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(data, sort_keys=False))
    teams = parse_teams(data)
    team_ns = teams.teams[0].namespace
    team_namespaces = [t.namespace for t in teams.teams]
    controller_ns = teams.controller.namespace  # type: ignore[union-attr]

    api = k8s_cluster.api_client()
    core = client.CoreV1Api(api)
    env = {
        **os.environ,
        "KUBECONFIG": str(k8s_cluster.kubeconfig),
        **{f"HELM_{d}_HOME": str(tmp / "helm" / d.lower()) for d in ("CONFIG", "CACHE", "DATA")},
    }

    def helm(*args: Any, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(helm_bin), *map(str, args)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def admin_apply(teams_file: Path) -> None:
        applied = subprocess.run(
            [sys.executable, "-m", "trainhub.cli", "admin", "apply", str(teams_file)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert applied.returncode == 0, applied.stderr

    world: Release | None = None
    controller: Replica | None = None
    try:
        # What an admin runs before the chart (hub_config/values.yaml's header): the team objects,
        # and the hub's rights and network access in the team namespaces.
        admin_apply(teams_file)
        core.create_namespace({"metadata": {"name": hub_ns}})
        apply_objects(api, hub_objects(teams, hub_ns))
        for t in teams.teams:
            shared_claim(core, t.namespace, Path(t.shared_volume.mount_path))
        # The controller, with its rights (what `admin apply` made in its namespace).
        controller_teams = tmp / "controller-teams.yaml"
        controller_teams.write_text(teams_config(teams, controller_ns)["data"]["teams.yaml"])
        kubeconfig = Path(k8s_cluster.kubeconfig)
        controller = Replica(
            controller_teams,
            controller_kubeconfig(api, kubeconfig, controller_ns, tmp / "controller.kubeconfig"),
            "only",
            tmp / "controller.log",
        )
        # The hub database's volume: the chart's claim (hub.db.pvc) binds it by its class.
        db_dir = tmp / "hub-db"
        db_dir.mkdir()
        os.chown(db_dir, 1000, 1000)  # the hub's user; hostPath volumes get no fsGroup
        core.create_persistent_volume(
            {
                "metadata": {"name": f"{hub_ns}-hub-db"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": DB_CLASS,
                    "hostPath": {"path": str(db_dir)},
                    "claimRef": {"namespace": hub_ns, "name": "hub-db-dir"},
                },
            }
        )

        # The vendored chart, with the values.schema.json its release generates.
        chart = tmp / "jupyterhub"
        shutil.copytree(vendored_chart(), chart)
        schema = yaml.safe_load((chart / "values.schema.yaml").read_text())
        (chart / "values.schema.json").write_text(json.dumps(schema))
        admin_token = secrets.token_hex(16)
        values = tmp / "test-values.yaml"
        values.write_text(
            yaml.safe_dump(
                install_values(k8s_real_node, images["hub"], images["proxy"], admin_token)
            )
        )
        files = [HUB_CONFIG / "values.yaml", values]

        def chart_args(teams_file: Path) -> list[Any]:
            hub_files = {"teams": teams_file, "config": HUB_CONFIG / "jupyterhub_config.py"}
            return [
                "jhub",
                chart,
                "--namespace",
                hub_ns,
                *(a for f in files for a in ("-f", f)),
                *(
                    a
                    for k, f in hub_files.items()
                    for a in ("--set-file", f"hub.extraFiles.{k}.stringData={f}")
                ),
            ]

        installed = helm("install", *chart_args(teams_file))
        assert installed.returncode == 0, installed.stderr

        def upgrade(changed: dict[str, Any], more: dict[str, Any] | None = None) -> None:
            """What the admin's docs say after a change to the teams file: apply it, then
            upgrade the release with it (and ``more`` values, for this upgrade only)."""
            new_file = tmp / f"teams-{secrets.token_hex(2)}.yaml"
            new_file.write_text(yaml.safe_dump(changed, sort_keys=False))
            admin_apply(new_file)
            more_file = tmp / "more-values.yaml"
            more_file.write_text(yaml.safe_dump(more or {}))
            upgraded = helm(
                "upgrade", *chart_args(new_file), "-f", more_file, "--wait", timeout=600
            )
            assert upgraded.returncode == 0, upgraded.stderr
            if world is not None:
                world.teams = changed

        def uninstall() -> None:
            gone = helm("uninstall", "jhub", "--namespace", hub_ns, "--wait", timeout=300)
            assert gone.returncode == 0, gone.stderr

        service = core.read_namespaced_service("proxy-public", hub_ns)
        world = Release(
            namespace=hub_ns,
            api=api,
            url=f"http://{service.spec.cluster_ip}:{service.spec.ports[0].port}",
            admin_token=admin_token,
            team_namespace=team_ns,
            images=images,
            teams=data,
            shared=shared,
            upgrade=upgrade,
            uninstall=uninstall,
            controller_log=controller.log,
        )
        yield world
    finally:
        if world is not None:
            print(world.pods_report(hub_ns, team_ns), file=sys.stderr)
        if controller is not None:
            controller.kill()
        helm("uninstall", "jhub", "--namespace", hub_ns, "--wait", timeout=300)
        gone = [
            lambda ns=ns: core.delete_namespace(ns, propagation_policy="Background")
            for ns in (*team_namespaces, hub_ns, controller_ns)
        ]
        gone += [
            lambda pv=pv: core.delete_persistent_volume(pv)
            for pv in (f"{hub_ns}-hub-db", *(f"{ns}-shared" for ns in team_namespaces))
        ]
        custom = client.CustomObjectsApi(api)
        for plural, names in (
            ("clusterqueues", [t.name for t in teams.teams]),
            ("resourceflavors", [p.name for p in teams.pools]),
        ):
            gone += [
                lambda plural=plural, name=name: custom.delete_cluster_custom_object(
                    "kueue.x-k8s.io", "v1beta2", plural, name
                )
                for name in names
            ]
        for delete in gone:  # whatever the setup got to make
            try:
                delete()
            except client.ApiException as e:
                if e.status != 404:
                    raise
        api.close()


def ready_pods(world: Release, component: str) -> list[Any]:
    pods = world.core.list_namespaced_pod(
        world.namespace, label_selector=f"component={component}"
    ).items
    return [
        p
        for p in pods
        if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]


def wait_or_report(world: Release, what: str, fn: Callable[[], Any], timeout: float) -> Any:
    """Wait for ``fn``; else fail with the pods of the release and the team."""
    try:
        return wait_for(what, fn, timeout=timeout, interval=1)
    except AssertionError as e:
        report = world.pods_report(world.namespace, world.team_namespace)
        raise AssertionError(f"{e}\n{report}") from None


def session_pods(world: Release) -> list[Any]:
    return [
        p
        for p in world.core.list_namespaced_pod(world.team_namespace).items
        if (p.metadata.annotations or {}).get("hub.jupyter.org/username") == USER
    ]


def stop_session(world: Release) -> None:
    """Stop the user's server, if any, and wait until the hub and the cluster hold none."""
    r = world.hub_api("DELETE", f"/users/{USER}/server")
    assert r.status_code in (202, 204, 400, 404), r.text  # 400: none running; 404: no user

    def gone() -> bool:
        user = world.hub_api("GET", f"/users/{USER}")
        servers = user.json().get("servers") if user.status_code == 200 else None
        return not servers and not session_pods(world)

    wait_or_report(world, "the session to stop and its pod to go", gone, 180)


def hub_answers(world: Release) -> Any:
    r = requests.get(f"{world.url}/hub/api/", timeout=10)
    return r if r.status_code == 200 else None


def login(world: Release, user: str) -> requests.Session:
    s = requests.Session()
    assert s.get(f"{world.url}/hub/login", timeout=30).status_code == 200
    r = s.post(
        f"{world.url}/hub/login?next=",
        data={"username": user, "password": PASSWORD, "_xsrf": s.cookies.get("_xsrf", "")},
        timeout=30,
    )
    assert r.status_code == 200, r.text[-2000:]
    assert any(c.name == "jupyterhub-session-id" for c in s.cookies), s.cookies
    return s


def test_the_chart_runs_the_hub_and_proxy_on_the_real_node_and_a_session_through_it(
    release: Release, k8s_real_node: Any
) -> None:
    world = release
    started = time.monotonic()
    for component in ("hub", "proxy"):
        [pod] = wait_or_report(
            world, f"the {component} pod Ready", lambda c=component: ready_pods(world, c), 300
        )
        assert pod.spec.node_name == k8s_real_node.name
        assert pod.spec.containers[0].image == world.images[component]
    print(f"hub and proxy Ready in {time.monotonic() - started:.0f} s", file=sys.stderr)

    # The hub, through the proxy's Service.
    info = wait_or_report(world, "the hub's API through the proxy", lambda: hub_answers(world), 120)
    assert info.json()["version"].startswith("5.")
    # The chart's services (its idle culler, hub.services) beside trainhub's.
    services = world.hub_api("GET", "/services")
    assert services.status_code == 200, services.text
    assert set(services.json()) >= {
        "jupyterhub-idle-culler",
        "test-admin",
        "trainhub-idle-gpu",
        "trainhub-metrics",
    }, services.json()
    login_page = requests.get(f"{world.url}/hub/login", timeout=30)
    assert login_page.status_code == 200 and 'name="username"' in login_page.text

    # Log in, and pick a profile in the spawn form: team lab on the real pool, with 1 GPU.
    s = login(world, USER)
    form = s.get(f"{world.url}/hub/spawn/{USER}", timeout=60)
    slug = f"{TEAM}.{POOL}"
    assert form.status_code == 200, form.text[-2000:]
    assert slug in form.text and f"{OTHER_TEAM}.{POOL}" in form.text, form.text[-3000:]
    started = time.monotonic()
    r = s.post(
        f"{world.url}/hub/spawn/{USER}",
        data={
            "profile": slug,
            f"profile-option-{slug}--image": SESSION_IMAGE,
            f"profile-option-{slug}--gpus": "1",
            "_xsrf": s.cookies.get("_xsrf", ""),
        },
        timeout=120,
    )
    assert r.status_code == 200, r.text[-2000:]

    session_logs: dict[str, str] = {}  # the hub deletes a pod that failed to start

    def server_ready() -> Any:
        for p in session_pods(world):
            with contextlib.suppress(client.ApiException):
                session_logs[p.metadata.name] = world.core.read_namespaced_pod_log(
                    p.metadata.name, world.team_namespace, tail_lines=40
                )
        user = world.hub_api("GET", f"/users/{USER}").json()
        server = (user.get("servers") or {}).get("")
        if server is None:
            return "the hub gave up on it"  # the spawn failed: the hub's log says why
        return server if server.get("ready") else None

    try:
        server = wait_for(f"{USER}'s server ready", server_ready, timeout=180, interval=1)
        if not isinstance(server, dict):
            raise AssertionError(f"{USER}'s server did not start: {server}")
    except AssertionError as e:
        report = world.pods_report(world.namespace, world.team_namespace)
        logs = "".join(f"--- log of session pod {k}:\n{v}" for k, v in session_logs.items())
        raise AssertionError(f"{e}\n{report}\n{logs}") from None
    print(f"session ready in {time.monotonic() - started:.0f} s", file=sys.stderr)
    [pod] = session_pods(world)
    assert pod.spec.node_name == k8s_real_node.name
    assert pod.spec.service_account_name == session_account(USER)  # its own: a controller runs
    assert pod.spec.containers[0].image == world.images[SESSION_IMAGE]

    assert pod.spec.containers[0].resources.limits["nvidia.com/gpu"] == "1"

    # Under the team's quota: the session's requests are counted there.
    def counted() -> Any:
        quota = world.core.read_namespaced_resource_quota("trainhub-quota", world.team_namespace)
        used = quota.status.used or {}
        return used.get("requests.cpu") == "250m" and used.get("requests.nvidia.com/gpu") == "1"

    wait_or_report(world, "the session counted in the team's quota", counted, 30)

    # What the network policies of the chart and of trainhub let through, and what not.
    [hub_pod], [proxy_pod] = ready_pods(world, "hub"), ready_pods(world, "proxy")
    hub, proxy, session = peer_of(hub_pod), peer_of(proxy_pod), peer_of(pod)
    job = Peer("a job's worker", world.team_namespace, {"trainhub.io/role": "worker"}, {})
    stranger = Peer("a pod of the hub's namespace", world.namespace, {}, {})
    allowed = [
        (proxy, hub, 8081),
        (hub, proxy, 8001),  # the proxy's API
        (hub, proxy, 8000),  # the idle-GPU service's notices, through proxy-public
        (proxy, session, 8888),
        (hub, session, 8888),
        (session, hub, 8081),  # jupyterhub-singleuser and the server extension, to the hub's API
    ]
    denied = [(job, hub, 8081), (stranger, session, 8888), (job, session, 8888)]
    wrong = [
        f"{a.name} -> {b.name}:{port} denied"
        for a, b, port in allowed
        if not may_connect(world, a, b, port)
    ]
    wrong += [
        f"{a.name} -> {b.name}:{port} allowed"
        for a, b, port in denied
        if may_connect(world, a, b, port)
    ]
    assert not wrong, wrong

    # The session answers through the proxy, as the user.
    token = world.hub_api(
        "POST", f"/users/{USER}/tokens", json={"note": "test", "expires_in": 600}
    ).json()["token"]
    headers = {"Authorization": f"token {token}"}
    status = requests.get(f"{world.url}/user/{USER}/api/status", headers=headers, timeout=60)
    assert status.status_code == 200, f"{status.status_code} {status.text[-500:]}"
    config = requests.get(
        f"{world.url}/user/{USER}/trainhub/api/config", headers=headers, timeout=60
    )
    assert config.status_code == 200, config.text[-500:]
    assert config.json()["user"] == USER
    assert [t["name"] for t in config.json()["teams"]] == [TEAM]
    lab = s.get(f"{world.url}/user/{USER}/lab", timeout=60)
    assert lab.status_code == 200 and "jupyter-config-data" in lab.text

    # Submit as job, through the session's REST API: the job runs on the real node, in the
    # team's namespace, and its log reaches the session.
    jobs = f"{world.url}/user/{USER}/trainhub/api/jobs"
    body = {"type": "file", "format": "text", "content": JOB}
    saved = requests.put(
        f"{world.url}/user/{USER}/api/contents/hello.py", json=body, headers=headers, timeout=60
    )
    assert saved.status_code in (200, 201), saved.text
    spec = {
        "name": "hello",
        "source": {"path": "hello.py"},
        "image": JOB_IMAGE,
        "resources": {"workers": 1, "processes_per_worker": 1, "cpu": 0.5, "memory": "1Gi"},
    }
    made = requests.post(jobs, json=spec, headers=headers, timeout=120)
    assert made.status_code == 201, made.text
    job_id = made.json()["id"]
    started = time.monotonic()

    nodes_of_job: set[str] = set()

    def job_ended() -> Any:
        for p in world.core.list_namespaced_pod(
            world.team_namespace, label_selector=f"job-name={job_id}"
        ).items:
            if p.spec.node_name:  # not before it is scheduled
                nodes_of_job.add(p.spec.node_name)
        job = requests.get(f"{jobs}/{job_id}", headers=headers, timeout=60).json()
        return job if job["state"] in ("succeeded", "failed", "cancelled") else None

    def job_running() -> Any:
        job_ended()
        job = requests.get(f"{jobs}/{job_id}", headers=headers, timeout=60).json()
        assert job["state"] not in ("succeeded", "failed", "cancelled"), job
        return job if job["state"] == "running" else None

    wait_or_report(world, f"job {job_id} to run", job_running, 180)

    # Day 2, while the session and the job run: the admin gives the team a bigger quota and a
    # new curated image (`trainhub admin apply`, `helm upgrade`). The upgrade replaces the hub's
    # pod (its config changed); the session's pod runs on and the new hub finds it again
    # (JupyterHub's resume; the chart keeps cleanup_servers off); the job runs to its end.
    changed = json.loads(json.dumps(world.teams))
    changed["images"].append({"name": NEW_IMAGE, "image": world.images[SESSION_IMAGE]})
    physics = next(t for t in changed["teams"] if t["name"] == TEAM)
    physics["quota"][POOL]["gpus"] = 3
    physics["images"].append(NEW_IMAGE)
    world.upgrade(changed)
    wait_or_report(
        world,
        "a new hub pod Ready",
        lambda: [p for p in ready_pods(world, "hub") if p.metadata.uid != hub_pod.metadata.uid],
        180,
    )
    wait_or_report(world, "the new hub's API through the proxy", lambda: hub_answers(world), 120)
    resumed = world.hub_api("GET", f"/users/{USER}").json()["servers"][""]
    assert resumed["ready"], resumed
    [after] = session_pods(world)
    assert after.metadata.uid == pod.metadata.uid  # the same pod, never restarted
    assert after.status.container_statuses[0].restart_count == 0
    # The chart's first upgrade replaces the proxy too: at install its pod's checksum of the
    # proxy's token is taken from a second random draw, not the one kept in the hub's Secret
    # (later upgrades keep it). A new proxy starts with no routes; the new hub adds the
    # session's back on its first check, and until then the session's URL leads to the hub.
    back = time.monotonic()

    def session_answers() -> Any:
        r = requests.get(f"{world.url}/user/{USER}/api/status", headers=headers, timeout=60)
        return r if r.status_code == 200 else None

    wait_or_report(world, "the session through the proxy again", session_answers, 60)
    print(f"session answers {time.monotonic() - back:.1f} s after the hub", file=sys.stderr)
    queue = client.CustomObjectsApi(world.api).get_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues", TEAM
    )
    gpus = [
        r["nominalQuota"]
        for g in queue["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    ]
    assert [str(g) for g in gpus] == ["3"], queue["spec"]

    ended = wait_or_report(world, f"job {job_id} to end", job_ended, 300)
    print(f"job ended in {time.monotonic() - started:.0f} s", file=sys.stderr)
    log = requests.get(f"{jobs}/{job_id}/logs/0", headers=headers, timeout=60)
    assert ended["state"] == "succeeded", (ended, log.text[-2000:])
    text = log.json()["text"]
    assert "hello from rank 0 of 1" in text and "done" in text, log.text[-2000:]
    assert nodes_of_job == {k8s_real_node.name}, nodes_of_job

    # Stopping the server removes the pod; the next spawn form offers the new image.
    stop_session(world)
    form = s.get(f"{world.url}/hub/spawn/{USER}", timeout=60)
    assert form.status_code == 200 and NEW_IMAGE in form.text, form.text[-3000:]


@needs_chromium
def test_the_researchers_path_in_chromium_and_the_idle_culler_with_the_job_running(
    release: Release, k8s_real_node: Any, tmp_path: Path
) -> None:
    """In Chromium, through the proxy's Service: log in, the team's profile, JupyterLab from a
    session pod of the curated image on the real node, the example notebook uploaded and
    submitted as a job of two workers (tests/hub/researcher_path.cjs, its path without a
    queue), whose logs, metrics and first checkpoint show in the job's view while it runs.
    Then nobody uses the session: the chart's idle culler stops it, the job runs on, and the
    controller records its end with nobody logged in."""
    world = release
    started = time.monotonic()
    world.upgrade(world.teams, SHORT_CULL)
    wait_or_report(world, "the hub's API through the proxy", lambda: hub_answers(world), 120)
    stop_session(world)  # the browser's login must find the spawn form, not a stopping server
    print(f"culler set (helm upgrade) in {time.monotonic() - started:.0f} s", file=sys.stderr)

    started = time.monotonic()
    seen = visit(
        Path(__file__).with_name("researcher_path.cjs"),
        world.url,
        USER,
        PASSWORD,
        f"{TEAM}.{POOL}",
        SESSION_IMAGE,
        JOB_IMAGE,
        tmp_path,
        ROOT / "examples" / "train_ddp.ipynb",
        timeout=900,
    )
    left = time.time()  # the researcher closed the browser
    print(browser_trouble(seen), file=sys.stderr)
    if "error" in seen:
        raise AssertionError(f"{seen}\n{world.pods_report(world.namespace, world.team_namespace)}")
    print(
        f"browser: JupyterLab in {seen['labReadyS']:.0f} s, "
        f"the job's view in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    assert seen["statesSeen"] == {"firstLog": "running", "metrics": "running"}, seen
    assert seen["checkpointsState"] == "running" and 19 in seen["checkpoints"], seen
    job_id = seen["jobId"]
    [pod] = session_pods(world)  # left running by the researcher
    assert pod.spec.node_name == k8s_real_node.name
    assert pod.spec.containers[0].image == world.images[SESSION_IMAGE]

    # Nobody uses it: the idle culler stops it, while the job runs on.
    wait_or_report(
        world,
        "the idle culler to stop the session",
        lambda: not world.hub_api("GET", f"/users/{USER}").json()["servers"],
        120,
    )
    culled = time.time()
    print(f"culled {culled - left:.0f} s after the browser left", file=sys.stderr)
    job = client.BatchV1Api(world.api).read_namespaced_job(job_id, world.team_namespace)
    assert job.status.active and not job.status.succeeded, job.status
    [hub_pod] = ready_pods(world, "hub")
    hub_log = world.core.read_namespaced_pod_log(hub_pod.metadata.name, world.namespace)
    assert f"Culling server {USER} (inactive for" in hub_log, hub_log[-3000:]
    wait_or_report(world, "the session pod to go", lambda: not session_pods(world), 120)

    # With nobody logged in, the controller records how the job ended.
    job_dir = JobDir(world.shared / TEAM / "jobs" / job_id)

    def ending() -> Any:
        states = [e for e in job_dir.read_events()[0] if e["type"] == "state"]
        end = states[-1] if states else {}
        return end if end.get("state") in ("succeeded", "failed", "cancelled") else None

    end = wait_or_report(world, f"job {job_id} to end", ending, 300)
    log = (job_dir.root / "logs" / "rank-0.log").read_text()
    assert end["state"] == "succeeded", (end, log[-2000:], world.controller_log.read_text()[-3000:])
    # Written after the cull (its time), of a job started before it (Kubernetes' time).
    assert end["started_at"] < culled < end["time"], (end, culled)
    assert "step 119: loss" in log, log[-2000:]
    assert not world.hub_api("GET", f"/users/{USER}").json()["servers"]
    nodes = {
        p.spec.node_name
        for p in world.core.list_namespaced_pod(
            world.team_namespace, label_selector=f"job-name={job_id}"
        ).items
    }
    assert nodes == {k8s_real_node.name}, nodes
    print(f"job's end recorded {end['time'] - culled:.0f} s after the cull", file=sys.stderr)


def test_helm_uninstall_keeps_the_teams_volume_and_job_directories(release: Release) -> None:
    """The module's last test: helm uninstall takes the hub away and keeps the users' data:
    the team's namespace and volume claim, and the directories of the jobs the tests before
    ran, with their logs."""
    world = release
    jobs = sorted((world.shared / TEAM / "jobs").glob("*/logs/rank-0.log"))
    assert jobs, "no job ran before"
    world.uninstall()
    wait_for(
        "the release's pods to go",
        lambda: not world.core.list_namespaced_pod(world.namespace).items,
        timeout=120,
        interval=1,
    )
    claim = world.core.read_namespaced_persistent_volume_claim("shared", world.team_namespace)
    assert claim.status.phase == "Bound"
    assert jobs == sorted((world.shared / TEAM / "jobs").glob("*/logs/rank-0.log"))
    assert all(log.read_text() for log in jobs)
