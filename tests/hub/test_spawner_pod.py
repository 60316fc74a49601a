"""The session pod, as KubeSpawner trait values, and the last look at the manifest."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from trainhub.teams import load_teams, parse_teams
from trainhub_spawner.pod import (
    CONTAINER_SECURITY,
    account_for,
    pod_deviation,
    session_overrides,
    teams_configmap_manifest,
)
from trainhub_spawner.profiles import resolve_session

TEAMS = load_teams(Path(__file__).parents[2] / "hub_config" / "teams.yaml")


def test_a_gpu_session_runs_in_its_team_namespace_with_requests_equal_to_limits() -> None:
    s = resolve_session(
        TEAMS, ["nlp"], {"profile": "nlp.a100", "image": "pytorch-nlp", "gpus": "2"}
    )
    o = session_overrides(s)
    assert o["namespace"] == "team-nlp"
    assert o["service_account"] == "trainhub-notebook"
    assert o["automount_service_account_token"] is True
    assert o["image"] == "ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4"
    assert o["extra_resource_guarantees"] == o["extra_resource_limits"] == {"nvidia.com/gpu": "2"}
    assert o["node_selector"] == {"trainhub.io/pool": "a100"}
    assert o["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert o["environment"] == {
        "TRAINHUB_BACKEND": "kubernetes",
        "TRAINHUB_TEAM": "nlp",
        "TRAINHUB_K8S_NAMESPACE": "team-nlp",
        "TRAINHUB_K8S_QUEUE": "jobs",
        "TRAINHUB_JOBS_ROOT": "/shared/nlp/jobs",
        "TRAINHUB_TEAMS_FILE": "/etc/trainhub/teams.yaml",
        "TRAINHUB_SESSION_POOL": "a100",
    }
    assert o["extra_labels"] == {
        "trainhub.io/team": "nlp",
        "trainhub.io/pool": "a100",
        "trainhub.io/role": "notebook",
        "trainhub.io/session-gpus": "2",
    }


def test_volumes_shared_volume_teams_file_and_read_only_datasets() -> None:
    s = resolve_session(TEAMS, ["vision"], {"profile": "vision.t4", "gpus": "1"})
    o = session_overrides(s)
    assert o["volumes"] == [
        {"name": "trainhub-shared", "persistentVolumeClaim": {"claimName": "vision-shared"}},
        {
            "name": "trainhub-teams",
            "configMap": {
                "name": "trainhub-teams",
                "items": [{"key": "teams.yaml", "path": "teams.yaml"}],
            },
        },
        {
            "name": "dataset-imagenet",
            "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True},
        },
    ]
    assert o["volume_mounts"] == [
        {"name": "trainhub-shared", "mountPath": "/shared/vision"},
        {"name": "trainhub-teams", "mountPath": "/etc/trainhub", "readOnly": True},
        {
            "name": "dataset-imagenet",
            "mountPath": "/datasets/imagenet",
            "readOnly": True,
            "subPath": "ILSVRC2012",
        },
    ]
    baked = session_overrides(s, teams_configmap=None, teams_file="/opt/trainhub/teams.yaml")
    assert [v["name"] for v in baked["volumes"]] == ["trainhub-shared", "dataset-imagenet"]
    assert baked["environment"]["TRAINHUB_TEAMS_FILE"] == "/opt/trainhub/teams.yaml"


def test_a_cpu_session_gets_no_gpu_and_hides_the_nodes_gpus() -> None:
    o = session_overrides(resolve_session(TEAMS, ["vision"], {"gpus": "0"}))
    assert o["extra_resource_guarantees"] == o["extra_resource_limits"] == {}
    assert o["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_restricted_security_context() -> None:
    o = session_overrides(resolve_session(TEAMS, ["vision"], {}), uid=1000, gid=100)
    assert o["container_security_context"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert o["pod_security_context"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert (o["uid"], o["gid"], o["fs_gid"], o["privileged"]) == (1000, 100, 100, False)


def test_the_teams_configmap_is_a_self_contained_teams_file(tmp_path: Path) -> None:
    cm = teams_configmap_manifest(TEAMS, "team-nlp")
    assert cm["metadata"] == {
        "name": "trainhub-teams",
        "namespace": "team-nlp",
        "labels": {"app.kubernetes.io/managed-by": "trainhub"},
    }
    again = parse_teams(yaml.safe_load(cm["data"]["teams.yaml"]))
    assert again == TEAMS.model_copy(update={"image_catalog": None})


def _pod(session_gpus: int = 1) -> dict:
    gpu = {"nvidia.com/gpu": str(session_gpus)} if session_gpus else {}
    return {
        "metadata": {"name": "jupyter-ada"},
        "spec": {
            "serviceAccountName": "trainhub-notebook",
            "nodeSelector": {"trainhub.io/pool": "t4"},
            "containers": [
                {
                    "name": "notebook",
                    "image": "ghcr.io/trainhub/pytorch:2.5.1-cuda12.4",
                    "resources": {"limits": dict(gpu), "requests": dict(gpu)},
                    "securityContext": dict(CONTAINER_SECURITY),
                }
            ],
        },
    }


def test_the_manifest_check_accepts_the_session_pod_and_names_each_deviation() -> None:
    s = resolve_session(TEAMS, ["vision"], {"profile": "vision.t4", "gpus": "1"})
    assert pod_deviation(_pod(), s, "team-vision") is None
    assert (
        pod_deviation(_pod(), s, "team-nlp")
        == "sessions of team vision run in namespace team-vision, not team-nlp"
    )

    def changed(edit) -> str | None:
        pod = copy.deepcopy(_pod())
        edit(pod["spec"])
        return pod_deviation(pod, s, "team-vision")

    assert (
        changed(lambda p: p["containers"][0].update(image="evil:1"))
        == "image 'evil:1' is not one of team vision's curated images (pytorch)"
    )
    assert (
        changed(lambda p: p.update(serviceAccountName="default"))
        == "sessions run as the trainhub-notebook service account, not default"
    )
    assert (
        changed(lambda p: p["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": "4"}))
        == "container notebook: GPU requests (1) must equal limits (4)"
    )
    assert (
        changed(
            lambda p: p["containers"].append(
                {
                    "name": "sidecar",
                    "image": "x:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    "securityContext": dict(CONTAINER_SECURITY),
                }
            )
        )
        == "the session asks for 1 GPUs but its pod requests 2"
    )
    assert (
        changed(lambda p: p["containers"][0]["securityContext"].update(privileged=True))
        == "container notebook may not run privileged or escalate privileges"
    )
    assert (
        changed(lambda p: p.update(nodeSelector={"trainhub.io/pool": "a100"}))
        == "the session pod must run on pool t4's nodes"
    )
    assert (
        changed(lambda p: p["containers"][0].update(name="other"))
        == "the session pod has no notebook container"
    )


@pytest.mark.parametrize("gpus", [0, 1])
def test_a_cpu_or_gpu_pod_matches_its_session(gpus: int) -> None:
    s = resolve_session(TEAMS, ["vision"], {"profile": "vision.t4", "gpus": str(gpus)})
    assert pod_deviation(_pod(gpus), s, "team-vision") is None


def test_a_session_mounts_the_claims_shared_with_its_team_read_only() -> None:
    data = yaml.safe_load((Path(__file__).parents[2] / "hub_config" / "teams.yaml").read_text())
    data["teams"][1]["datasets"]["c4"]["teams"] = ["vision"]
    teams = parse_teams(data)
    s = resolve_session(teams, ["vision"], {"profile": "vision.t4", "gpus": "0"})
    readable = {n: ds for n, (_, ds) in teams.readable_datasets("vision").items()}
    o = session_overrides(s, datasets=readable)
    mounts = {m["mountPath"]: m for m in o["volume_mounts"]}
    assert mounts["/datasets/c4"] == {
        "name": "dataset-c4",
        "mountPath": "/datasets/c4",
        "readOnly": True,
    }
    assert {
        "name": "dataset-c4",
        "persistentVolumeClaim": {"claimName": "c4-corpus", "readOnly": True},
    } in o["volumes"]
    # Without them (the default) only the team's own claims are mounted.
    assert "/datasets/c4" not in {m["mountPath"] for m in session_overrides(s)["volume_mounts"]}


def test_where_a_controller_runs_each_user_runs_as_their_own_account() -> None:
    data = TEAMS.model_dump(mode="json", exclude_none=True)
    controlled = parse_teams({**data, "controller": {"namespace": "trainhub-system"}})
    assert account_for(TEAMS, "ada@example.org") == "trainhub-notebook"
    account = account_for(controlled, "ada@example.org")
    assert account == "trainhub-user-ada-40example-2eorg"

    s = resolve_session(controlled, ["vision"], {"profile": "vision.t4", "gpus": "1"})
    assert session_overrides(s, account=account)["service_account"] == account
    pod = _pod()
    assert pod_deviation(pod, s, "team-vision", account) == (
        f"sessions run as the {account} service account, not trainhub-notebook"
    )
    pod["spec"]["serviceAccountName"] = account
    assert pod_deviation(pod, s, "team-vision", account) is None


def test_a_sessions_alert_channels_live_on_its_teams_volume_where_the_controller_reads_them() -> (
    None
):
    s = resolve_session(TEAMS, ["vision"], {})
    env = session_overrides(s, user="ada@example.org")["environment"]
    mount = s.team.shared_volume.mount_path
    assert env["TRAINHUB_ALERTS_FILE"] == f"{mount}/.trainhub/users/ada@example.org/alerts.yaml"
    assert "TRAINHUB_ALERTS_FILE" not in session_overrides(s)["environment"]
