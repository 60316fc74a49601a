"""`trainhub admin doctor` on the test control plane: before the teams' objects are applied it
names each missing piece; once they are, and the shared claim is bound, it finds nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.fixtures.k8s import shared_claim
from tests.k8s.test_admin_apply import apply_teams, teams_data
from tests.k8s.test_backend import wait_for
from trainhub.backends.kubernetes.doctor import Seen, findings, look
from trainhub.teams import parse_teams


def doctor(k8s_namespace: Any, teams_file: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainhub.cli",
            "admin",
            "doctor",
            str(teams_file),
            f"--kubeconfig={k8s_namespace.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not proc.stderr, proc.stderr[-3000:]
    return proc.returncode, proc.stdout


def test_doctor_names_what_is_missing_then_finds_nothing(
    k8s_namespace: Any, tmp_path: Path
) -> None:
    ns = k8s_namespace.name
    data = teams_data([ns], tmp_path)
    data["pools"].append(
        {"name": f"{ns}-h100", "node_labels": {"pool": "h100"}, "gpus_per_node": 8}
    )
    data["teams"][0]["quota"][f"{ns}-h100"] = {"gpus": 8, "cpu": "8", "memory": "64Gi"}
    teams_file = tmp_path / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(data))
    code, said = doctor(k8s_namespace, teams_file)
    assert code == 1
    assert f"no ClusterQueue {ns}" in said and f"no LocalQueue {ns}/jobs" in said
    assert f"claim {ns}/shared is missing" in said
    assert f"pool {ns}-h100: no node has the labels pool=h100" in said
    assert "Kueue is not installed" not in said  # the test cluster runs it
    assert f"pool {ns}-a100" not in said  # the kwok nodes of the a100 pool offer GPUs

    apply_teams(k8s_namespace, parse_teams(data))
    shared_claim(client.CoreV1Api(k8s_namespace.api), ns, tmp_path / ns)
    try:
        teams = parse_teams(data)
        only_the_pool = [f"pool {ns}-h100: no node has the labels pool=h100"]
        # The claim binds a moment later (the volume controller).
        wait_for(
            "only the pool without nodes left",
            lambda: findings(teams, look(k8s_namespace.api, teams)) == only_the_pool,
            30,
        )
    finally:
        client.CoreV1Api(k8s_namespace.api).delete_persistent_volume(f"{ns}-shared")


def test_a_controller_with_no_ready_replica_and_an_unbound_claim_is_named() -> None:
    data = yaml.safe_load((Path(__file__).parents[2] / "hub_config" / "teams.yaml").read_text())
    data["controller"] = {}
    teams = parse_teams(data)
    seen = Seen(
        kueue={"clusterqueues", "localqueues", "resourceflavors", "workloads"},
        namespaces={t.namespace for t in teams.teams},
        controller=(0, 2),
    )
    found = findings(teams, seen)
    assert "controller: none of the 2 replicas of trainhub-system/trainhub-controller" in "\n".join(
        found
    )
    assert any(
        f.startswith("controller: its claim trainhub-system/vision-vision-shared") for f in found
    )
    # No node yet is a finding for a pool of fixed nodes (a100), not for one an autoscaler
    # grows (t4, so marked in the file).
    assert "pool a100: no node has the labels" in "\n".join(found)
    assert not any(f.startswith("pool t4:") for f in found)
    data["pools"][1]["autoscaled"] = False
    assert "pool t4: no node has the labels" in "\n".join(findings(parse_teams(data), seen))
