"""The hub configuration, the Helm values and the per-namespace hub objects, checked without a hub;
and the real KubeSpawner pod manifest that TrainHubSpawner produces for a session."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from traitlets.config import Config, PyFileConfigLoader

from trainhub.teams import load_teams, parse_teams
from trainhub_spawner.hub_objects import hub_objects
from trainhub_spawner.images import lint_dockerfile, load_catalog

ROOT = Path(__file__).parents[2]
TEAMS = load_teams(ROOT / "hub_config" / "teams.yaml")


def load_hub_config(monkeypatch: pytest.MonkeyPatch, **env: str) -> Config:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "hub_config"))
    return loader.load_config()


def test_the_hub_config_wires_the_spawner_groups_and_idle_service(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    members = tmp_path / "members.yaml"
    members.write_text("vision: [ada]\nnlp-interns: [bo]\n")
    c = load_hub_config(
        monkeypatch,
        TRAINHUB_GROUP_MEMBERS=str(members),
        TRAINHUB_IDLE_STOP_MINUTES="40",
        TRAINHUB_IDLE_THRESHOLD_PERCENT="7",
        TRAINHUB_METRICS_PORT="0",
        TRAINHUB_PROXY_URL="http://proxy-public",
        TRAINHUB_IDLE_STATE_FILE=str(tmp_path / "idle.json"),
    )
    assert c.JupyterHub.spawner_class == "trainhub_spawner.spawner.TrainHubSpawner"
    assert c.TrainHubSpawner.teams_file == str(ROOT / "hub_config" / "teams.yaml")
    assert c.TrainHubSpawner.enable_user_namespaces is False
    assert c.JupyterHub.load_groups == {
        "vision": {"users": ["ada"], "properties": {"trainhub_team": "vision"}},
        "nlp": {"users": [], "properties": {"trainhub_team": "nlp"}},
        "nlp-interns": {"users": ["bo"], "properties": {"trainhub_team": "nlp"}},
    }
    [service] = c.JupyterHub.services
    assert service["name"] == "trainhub-idle-gpu"
    assert service["command"][:3] == [sys.executable, "-m", "trainhub_spawner.idle"]
    assert "--stop-after-minutes=40.0" in service["command"]
    assert "--warn-after-minutes=20.0" in service["command"]
    assert "--threshold-percent=7" in service["command"]
    assert f"--state-file={tmp_path / 'idle.json'}" in service["command"]
    assert service["environment"]["TRAINHUB_PROXY_URL"] == "http://proxy-public"
    [role] = c.JupyterHub.load_roles
    assert role == {
        "name": "trainhub-idle-gpu",
        "scopes": ["list:users", "read:users", "admin:servers", "access:servers"],
        "services": ["trainhub-idle-gpu"],
    }
    # the spawn form reads why the service stopped a server from beside the same file
    assert c.TrainHubSpawner.idle_state_file == str(tmp_path / "idle.json")


def test_a_broken_teams_file_stops_the_hub_config_naming_the_field(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "teams.yaml"
    bad.write_text(
        (ROOT / "hub_config" / "teams.yaml").read_text().replace("gpus: 8, cpu", "gpus: -8, cpu", 1)
    )
    with pytest.raises(Exception, match=r"teams\[0\]\.quota\.a100\.gpus: must be >= 0"):
        load_hub_config(monkeypatch, TRAINHUB_TEAMS_FILE=str(bad))


def test_idle_service_off_when_stop_minutes_is_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    c = load_hub_config(monkeypatch, TRAINHUB_IDLE_STOP_MINUTES="0", TRAINHUB_METRICS_PORT="0")
    assert "services" not in c.JupyterHub


def test_the_metrics_service_and_its_scrape_token_hold_only_what_they_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = load_hub_config(
        monkeypatch,
        TRAINHUB_METRICS_PORT="10555",
        TRAINHUB_METRICS_SCRAPE_TOKEN="scrape-token-123456",
        TRAINHUB_SMTP_HOST="smtp.example.org",
    )
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert set(services) == {"trainhub-idle-gpu", "trainhub-metrics", "prometheus"}
    metrics = services["trainhub-metrics"]
    assert metrics["url"] == "http://127.0.0.1:10555"
    assert metrics["command"] == [sys.executable, "-m", "trainhub_spawner.metrics_service"]
    assert services["prometheus"] == {"name": "prometheus", "api_token": "scrape-token-123456"}
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["prometheus"]["scopes"] == ["access:services!service=trainhub-metrics"]
    for name in ("trainhub-idle-gpu", "trainhub-metrics"):
        env = services[name]["environment"]
        assert env["TRAINHUB_SMTP_HOST"] == "smtp.example.org"  # for the team alerts
        assert "scrape-token-123456" not in env.values()
        assert env["TRAINHUB_TEAMS_FILE"] == str(ROOT / "hub_config" / "teams.yaml")


def test_helm_values_load_the_config_and_teams_file_they_mount() -> None:
    values = yaml.safe_load((ROOT / "hub_config" / "values.yaml").read_text())
    hub = values["hub"]
    config_path = hub["extraFiles"]["config"]["mountPath"]
    # Run on the chart's own config object: load_subconfig gives it a fresh one, and the chart's
    # services (the idle culler among them) were lost.
    extra = hub["extraConfig"]["trainhub"]
    assert "runpy.run_path(" in extra and f'"{config_path}"' in extra
    assert '"get_config": lambda: c' in extra and "load_subconfig" not in extra
    assert hub["extraEnv"]["TRAINHUB_TEAMS_FILE"] == hub["extraFiles"]["teams"]["mountPath"]
    catalog = {i.image for i in load_catalog(ROOT / "images" / "catalog.yaml")}
    single = values["singleuser"]["image"]
    assert f"{single['name']}:{single['tag']}" in catalog
    assert values["singleuser"]["cmd"] == "jupyterhub-singleuser"
    assert values["rbac"]["create"] is True
    hub_image = (ROOT / "images" / "hub" / "Dockerfile").read_text()
    assert f"ghcr.io/trainhub/hub:{hub['image']['tag']}" in hub_image


# Every image that runs as a container; images/debian is only the root filesystem the others
# are built on (never run), and each of them ends with its own non-root USER.
RUNNABLE_DOCKERFILES = sorted(
    p for p in (ROOT / "images").glob("*/Dockerfile") if p.parent.name != "debian"
)


@pytest.mark.parametrize("dockerfile", RUNNABLE_DOCKERFILES, ids=lambda p: p.parent.name)
def test_every_dockerfile_passes_the_linter(dockerfile: Path) -> None:
    assert lint_dockerfile(dockerfile.read_text(), str(dockerfile)) == []


def test_hub_objects_let_the_hub_run_sessions_in_each_team_namespace_only() -> None:
    objs = hub_objects(TEAMS, "jhub")
    assert [(o["kind"], o["metadata"]["namespace"]) for o in objs] == [
        (k, ns)
        for ns in ("team-vision", "team-nlp")
        for k in ("Role", "RoleBinding", "NetworkPolicy")
    ]
    role = objs[0]
    verbs = {r["resources"][0]: r["verbs"] for r in role["rules"]}
    assert verbs["pods"] == ["get", "list", "watch", "create", "delete"]
    assert "secrets" not in verbs and all("*" not in v for v in verbs.values())
    assert objs[1]["subjects"] == [{"kind": "ServiceAccount", "name": "hub", "namespace": "jhub"}]
    policy = objs[2]["spec"]
    assert policy["podSelector"] == {"matchLabels": {"trainhub.io/role": "notebook"}}
    assert policy["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8888}]
    assert not [r for r in role["rules"] if "serviceaccounts" in r["resources"]]


def test_where_a_controller_runs_the_hub_makes_session_accounts_bound_to_the_session_role() -> None:
    data = TEAMS.model_dump(mode="json", exclude_none=True)
    controlled = parse_teams({**data, "controller": {"namespace": "trainhub-system"}})
    rules = hub_objects(controlled, "jhub")[0]["rules"]
    assert {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create"]} in rules
    rbac = [r for r in rules if r["apiGroups"] == ["rbac.authorization.k8s.io"]]
    assert rbac == [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["rolebindings"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["roles"],
            "resourceNames": ["trainhub-notebook"],
            "verbs": ["bind"],
        },
    ]


# --- the real KubeSpawner manifest --------------------------------------------------------------
@pytest.fixture
def spawner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "x", "user": {"token": "unused"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    # kubernetes_asyncio reads KUBECONFIG once, when first imported (by an earlier test, in a
    # whole run): point its default at this file too.
    monkeypatch.setattr(
        "kubernetes_asyncio.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig)
    )
    from trainhub_spawner.spawner import TrainHubSpawner

    def make(groups: list[str], options: dict) -> TrainHubSpawner:
        s = TrainHubSpawner(
            _mock=True,
            teams_file=str(ROOT / "hub_config" / "teams.yaml"),
            check_quota=False,
            teams_configmap="",
            cmd=["jupyterhub-singleuser"],
        )
        s.user.groups = [SimpleNamespace(name=g) for g in groups]
        s.user_options = options
        return s

    return make


async def test_the_session_pod_is_restricted_and_sized_as_chosen(spawner) -> None:
    s = spawner(["nlp"], {"profile": "nlp.a100", "image": "pytorch-nlp", "gpus": "2"})
    await s.load_user_options()
    pod = s.api.api_client.sanitize_for_serialization(await s.get_pod_manifest())
    assert s.namespace == "team-nlp"
    spec = pod["spec"]
    [c] = spec["containers"]
    assert c["image"] == "ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4"
    assert (
        c["resources"]["limits"]["nvidia.com/gpu"]
        == c["resources"]["requests"]["nvidia.com/gpu"]
        == "2"
    )
    assert c["securityContext"] == {
        "runAsUser": 1000,
        "runAsGroup": 100,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["securityContext"] == {
        "fsGroup": 100,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["serviceAccountName"] == "trainhub-notebook"
    assert spec["automountServiceAccountToken"] is True
    assert spec["nodeSelector"] == {"trainhub.io/pool": "a100"}
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["TRAINHUB_BACKEND"] == "kubernetes" and env["TRAINHUB_K8S_NAMESPACE"] == "team-nlp"
    assert env["TRAINHUB_JOBS_ROOT"] == "/shared/nlp/jobs"
    assert {m["mountPath"] for m in c["volumeMounts"]} >= {"/shared/nlp", "/datasets/c4"}
    assert pod["metadata"]["labels"]["trainhub.io/team"] == "nlp"


async def test_options_posted_to_the_api_are_refused_before_any_pod(spawner) -> None:
    from trainhub_spawner.spawner import SpawnRefused

    s = spawner(["vision"], {"profile": "vision.a100", "image": "docker.io/evil/miner:1"})
    with pytest.raises(SpawnRefused) as e:
        await s.load_user_options()
    assert e.value.status_code == 403
    assert (
        e.value.jupyterhub_message
        == "image 'docker.io/evil/miner:1' is not allowed: team vision allows its catalog images "
        "only (pytorch)"
    )
    with pytest.raises(SpawnRefused, match="not offered to you"):
        spawner(["vision"], {})._checked_options_from_form(
            {"profile": ["nlp.a100"], "profile-option-nlp.a100--gpus": ["2"]}
        )


async def test_an_admin_override_that_moves_the_pod_is_caught_at_the_manifest(spawner) -> None:
    from trainhub_spawner.spawner import SpawnRefused

    s = spawner(["vision"], {"profile": "vision.t4", "gpus": "1"})
    await s.load_user_options()
    s.image = "docker.io/other/image:1"  # as a later hook or override could
    with pytest.raises(
        SpawnRefused, match=r"image 'docker\.io/other/image:1' is not one of team vision"
    ):
        await s.get_pod_manifest()


async def test_a_second_session_of_a_server_starts_from_the_admins_config_not_the_first(
    spawner,
) -> None:
    s = spawner(["vision"], {"profile": "vision.t4", "gpus": "0"})
    s.environment = {"SITE": "lab-1"}
    await s.load_user_options()
    assert s.environment["NVIDIA_VISIBLE_DEVICES"] == "void"
    s.user_options = {"profile": "vision.a100", "gpus": "1"}
    await s.load_user_options()
    assert "NVIDIA_VISIBLE_DEVICES" not in s.environment
    assert s.environment["SITE"] == "lab-1"
    assert s.environment["TRAINHUB_SESSION_POOL"] == "a100"
    assert s.extra_resource_limits == {"nvidia.com/gpu": "1"}
    assert s.extra_labels["trainhub.io/session-gpus"] == "1"
    assert [v["name"] for v in s.volumes].count("trainhub-shared") == 1


async def test_the_spawn_form_says_why_the_idle_gpu_service_stopped_the_server(
    spawner, tmp_path: Path
) -> None:
    from trainhub_spawner.stops import Stop, record_stop, stops_file

    state_file = str(tmp_path / "idle-gpu-sessions.json")
    s = spawner(["nlp"], {})
    s.idle_state_file = state_file
    plain = await s.get_options_form()
    assert 'name="profile"' in plain and "trainhub-stopped" not in plain  # no stop recorded

    user = s.user.name
    reason = "stopped at 14:02 UTC on 2025-05-02: its 1 GPU stayed under 5% for 60 minutes"
    record_stop(stops_file(state_file), Stop(user, "", 1000.0, reason))
    record_stop(stops_file(state_file), Stop(user, "other", 2000.0, "stopped <b>{{x}}</b>"))
    form = await s.get_options_form()
    assert form.startswith('<div class="alert alert-warning trainhub-stopped" role="alert">')
    assert f"This server was {reason}." in form
    assert form.endswith(plain)

    # the state that outlives a stop says when this server last started: after the stop, it
    # is old news; before it (an older session), still news; a hub restart keeps it
    s.started_at = 1001.0
    assert await s.get_options_form() == plain
    restarted = spawner(["nlp"], {})
    restarted.idle_state_file = state_file
    restarted.load_state(s.get_state())
    assert await restarted.get_options_form() == plain
    restarted.load_state({"trainhub_started_at": 999.0})
    assert reason in await restarted.get_options_form()
