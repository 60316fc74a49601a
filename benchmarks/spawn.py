"""Spawn request -> server ready: TrainHubSpawner vs plain KubeSpawner with the same profile.

Both hubs run side by side against one test control plane (kube-apiserver, scheduler, kwok
GPU nodes, Kueue) with configurable-http-proxy; the plain one gets TrainHubSpawner's own
pod overrides as a fixed ``kubespawner_override``, so the pods are identical and the
difference is what TrainHubSpawner adds: the team gate, the last look at the manifest,
the ResourceQuota read and the teams ConfigMap. Spawns alternate between the hubs; each
server is stopped (and its pod gone) before the next. As in the hub tests, a Running pod
is served by a real jupyterhub-singleuser started on loopback from the pod's spec.

    python benchmarks/spawn.py [--spawns 6] [--kubeconfig PATH]
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

from benchmarks.control_plane import start_or_reuse  # noqa: E402
from tests.hub.conftest import (  # noqa: E402
    PASSWORD,
    TEST_CONFIG,
    Hub,
    free_port,
    prepare_cluster_for_hub,
    teams_data,
    wait_for,
)

PLAIN_CONFIG = """
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
c.KubeSpawner.profile_list = {profiles!r}
c.KubeSpawner.enable_user_namespaces = False
c.KubeSpawner.namespace = {namespace!r}
"""


def run(spawns: int = 6, kubeconfig: str | None = None) -> list[dict[str, Any]]:
    """Rows for benchmarks/run_all.py: one per measure, both spawners and their ratio."""
    from kubernetes import client, config

    from trainhub.teams import parse_teams
    from trainhub_spawner.pod import session_overrides
    from trainhub_spawner.profiles import resolve_session

    work = Path(tempfile.mkdtemp(prefix="trainhub-spawn-bench-"))
    kubeconfig_path, cluster = start_or_reuse(kubeconfig, work)
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
        data = teams_data(suffix, work / "shared")
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
        members.write_text(yaml.safe_dump({"vision": users}))

        options = {"profile": "vision.t4", "image": "pytorch", "gpus": "1"}
        session = resolve_session(teams, ["vision"], options)
        overrides = session_overrides(session, teams_configmap=None)
        namespace = overrides.pop("namespace")
        plain_profiles = [
            {"display_name": "vision t4", "slug": "vision.t4", "kubespawner_override": overrides}
        ]

        for kind in ("trainhub", "plain"):
            d = work / kind
            d.mkdir()
            port, admin_token = free_port(), secrets.token_hex(16)
            text = TEST_CONFIG.format(
                hub_config=str(ROOT / "hub_config" / "jupyterhub_config.py"),
                here=str(ROOT / "tests" / "hub"),
                password=PASSWORD,
                port=port,
                hub_port=free_port(),
                dir=d,
                chp=chp,
                proxy_api_port=free_port(),
                proxy_token=secrets.token_hex(16),
                admin_token=admin_token,
                users=set(users),
            )
            if kind == "plain":
                text += PLAIN_CONFIG.format(profiles=plain_profiles, namespace=namespace)
            (d / "test_config.py").write_text(text)
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
                    timeout=120,
                    interval=0.01,
                )
                created[kind].append(time.perf_counter() - t0)
                post.join()
                assert answers[0].status_code in (201, 202), answers[0].text
                hub.wait_ready(user)
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
            cluster.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spawns", type=int, default=6, help="spawns per spawner")
    ap.add_argument("--kubeconfig", help="an already running test control plane")
    args = ap.parse_args()
    from benchmarks.report import print_table

    print_table(
        "spawn: TrainHubSpawner vs KubeSpawner, same profile (pods on kwok, "
        "jupyterhub-singleuser on loopback)",
        run(args.spawns, args.kubeconfig),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
