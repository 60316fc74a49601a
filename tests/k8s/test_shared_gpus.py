"""Shared GPUs on a real control plane (its scheduler, Kueue, kwok nodes): a node whose GPUs
are time-sliced four ways advertises ``nvidia.com/gpu.shared`` as NVIDIA's device plugin does
(renameByDefault) and is tainted; a session pod built by the spawner for a 1/4 share
schedules there and the namespace's ResourceQuota counts it; a job that asks for the share
runs there and its ClusterQueue counts it, said as 0.25 GPU in the Usage panel's quota; an
ordinary GPU job of the same team goes to a whole-GPU pool. On the real node, the fake device
plugin shares a GPU the same way and two 1/4 session pods run on replicas of that one GPU."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.fixtures.k8s import _cluster_module
from tests.fixtures.shared_gpus import SHARED_TAINT, with_shared_pool
from tests.k8s.test_admin_apply import apply_teams, teams_for
from tests.k8s.test_backend import Team, wait_for
from tests.k8s.test_real_node import real_pod
from trainhub.jobs.states import JobState
from trainhub.teams import parse_teams
from trainhub_spawner.pod import session_overrides
from trainhub_spawner.profiles import resolve_session

GOLDEN_TEAMS = Path(__file__).parents[1] / "unit" / "golden" / "teams.yaml"


def session_pod(overrides: dict[str, Any]) -> dict[str, Any]:
    """The pod KubeSpawner makes of these trait values (the parts scheduling reads)."""
    return {
        "metadata": {"name": "jupyter-ada", "labels": overrides["extra_labels"]},
        "spec": {
            "serviceAccountName": overrides["service_account"],
            "securityContext": {
                **overrides["pod_security_context"],
                "runAsUser": overrides["uid"],
                "fsGroup": overrides["fs_gid"],
            },
            "nodeSelector": overrides["node_selector"],
            "tolerations": overrides["tolerations"],
            "volumes": overrides["volumes"],
            "containers": [
                {
                    "name": "notebook",
                    "image": overrides["image"],
                    "env": [{"name": k, "value": v} for k, v in overrides["environment"].items()],
                    "resources": {
                        "requests": overrides["extra_resource_guarantees"],
                        "limits": overrides["extra_resource_limits"],
                    },
                    "securityContext": overrides["container_security_context"],
                    "volumeMounts": overrides["volume_mounts"],
                }
            ],
        },
    }


def test_a_share_lands_on_the_shared_node_and_is_counted(
    k8s_namespace: Any, tmp_path: Path
) -> None:
    ns, api = k8s_namespace.name, k8s_namespace.api
    core = client.CoreV1Api(api)
    label = f"shared-{secrets.token_hex(3)}"
    body = _cluster_module().node_manifest(
        f"kwok-{label}", label, 2, "16", "64Gi", "Tesla-T4", replicas=4
    )
    body["spec"]["taints"] = [{"key": SHARED_TAINT["key"], "effect": SHARED_TAINT["effect"]}]
    node = core.create_node(body).metadata.name
    try:
        pool = f"{ns}-shared"
        teams = teams_for(
            [ns],
            tmp_path,
            more_pools={
                pool: (
                    {
                        "node_labels": {"trainhub.io/pool": label},
                        "tolerations": [SHARED_TAINT],
                        "gpus_per_node": 2,
                        "sharing": {"strategy": "time-slicing", "replicas": 4},
                    },
                    {"gpus": 1, "cpu": "8", "memory": "32Gi"},
                )
            },
            session_gpus=[0, "1/4"],
        )
        apply_teams(k8s_namespace, teams)
        team = Team(k8s_namespace, ns, teams, tmp_path)
        allocatable = core.read_node(node).status.allocatable
        assert allocatable["nvidia.com/gpu.shared"] == "8" and "nvidia.com/gpu" not in allocatable

        # The session: the spawner's pod for the 1/4 profile.
        session = resolve_session(teams, [ns], {"profile": f"{ns}.{pool}", "gpus": "1/4"})
        core.create_namespaced_pod(
            ns, session_pod(session_overrides(session, teams_configmap=None))
        )
        wait_for(
            "the session on the shared node",
            lambda: core.read_namespaced_pod("jupyter-ada", ns).spec.node_name == node,
        )
        wait_for(
            "the ResourceQuota counting one share",
            lambda: (
                (core.read_namespaced_resource_quota("trainhub-quota", ns).status.used or {}).get(
                    "requests.nvidia.com/gpu.shared"
                )
                == "1"
            ),
        )

        # A job asking for the share, and an ordinary one-GPU job.
        spec = {"name": "probe", "source": {"path": "train.py"}, "team": ns}
        shared = team.service.submit({**spec, "resources": {"gpu_share": "1/4"}}, user="ada").id
        whole = team.service.submit(
            {**spec, "name": "whole", "resources": {"gpus_per_worker": 1}}, user="ada"
        ).id
        for job_id in (shared, whole):
            team.wait_state(job_id, JobState.RUNNING)
        assert [p.spec.node_name for p in team.pods(shared)] == [node]
        assert [p.spec.node_name.startswith("kwok-a100-") for p in team.pods(whole)] == [True]

        def shared_quota() -> Any:
            quotas = {(q.pool, q.resource): q for q in team.backend.quotas()[0]}
            got = quotas.get((pool, "nvidia.com/gpu"))
            return got if got is not None and got.used == 0.25 else None

        got = wait_for("the ClusterQueue counting the job's share", shared_quota)
        assert got.nominal == 1.0
    finally:
        core.delete_node(node)


def test_the_real_node_time_slices_a_gpu_for_quarter_sessions(
    k8s_real_node: Any, k8s_namespace: Any
) -> None:
    """The node's device plugin shares its third fake GPU as the pool's ``sharing`` says:
    replicas of ``nvidia.com/gpu.shared`` beside the two whole GPUs; two pods asking what a
    1/4 session asks for run at once, each seeing that one GPU (its UUID, its NVML state)."""
    node = _cluster_module()._load_node()
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    allocatable = core.read_node(k8s_real_node.name).status.allocatable
    assert allocatable["nvidia.com/gpu.shared"] == str(node.SHARED_SHARING["replicas"])
    assert allocatable["nvidia.com/gpu"] == "2"  # the whole GPUs stay whole

    # The pool the plugin was configured from, on the real node; a 1/4 session's request.
    data = with_shared_pool(yaml.safe_load(GOLDEN_TEAMS.read_text()))
    data["pools"][-1].update(
        node_labels=dict(k8s_real_node.labels),
        tolerations=[k8s_real_node.toleration],
        gpus_per_node=1,
        sharing=node.SHARED_SHARING,
    )
    teams = parse_teams(data)
    team = teams.teams[0].name
    session = resolve_session(teams, [team], {"profile": f"{team}.t4-shared", "gpus": "1/4"})
    assert session.gpu_requests == {"nvidia.com/gpu.shared": "1"}

    overrides = session_overrides(session, teams_configmap=None)
    script = (
        'echo "visible=$NVIDIA_VISIBLE_DEVICES share=$TRAINHUB_GPU_SHARE"; '
        "cat $FAKE_NVML_STATE; echo end; sleep 600"
    )
    for name in ("quarter-a", "quarter-b"):  # the session's placement, GPU request and share
        pod = real_pod(k8s_real_node, name, script)
        pod["spec"].update(
            nodeSelector=overrides["node_selector"], tolerations=overrides["tolerations"]
        )
        container = pod["spec"]["containers"][0]
        container["resources"]["limits"] = overrides["extra_resource_limits"]
        container["env"] = [
            {"name": "TRAINHUB_GPU_SHARE", "value": overrides["environment"]["TRAINHUB_GPU_SHARE"]}
        ]
        core.create_namespaced_pod(ns, pod)

    def log_of(name: str) -> str:
        if core.read_namespaced_pod(name, ns).status.phase != "Running":
            return ""
        log = core.read_namespaced_pod_log(name, ns)
        return log if "end" in log.splitlines() else ""

    shared = dict(
        line.split("=", 1)
        for line in (k8s_real_node.nvml_state.parent / "shared-state").read_text().splitlines()
    )["gpu0.uuid"]
    whole = k8s_real_node.nvml_state.read_text()
    assert shared not in whole  # a whole-GPU pod never gets the shared GPU
    for name in ("quarter-a", "quarter-b"):  # both at once, on one GPU
        log = wait_for(f"{name}'s log", lambda name=name: log_of(name), timeout=90)
        assert f"visible={shared} share=1/4\n" in log, log
        assert "gpu_count=1" in log and f"gpu0.uuid={shared}" in log, log
    for name in ("quarter-a", "quarter-b"):
        core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
