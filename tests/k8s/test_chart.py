"""charts/trainhub: `helm template` gives exactly the objects `trainhub admin render` renders, so
the two cannot drift; bad values are refused naming the field; on the test control plane
`helm install` creates the team objects (adopting what an earlier `trainhub admin apply` left),
`helm upgrade` with a bigger quota changes the teams' ClusterQueues, and `helm uninstall` leaves
the teams' namespaces and volumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

import trainhub
from trainhub.backends.kubernetes.apply import apply_objects
from trainhub.backends.kubernetes.rbac import QUEUE_READER
from trainhub.backends.kubernetes.render import render, to_yaml
from trainhub.teams import load_teams

from .test_admin_apply import teams_data, teams_for

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "trainhub"
GOLDEN_TEAMS = ROOT / "tests" / "unit" / "golden" / "teams.yaml"
DASHBOARD = CHART / "files" / "grafana-dashboard.json"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
KEEP = {"helm.sh/resource-policy": "keep"}
# What every teams file renders alike, outside the teams' namespaces.
SHARED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "WorkloadPriorityClass",
}

Key = tuple[str, str, str | None, str]


def key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]


def by_key(text: str) -> dict[Key, dict[str, Any]]:
    objs = [o for o in yaml.safe_load_all(text) if o]
    keyed = {key(o): o for o in objs}
    assert len(keyed) == len(objs), "an object appears twice"
    return keyed


@pytest.fixture
def helm(built_tool: Callable[[str], Path], tmp_path: Path) -> Callable[..., Any]:
    """Runs the built Helm with its own config, cache and data directories."""
    env = {
        **os.environ,
        **{
            f"HELM_{d}_HOME": str(tmp_path / f"helm-{d.lower()}")
            for d in ("CONFIG", "CACHE", "DATA")
        },
    }
    binary = built_tool("helm")

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(binary), *args], env=env, capture_output=True, text=True, timeout=120
        )
        if check:
            assert proc.returncode == 0, f"helm {' '.join(args)}:\n{proc.stderr}"
        return proc

    return run


def helm_values(teams_file: Path, out: Path) -> Path:
    """`trainhub admin render TEAMS --helm-values`, as an administrator runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "trainhub.cli", "admin", "render", str(teams_file), "--helm-values"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out.write_text(proc.stdout)
    return out


def test_the_chart_is_trainhubs_release() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == chart["version"] == project["version"] == trainhub.__version__


@pytest.mark.parametrize("controller", [False, True], ids=["teams", "teams+controller"])
def test_helm_template_gives_what_admin_render_renders(
    helm: Any, tmp_path: Path, controller: bool
) -> None:
    # The golden teams file, with a priority too big for a float's default formatting: Helm
    # reads values as JSON numbers, and writes them back through toYaml. With a controller, its
    # objects come along (and the volume trainhub would make, which a controller cannot share).
    data = yaml.safe_load(GOLDEN_TEAMS.read_text())
    data["priorities"]["high"] = 1_000_000_000
    if controller:
        data["controller"] = {"image": "registry.invalid/trainhub/controller:1"}
        del data["teams"][0]["shared_volume"]["size"]
    teams_file = tmp_path / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(data))
    values = helm_values(teams_file, tmp_path / "teams.values.yaml")

    helm("lint", "--strict", str(CHART), "-f", str(values))
    out = helm("template", "trainhub", str(CHART), "-n", "trainhub-system", "-f", str(values))
    charted = by_key(out.stdout)
    rendered = by_key(to_yaml(render(load_teams(teams_file))))

    dashboard = charted.pop(("v1", "ConfigMap", "trainhub-system", "trainhub-grafana-dashboard"))
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["trainhub.json"]) == json.loads(DASHBOARD.read_text())
    for k, obj in charted.items():
        if k[1] in ("Namespace", "PersistentVolumeClaim"):  # uninstalling keeps the teams' data
            assert obj["metadata"].pop("annotations") == KEEP
    kinds = {k[1] for k in rendered}
    assert ("Deployment" in kinds) is controller
    assert ("PersistentVolumeClaim" in kinds) is not controller
    assert list(charted) and charted.keys() == rendered.keys()
    for k in rendered:
        assert charted[k] == rendered[k], k
    high = rendered[(f"{KUEUE[0]}/{KUEUE[1]}", "WorkloadPriorityClass", None, "trainhub-high")]
    assert high["value"] == 1_000_000_000


