"""Spawn request -> server ready: TrainHubSpawner vs plain KubeSpawner with the same profile.

Both hubs run side by side against one test control plane (kube-apiserver, scheduler, Kueue)
with configurable-http-proxy; the plain one gets TrainHubSpawner's own pod overrides as a
fixed ``kubespawner_override`` (the teams ConfigMap included, made beforehand), so the pods
are identical and the difference is what TrainHubSpawner adds: the team gate, the last look
at the manifest, the ResourceQuota read and keeping the teams ConfigMap up to date. Spawns
alternate between the hubs; each server is stopped (and its pod gone) before the next.

- ``--node real`` (the default): the pods run on the cluster's real node (containerd, kubelet,
  the fake-GPU device plugin) from the curated ``base`` image, each with one GPU, and the
  hubs reach them on the node's bridge: what a researcher waits for, JupyterLab from a pod.
- ``--node kwok``: pods on kwok GPU nodes, each served by a real jupyterhub-singleuser on
  loopback from the pod's spec (tests/hub/local_pods.py): the hub's own overhead alone.

    python benchmarks/spawn.py [--node real|kwok] [--spawns 6] [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "spawner")]

from benchmarks.control_plane import (  # noqa: E402
    cluster_module,
    import_curated_image,
    real_node_state,
    start_or_reuse,
)
from tests.hub.conftest import (  # noqa: E402
    LOCAL_PODS_CONFIG,
    Hub,
    prepare_cluster_for_hub,
    teams_data,
    wait_for,
    write_test_config,
)

PLAIN_CONFIG = """
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
c.KubeSpawner.profile_list = {profiles!r}
c.KubeSpawner.enable_user_namespaces = False
c.KubeSpawner.namespace = {namespace!r}
"""
# Pods on the real node: small requests for the 2-core node, files on the team's volume.
REAL_PODS_CONFIG = """
c.KubeSpawner.cpu_guarantee = 0.25
c.KubeSpawner.mem_guarantee = "512M"
c.KubeSpawner.notebook_dir = {notebook_dir}
"""
RUN_AS = 1000  # the curated images' user (images/README.md)


def real_node_world(cluster_dir: Path, shared: Path, suffix: str) -> tuple[dict[str, Any], str]:
    """The teams file for the real node (one pool, one team, the ``base`` image imported
    into the node's containerd) and the address the hubs listen on for the pods."""
    node = cluster_module()._load_node()
    state = real_node_state(cluster_dir)
    image = import_curated_image(cluster_dir, "base")
    shared.mkdir(parents=True)
    os.chown(shared, RUN_AS, 100)  # hostPath volumes get no fsGroup: the session user's own
    taint = dict(node.NODE_TAINT)
    data = {
        "pools": [
            {
                "name": "real",
                "node_labels": {"type": node.NODE_LABELS["type"]},
                "gpus_per_node": 2,
                "tolerations": [{"key": taint["key"], "operator": "Equal", **taint}],
            }
        ],
        "images": [{"name": "base", "image": image}],
        "teams": [
            {
                "name": "lab",
                "groups": ["lab"],
                "namespace": f"hub-lab-{suffix}",
                "quota": {"real": {"gpus": 2, "cpu": "2", "memory": "8Gi"}},
                "images": ["base"],
                "session_gpus": [0, 1],
                "shared_volume": {"claim": "shared", "mount_path": str(shared)},
            }
        ],
    }
    return data, state["gateway"]


def run(spawns: int = 6, kubeconfig: str | None = None, node: str = "real") -> list[dict[str, Any]]:
    """Rows for benchmarks/run_all.py: one per measure, both spawners and their ratio."""
    from kubernetes import client, config

    from trainhub.teams import parse_teams
    from trainhub_spawner.pod import session_overrides, teams_configmap_manifest
    from trainhub_spawner.profiles import resolve_session

    work = Path(tempfile.mkdtemp(prefix="trainhub-spawn-bench-"))
    kubeconfig_path, cluster = start_or_reuse(kubeconfig, work)
    if node == "real" and cluster is not None:
        cluster.start_node()
    hubs: list[Hub] = []
    pods_dir = work / "pods"
    pods_dir.mkdir()
    try:
        chp = (
            subprocess.run(
                ["bash", str(ROOT / "scripts/setup-hub.sh")],
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
            + "/configurable-http-proxy"
        )
        suffix = secrets.token_hex(3)
        if node == "real":
            data, hub_ip = real_node_world(Path(kubeconfig_path).parent, work / "shared", suffix)
            team, options = "lab", {"profile": "lab.real", "image": "base", "gpus": "1"}
            pods_config = REAL_PODS_CONFIG.replace("{notebook_dir}", repr(str(work / "shared")))
        else:
            data, hub_ip = teams_data(suffix, work / "shared"), "127.0.0.1"
            team, options = "vision", {"profile": "vision.t4", "image": "pytorch", "gpus": "1"}
            pods_config = LOCAL_PODS_CONFIG  # a template of write_test_config's fields
        teams_file = work / "teams.yaml"
        teams_file.write_text(yaml.safe_dump(data, sort_keys=False))
        teams = parse_teams(data)
        api = config.new_client_from_config(config_file=str(kubeconfig_path))
        core = client.CoreV1Api(api)
        hub_ns = f"hub-system-{suffix}"
        hub_kc = prepare_cluster_for_hub(
            Path(kubeconfig_path), api, teams, teams_file, hub_ns, work / "hub.kubeconfig"
        )
        members = work / "members.yaml"
        users = [f"u{i}" for i in range(spawns)]
        members.write_text(yaml.safe_dump({team: users}))

        session = resolve_session(teams, [team], options)
        overrides = session_overrides(session)
        namespace = overrides.pop("namespace")
        # The teams file both spawners' pods mount (TrainHubSpawner keeps it up to date).
        core.create_namespaced_config_map(namespace, teams_configmap_manifest(teams, namespace))
        plain_profiles = [
            {
                "display_name": options["profile"],
                "slug": options["profile"],
                "kubespawner_override": overrides,
            }
        ]

        for kind in ("trainhub", "plain"):
            d = work / kind
            d.mkdir()
            port, admin_token = write_test_config(d, chp, users, hub_ip, pods_config)
            if kind == "plain":
                with (d / "test_config.py").open("a") as f:
                    f.write(PLAIN_CONFIG.format(profiles=plain_profiles, namespace=namespace))
            env = {
                **os.environ,
                "KUBECONFIG": str(hub_kc),
                "TRAINHUB_TEAMS_FILE": str(teams_file),
                "TRAINHUB_GROUP_MEMBERS": str(members),
                "TRAINHUB_TEST_PODS_DIR": str(pods_dir),
                "TRAINHUB_IDLE_STOP_MINUTES": "0",
                "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spawner")]),
            }
            hub = Hub(dir=d, env=env, port=port, admin_token=admin_token)
            hub.start()
            hubs.append(hub)

        ready: dict[str, list[float]] = {"trainhub": [], "plain": []}
        created: dict[str, list[float]] = {"trainhub": [], "plain": []}
        for i, user in enumerate(users):
            for kind, hub in zip(("trainhub", "plain"), hubs, strict=True):
                answers: list[Any] = []
                t0 = time.perf_counter()
                post = threading.Thread(
                    target=lambda h=hub, u=user, out=answers: out.append(
                        h.api("POST", f"/users/{u}/server", json=options)
                    )
                )
                post.start()
                wait_for(
                    "the pod",
                    lambda: core.list_namespaced_pod(namespace).items,
                    timeout=300,
                    interval=0.01,
                )
                created[kind].append(time.perf_counter() - t0)
                post.join()
                assert answers[0].status_code in (201, 202), answers[0].text
                hub.wait_ready(user, timeout=300)
                ready[kind].append(time.perf_counter() - t0)
                hub.api("DELETE", f"/users/{user}/server")
                wait_for(
                    "the pod to go",
                    lambda: not core.list_namespaced_pod(namespace).items,
                    timeout=120,
                )
            print(
                f"spawn {i + 1}: trainhub {created['trainhub'][-1]:.3f} / "
                f"{ready['trainhub'][-1]:.2f} s, "
                f"plain {created['plain'][-1]:.3f} / {ready['plain'][-1]:.2f} s",
                file=sys.stderr,
            )

        rows = []
        for label, times in (
            ("request -> pod created", created),
            ("request -> server ready", ready),
        ):
            t, p = statistics.median(times["trainhub"]), statistics.median(times["plain"])
            rows.append(
                {
                    f"measure (median of {spawns}, alternating)": label,
                    "TrainHubSpawner s": f"{t:.3f}",
                    "KubeSpawner s": f"{p:.3f}",
                    "ratio": f"{t / p:.2f}",
                }
            )
        return rows
    finally:
        for hub in hubs:
            hub.stop()
        for record in pods_dir.glob("*.json"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(json.loads(record.read_text())["pid"], signal.SIGTERM)
        if cluster is not None:
            cluster.stop()  # and the real node with it


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spawns", type=int, default=6, help="spawns per spawner")
    ap.add_argument(
        "--kubeconfig",
        help="an already running test control plane (with --node real: started --real-node)",
    )
    ap.add_argument("--node", choices=("real", "kwok"), default="real", help="where pods run")
    args = ap.parse_args()
    from benchmarks.report import print_table

    where = (
        "pods from the base image on the real node, 1 GPU each"
        if args.node == "real"
        else "pods on kwok, jupyterhub-singleuser on loopback"
    )
    print_table(
        f"spawn: TrainHubSpawner vs KubeSpawner, same profile ({where})",
        run(args.spawns, args.kubeconfig, args.node),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
