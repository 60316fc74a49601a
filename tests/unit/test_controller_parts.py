"""The controller's pure parts: label selectors as the API server reads them, what its cache
derives from what it watched, the work queue, and the objects `trainhub admin render` makes
for it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from trainhub.backends.kubernetes.cache import ClusterCache
from trainhub.backends.kubernetes.controlplane import CONTROLLER, controller_objects
from trainhub.backends.kubernetes.identity import USER_IDS_CONFIGMAP
from trainhub.backends.kubernetes.render import render
from trainhub.backends.kubernetes.selectors import matcher
from trainhub.controller.leader import Timing
from trainhub.controller.workqueue import WorkQueue
from trainhub.teams import TeamsError, parse_teams

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ("", {}, True),
        ("trainhub.io/job-id", {"trainhub.io/job-id": "a"}, True),
        ("trainhub.io/job-id", {}, False),
        ("!trainhub.io/job-id", {}, True),
        ("a=1,b", {"a": "1", "b": ""}, True),
        ("a=1,b", {"a": "2", "b": ""}, False),
        ("a==1", {"a": "1"}, True),
        ("a!=1", {}, True),
        ("a!=1", {"a": "1"}, False),
        ("uid in (x, y),t", {"uid": "y", "t": "1"}, True),
        ("uid in (x,y)", {"uid": "z"}, False),
        ("uid notin (x,y)", {"uid": "z"}, True),
        ("uid notin (x,y)", {}, True),
    ],
)
def test_selectors_select_as_the_api_server_does(
    selector: str, labels: dict[str, str], selected: bool
) -> None:
    assert matcher(selector)(labels) is selected


def test_a_selector_it_cannot_read_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'a ~ b'"):
        matcher("a ~ b")


def test_what_is_derived_from_the_cache_is_built_again_only_once_its_kinds_change() -> None:
    from kubernetes.client import ApiClient

    changed: list[tuple[str, str]] = []
    cache = ClusterCache(ApiClient(), ["team-a"], lambda ns, kind: changed.append((ns, kind)))
    lists, builds = cache.lists("team-a"), []

    def jobs_held() -> int:
        builds.append(1)
        return len(cache.items("team-a", "jobs"))

    def watched(kind: str, event: str, uid: str, version: str) -> None:
        meta = {"uid": uid, "name": uid, "resourceVersion": version}
        cache.informers[("team-a", kind)]._apply({"type": event, "object": {"metadata": meta}})

    assert lists.derived(("jobs", "pods"), "held", jobs_held) == 0
    assert lists.derived(("jobs", "pods"), "held", jobs_held) == 0 and len(builds) == 1
    watched("jobs", "ADDED", "j1", "5")
    assert lists.derived(("jobs", "pods"), "held", jobs_held) == 1 and len(builds) == 2
    watched("jobs", "BOOKMARK", "j1", "9")  # a bookmark moves the version, changes nothing
    watched("workloads", "ADDED", "w1", "10")  # a kind it is not derived from
    assert lists.derived(("jobs", "pods"), "held", jobs_held) == 1 and len(builds) == 2
    watched("pods", "MODIFIED", "p1", "11")
    watched("jobs", "DELETED", "j1", "12")
    assert lists.derived(("jobs", "pods"), "held", jobs_held) == 0 and len(builds) == 3
    assert ("team-a", "jobs") in changed


def test_the_work_queue_holds_a_key_once_and_works_it_again_when_added_meanwhile() -> None:
    now = [0.0]
    q = WorkQueue(clock=lambda: now[0])
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert q.get(0) == "a"
    q.add("a")  # changed while being worked on: not handed to a second worker now
    assert q.get(0) == "b"
    assert q.get(0) is None
    q.done("a")
    assert q.get(0) == "a"  # ... but worked again once done
    q.done("a")
    q.add_after("c", 5)
    assert q.get(0) is None
    now[0] = 5.0
    assert q.get(0) == "c"


def test_workers_side_by_side_never_hold_one_key_at_once_and_miss_no_change() -> None:
    """Four workers, as the controller runs them, while keys keep changing: a key is never
    worked by two at once, and every change is followed by a pass that began after it."""
    q, keys, stop = WorkQueue(), [f"ns-{i}" for i in range(8)], threading.Event()
    lock = threading.Lock()
    working: set[str] = set()
    overlaps: list[str] = []
    changed: dict[str, int] = dict.fromkeys(keys, 0)  # how many changes each key has had
    seen: dict[str, int] = dict.fromkeys(keys, 0)  # the changes its last pass began after

    def worker() -> None:
        while not stop.is_set():
            key = q.get(timeout=0.05)
            if key is None:
                continue
            with lock:
                if key in working:
                    overlaps.append(key)
                working.add(key)
                seen[key] = changed[key]
            time.sleep(0.005)  # a reconcile's round trips, during which changes come
            with lock:
                working.discard(key)
            q.done(key)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(400):
        key = keys[n % 3]  # a few keys change often, the others once
        with lock:
            changed[key] += 1
        q.add(key)
        time.sleep(0.001)
    for key in keys[3:]:
        with lock:
            changed[key] += 1
        q.add(key)
    deadline = time.monotonic() + 10
    while seen != changed and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join()
    assert not overlaps
    assert seen == changed


def test_leader_timing_must_let_the_leader_stop_before_a_standby_starts() -> None:
    with pytest.raises(ValueError, match="retry < renew < lease"):
        Timing(lease=10, renew=10, retry=2)


def teams_with_controller(**controller: object) -> object:
    data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
    data["controller"] = controller
    return parse_teams(data)


def test_the_controller_acts_only_in_team_namespaces_with_the_verbs_it_uses() -> None:
    teams = teams_with_controller(namespace="trainhub-system")
    objs = controller_objects(teams)
    kinds = [(o["kind"], o["metadata"].get("namespace")) for o in objs]
    team_namespaces = {t.namespace for t in teams.teams}
    bindings = {ns for kind, ns in kinds if kind == "RoleBinding"} - {"trainhub-system"}
    assert bindings == team_namespaces
    assert ("ClusterRoleBinding", None) not in kinds  # no right outside the team namespaces
    (role,) = [o for o in objs if o["kind"] == "ClusterRole"]
    verbs = {
        (r["apiGroups"][0], res): set(r["verbs"]) for r in role["rules"] for res in r["resources"]
    }
    assert verbs[("", "pods")] == {"get", "list", "watch"}  # never deletes a pod
    assert "delete" not in verbs[("kueue.x-k8s.io", "workloads")]
    assert not any(res in ("secrets", "pods/exec") for _, res in verbs)
    # Of ConfigMaps, only the team's user ids, read: whose files a job's are.
    (configmaps,) = [r for r in role["rules"] if r["resources"] == ["configmaps"]]
    assert configmaps["resourceNames"] == [USER_IDS_CONFIGMAP] and configmaps["verbs"] == ["get"]
    (deployment,) = [o for o in objs if o["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    for team in teams.teams:  # each team's volume where its sessions and pods see it
        assert mounts[team.shared_volume.mount_path] == f"team-{team.name}"
    assert mounts["/tmp"] == "tmp"  # writable beside a read-only root: sweeps thaw there
    assert deployment["spec"]["replicas"] == 2
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # It acts on members' files as their owner: root's setuid and setgid, and nothing else.
    assert spec["securityContext"]["runAsUser"] == 0
    assert container["securityContext"]["capabilities"] == {
        "drop": ["ALL"],
        "add": ["SETUID", "SETGID"],
    }
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (namespace,) = [o for o in objs if o["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    # Where members share one id, it is that user, and the namespace restricted.
    shared = teams_with_controller(namespace="trainhub-system", per_user_ids=False)
    objs = controller_objects(shared)
    (deployment,) = [o for o in objs if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    (namespace,) = [o for o in objs if o["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert {o["kind"] for o in objs} >= {"PodDisruptionBudget", "Service", "NetworkPolicy"}
    assert all(
        o["metadata"]["name"].startswith(CONTROLLER)
        for o in objs
        if o["kind"] != "Namespace" and o["kind"] != "ConfigMap"
    )


def test_render_includes_the_controller_only_when_the_teams_file_asks() -> None:
    with_it = {o["kind"] for o in render(teams_with_controller())}
    data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
    without = {o["kind"] for o in render(parse_teams(data))}
    assert "Deployment" in with_it and "Deployment" not in without


def test_the_controller_mounts_a_teams_mlflow_credentials_and_no_others() -> None:
    data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
    data["controller"] = {}
    token = "/etc/trainhub/mlflow/vision/token"
    data["teams"][0]["mlflow"] = {"tracking_uri": "https://mlflow.example.org", "token_file": token}
    (deployment,) = [o for o in controller_objects(parse_teams(data)) if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    secrets = [v for v in pod["volumes"] if "secret" in v]
    assert [v["secret"]["secretName"] for v in secrets] == ["mlflow-vision"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "mlflow-vision"]
    assert token.startswith(mount["mountPath"] + "/") and mount["readOnly"]


def test_outside_the_team_namespaces_the_controller_only_reads_nodes_and_queues() -> None:
    """Why a job waits on a node (a taint, no room) and on Kueue (which quota) is judged
    from the nodes and the ClusterQueue: the controller may read those, and nothing more."""
    teams = teams_with_controller(namespace="trainhub-system")
    objs = render(teams)
    account = {"kind": "ServiceAccount", "name": CONTROLLER, "namespace": "trainhub-system"}
    bound = [o for o in objs if o["kind"] == "ClusterRoleBinding" and account in o["subjects"]]
    assert [b["roleRef"]["kind"] for b in bound] == ["ClusterRole"]
    (role,) = [
        o
        for o in objs
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == bound[0]["roleRef"]["name"]
    ]
    assert {res for r in role["rules"] for res in r["resources"]} >= {"nodes", "clusterqueues"}
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in role["rules"])


def test_team_volumes_mounted_inside_one_another_are_refused_naming_the_field() -> None:
    data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
    data["controller"] = {}
    data["teams"][1]["shared_volume"]["mount_path"] = (
        data["teams"][0]["shared_volume"]["mount_path"] + "/nlp"
    )
    with pytest.raises(TeamsError, match=r"teams\[1\]\.shared_volume\.mount_path.*overlaps"):
        parse_teams(data)


def test_a_fractional_cpu_quota_is_kept_in_the_namespaces_resource_quota() -> None:
    """A team's CPU quota of 0.5 or 500m is half a core, not 0 (which let no pod start)."""
    from trainhub.backends.kubernetes.namespaces import resource_quota
    from trainhub.jobs.quantities import parse_cpu

    assert (parse_cpu("500m"), parse_cpu("0.5"), parse_cpu("8")) == (0.5, 0.5, 8.0)
    for given in ("0.5", "500m"):
        data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
        pool, quota = next(iter(data["teams"][0]["quota"].items()))
        data["teams"][0]["quota"] = {pool: {**quota, "cpu": given}}  # its one pool
        data["teams"][0].pop("cohort", None)
        teams = parse_teams(data)
        assert resource_quota(teams, teams.teams[0])["spec"]["hard"]["requests.cpu"] == "500m"
    data["teams"][0]["quota"][pool]["cpu"] = "half"
    with pytest.raises(TeamsError, match=r"quota\.\S+\.cpu: 'half' is not a CPU quantity"):
        parse_teams(data)