def test_bad_values_are_refused_naming_the_field(helm: Any, tmp_path: Path) -> None:
    values = yaml.safe_load(helm_values(GOLDEN_TEAMS, tmp_path / "v.yaml").read_text())

    def template(**changes: Any) -> str:
        path = tmp_path / "changed.yaml"
        path.write_text(yaml.safe_dump({**values, **changes}))
        proc = helm("template", "t", str(CHART), "-f", str(path), check=False)
        assert proc.returncode != 0, proc.stdout[:500]
        return proc.stderr

    assert (
        "teams.objects is empty: render the teams file"
        in helm("template", "t", str(CHART), check=False).stderr
    )
    stale = template(teams={**values["teams"], "renderedBy": "0.0.9"})
    assert 'teams.renderedBy: the objects were rendered by trainhub "0.0.9"' in stale
    no_kind = [{k: v for k, v in values["teams"]["objects"][0].items() if k != "kind"}]
    missing = template(teams={**values["teams"], "objects": no_kind})
    assert "/teams/objects/0" in missing and "kind" in missing
    bad_namespace = template(dashboard={"enabled": True, "namespace": "Not_A_Namespace"})
    assert "/dashboard/namespace" in bad_namespace
    unknown = template(controler={"enabled": True})
    assert "controler" in unknown


def _cluster_queue(api: Any, name: str) -> dict[str, Any] | None:
    try:
        return client.CustomObjectsApi(api).get_cluster_custom_object(*KUEUE, "clusterqueues", name)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def _gpu_quota(cq: dict[str, Any]) -> str:
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    return next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")["nominalQuota"]


def test_install_upgrade_and_uninstall_on_the_cluster(
    k8s_namespace: Any, helm: Any, tmp_path: Path
) -> None:
    release_ns, api = k8s_namespace.name, k8s_namespace.api
    team_ns = [f"{release_ns}-a", f"{release_ns}-b"]
    core = client.CoreV1Api(api)
    teams_file = tmp_path / "teams.yaml"
    kubeconfig = ("--kubeconfig", str(k8s_namespace.kubeconfig))

    volume = {"claim": "shared", "mount_path": str(tmp_path / "shared"), "size": "1Gi"}

    def release(verb: str, a100_gpus: int, *flags: str) -> None:
        data = teams_data(team_ns, tmp_path, a100_gpus=a100_gpus, shared_volume=volume)
        teams_file.write_text(yaml.safe_dump(data))
        values = helm_values(teams_file, tmp_path / "teams.values.yaml")
        chart = (str(CHART), "-n", release_ns, "-f", str(values), *kubeconfig)
        helm(verb, "trainhub", *chart, *flags)

    try:
        # A cluster set up by `trainhub admin apply` before the chart: its cluster-wide objects
        # (the queue reader, the policy, the priority classes, which every teams file renders)
        # are there; Helm adopts them, and the fields admin apply's field manager owned. The
        # team objects it creates.
        shared = [o for o in render(teams_for(team_ns, tmp_path)) if o["kind"] in SHARED]
        apply_objects(api, shared)
        release("install", 8, "--take-ownership", "--force-conflicts")
        reader = client.RbacAuthorizationV1Api(api).read_cluster_role(QUEUE_READER)
        assert reader.metadata.annotations["meta.helm.sh/release-name"] == "trainhub"
        for ns in team_ns:
            labels = core.read_namespace(ns).metadata.labels
            assert labels["trainhub.io/team"] == ns and labels["trainhub.io/managed"] == "true"
            assert core.read_namespaced_resource_quota("trainhub-quota", ns).spec.hard
            claim = core.read_namespaced_persistent_volume_claim("shared", ns)
            assert claim.spec.access_modes == ["ReadWriteMany"]
            queue = client.CustomObjectsApi(api).get_namespaced_custom_object(
                *KUEUE, ns, "localqueues", "jobs"
            )
            assert queue["spec"]["clusterQueue"] == ns
            cq = _cluster_queue(api, ns)
            assert _gpu_quota(cq) == "8"
            assert cq["metadata"]["annotations"]["meta.helm.sh/release-name"] == "trainhub"
        cm = core.read_namespaced_config_map("trainhub-grafana-dashboard", release_ns)
        assert json.loads(cm.data["trainhub.json"])["uid"] == "trainhub-overview"

        release("upgrade", 12)
        assert [_gpu_quota(_cluster_queue(api, ns)) for ns in team_ns] == ["12", "12"]
        hard = core.read_namespaced_resource_quota("trainhub-quota", team_ns[0]).spec.hard
        assert hard["requests.nvidia.com/gpu"] == str(2 * 12 + 2 * 4)  # own + the cohort's

        helm("uninstall", "trainhub", "-n", release_ns, "--wait", *kubeconfig)
        assert [_cluster_queue(api, ns) for ns in team_ns] == [None, None]
        for ns in team_ns:  # kept, with the team's volume
            assert core.read_namespace(ns).status.phase == "Active"
            assert core.read_namespaced_persistent_volume_claim("shared", ns).metadata.uid
    finally:
        for ns in team_ns:
            k8s_namespace.delete_cluster_object(*KUEUE, "clusterqueues", ns)
            try:
                core.delete_namespace(ns, propagation_policy="Background")
            except client.ApiException as e:
                if e.status != 404:
                    raise
        for pool in (f"{team_ns[0]}-a100", f"{team_ns[0]}-t4"):
            k8s_namespace.delete_cluster_object(*KUEUE, "resourceflavors", pool)
