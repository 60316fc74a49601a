"""Members' files on the real node: two members of one team, each in a session pod of their own
(the curated ``base`` image) that runs as the id the hub gave them, beside trainhub's controller
(its own process, with root's setuid and setgid capabilities and no other, as its Deployment
has them). ada's job runs in ``pytorch-cpu`` pods on the node as ada; everything in its
directory is ada's, what the controller wrote there included. bo's kernel, as bo, reads none
of it, and with bo's own token (the API from the kernel, kubectl from outside) can neither
delete ada's Job, nor read its pod's log, nor run a Job as ada; trainhub answers bo 404. Once
ada shares the job, bo reads it and still writes nothing; ada's job ends as it should.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.fixtures.k8s import reachable_by_all
from tests.hub.conftest import (
    HubWorld,
    real_node_pool,
    running_hub,
    service_account_kubeconfig,
    wait_for,
)
from tests.hub.test_real_session import run_in_kernel, session_pods, through_proxy
from tests.k8s.test_controller import AS_DEPLOYED, Replica, controller_kubeconfig
from tests.k8s.test_real_jobs import import_built_image
from tests.k8s.test_session_rights import kubectl
from trainhub.backends.kubernetes.controlplane import teams_config
from trainhub.backends.kubernetes.identity import session_account
from trainhub.jobs import ownership
from trainhub.teams import parse_teams

pytestmark = pytest.mark.timeout(900)

ADA, BO = "ada", "bo"
TEAM, POOL = "lab", "real"
SESSION_IMAGE, JOB_IMAGE = "base", "pytorch-cpu"
FIRST_ID = 100000  # the teams file's controller.first_user_id, by default
PODS_CONFIG = """
c.KubeSpawner.cpu_guarantee = 0.25
c.KubeSpawner.mem_guarantee = "512M"
"""
RELEASE = "release"  # on the team volume: the job runs until the test writes it
WORK = """\
import os, time
print("working", flush=True)
deadline = time.time() + 240
while not os.path.exists({release!r}) and time.time() < deadline:
    time.sleep(0.5)
print("done", flush=True)
"""


def teams_data(suffix: str, node: Any, images: dict[str, str], shared: Path) -> dict[str, Any]:
    return {
        "pools": [
            real_node_pool(node, POOL),
        ],
        "images": [{"name": n, "image": ref} for n, ref in images.items()],
        "teams": [
            {
                "name": TEAM,
                "groups": [TEAM],
                "namespace": f"hub-{TEAM}-{suffix}",
                "quota": {POOL: {"gpus": 2, "cpu": "3", "memory": "6Gi"}},
                "images": [SESSION_IMAGE, JOB_IMAGE],
                "shared_volume": {"claim": "shared", "mount_path": str(shared)},
            }
        ],
        "controller": {"namespace": f"hub-ctl-{suffix}"},
    }


@pytest.fixture(scope="module")
def members(
    k8s_cluster: Any, k8s_real_node: Any, chp: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[HubWorld, Path, Replica]]:
    """The hub with ada and bo of team lab, the team volume, and the controller."""
    images = {n: import_built_image(k8s_real_node, n) for n in (SESSION_IMAGE, JOB_IMAGE)}
    tmp = tmp_path_factory.mktemp("memberfiles")
    shared = tmp / "shared" / TEAM
    shared.mkdir(parents=True)  # root's, as an export's root is; the controller prepares it
    reachable_by_all(shared)  # the controller acts as members, who pass through to it
    data = teams_data(secrets.token_hex(3), k8s_real_node, images, shared)
    with running_hub(
        k8s_cluster,
        chp,
        tmp,
        data,
        {ADA: TEAM, BO: TEAM},
        hub_ip=k8s_real_node.gateway,
        pods_config=PODS_CONFIG,
        extra_env={"TRAINHUB_IDLE_STOP_MINUTES": "0"},
    ) as world:
        teams = parse_teams(data)
        ns = teams.controller.namespace  # type: ignore[union-attr]
        teams_file = tmp / "controller-teams.yaml"
        teams_file.write_text(teams_config(teams, ns)["data"]["teams.yaml"])
        kubeconfig = controller_kubeconfig(
            world.api, Path(k8s_cluster.kubeconfig), ns, tmp / "controller.kubeconfig"
        )
        replica = Replica(teams_file, kubeconfig, "only", tmp / "controller.log", AS_DEPLOYED)
        try:
            yield world, shared, replica
        finally:
            replica.kill()


def server_log(world: HubWorld, user: str) -> str:
    """The end of the user's session server's log (what a 500 left there)."""
    [pod] = session_pods(world, user)
    return client.CoreV1Api(world.api).read_namespaced_pod_log(
        pod.metadata.name, pod.metadata.namespace, tail_lines=80
    )


def spawn(world: HubWorld, user: str) -> str:
    token = world.hub.user_token(user)
    r = world.hub.api(
        "POST",
        f"/users/{user}/server",
        token=token,
        json={"profile": f"{TEAM}.{POOL}", "image": SESSION_IMAGE, "gpus": "0"},
    )
    assert r.status_code in (201, 202), r.text
    return token


def kernel(world: HubWorld, user: str, token: str, code: str) -> Any:
    """What ``code`` prints (one JSON document), run in the user's session."""
    return json.loads(run_in_kernel(world, token, f"/user/{user}", textwrap.dedent(code)))


# Each attempt of bo's on ada's job from bo's kernel: the file system as bo, the API with bo's
# own token (the session pod's), and what each answered.
BO_TRIES = """
import json, os
from kubernetes import client, config
config.load_incluster_config()
api = client.ApiClient()
batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
jobdir, ns, job_id, ada_id = {jobdir!r}, {ns!r}, {job_id!r}, {ada_id}
out = {{"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}}

def attempt(name, call):
    try:
        call()
        out[name] = "done"
    except PermissionError:
        out[name] = "EACCES"
    except client.ApiException as e:
        out[name] = [e.status, e.body]

attempt("list", lambda: os.listdir(jobdir))
attempt("read", lambda: open(os.path.join(jobdir, "spec.json")).read())
attempt("write", lambda: open(os.path.join(jobdir, "events.jsonl"), "a").write("forged\\n"))
attempt("delete job", lambda: batch.delete_namespaced_job(job_id, ns))
pod = core.list_namespaced_pod(ns, label_selector="trainhub.io/job-id=" + job_id).items[0]
attempt("pod log", lambda: core.read_namespaced_pod_log(pod.metadata.name, ns))
job = api.sanitize_for_serialization(batch.read_namespaced_job(job_id, ns))
job["metadata"] = {{"name": "as-ada-" + os.urandom(3).hex(),
                    "labels": {{**job["metadata"]["labels"], "trainhub.io/user": "bo"}}}}
for key in ("selector", "manualSelector"):
    job["spec"].pop(key, None)
job["spec"]["template"]["metadata"]["labels"] = {{"trainhub.io/job-id": job["metadata"]["name"]}}
job["spec"]["template"]["spec"]["securityContext"].update(runAsUser=ada_id, runAsGroup=ada_id)
attempt("run as ada", lambda: batch.create_namespaced_job(ns, job))
print(json.dumps(out))
"""


def test_a_members_job_and_its_files_are_theirs_alone_until_shared_then_read_only(
    members: tuple[HubWorld, Path, Replica], k8s_cluster: Any, tmp_path: Path
) -> None:
    world, shared, replica = members
    ns = world.namespaces[TEAM]
    tokens = {user: spawn(world, user) for user in (ADA, BO)}
    for user in (ADA, BO):
        world.hub.wait_ready(user, timeout=300)
    ids = {
        user: kernel(world, user, tokens[user], "import os, json; print(json.dumps(os.getuid()))")
        for user in (ADA, BO)
    }
    assert ids == {ADA: FIRST_ID, BO: FIRST_ID + 1}  # given by the hub, in turn
    for pod in session_pods(world, ADA) + session_pods(world, BO):
        assert pod.spec.security_context.fs_group is None  # no group hands files around

    # ada's job, submitted through her session's REST API, runs on the node as ada.
    jobs = f"/user/{ADA}/trainhub/api/jobs"
    body = {"type": "file", "format": "text", "content": WORK.format(release=str(shared / RELEASE))}
    saved = through_proxy(world, tokens[ADA], f"/user/{ADA}/api/contents/work.py", "PUT", json=body)
    assert saved.status_code in (200, 201), saved.text
    spec = {
        "name": "mine",
        "source": {"path": "work.py"},
        "image": JOB_IMAGE,
        "resources": {"workers": 1, "processes_per_worker": 1, "cpu": 0.5, "memory": "1Gi"},
    }
    made = through_proxy(world, tokens[ADA], jobs, "POST", json=spec)
    assert made.status_code == 201, (made.text, server_log(world, ADA))
    job_id = made.json()["id"]
    jobdir = shared / "jobs" / job_id

    def state() -> str:
        return through_proxy(world, tokens[ADA], f"{jobs}/{job_id}").json()["state"]

    wait_for(f"{job_id} running", lambda: state() == "running", timeout=300)
    job = client.BatchV1Api(world.api).read_namespaced_job(job_id, ns)
    assert job.spec.template.spec.security_context.run_as_user == FIRST_ID

    # bo: trainhub answers as for no job; the file system and the API refuse bo's own tries.
    mine = through_proxy(world, tokens[BO], f"/user/{BO}/trainhub/api/jobs/{job_id}")
    assert mine.status_code == 404, mine.text
    tries = BO_TRIES.format(jobdir=str(jobdir), ns=ns, job_id=job_id, ada_id=FIRST_ID)
    tried = kernel(world, BO, tokens[BO], tries)
    assert (tried["uid"], tried["gid"]) == (FIRST_ID + 1, FIRST_ID + 1), tried
    assert tried["list"] == tried["read"] == tried["write"] == "EACCES", tried
    assert (
        tried["delete job"][0] == 403
        and "belongs to trainhub.io/user=ada" in tried["delete job"][1]
    ), tried
    assert tried["pod log"][0] == 403, tried  # no session reads pods' logs: a job's are its own
    assert tried["run as ada"][0] == 403, tried
    assert f"runAsUser and runAsGroup {FIRST_ID + 1}" in tried["run as ada"][1], tried
    if (binary := kubectl()) is not None:  # kubectl with bo's own token, from outside
        bo_config = service_account_kubeconfig(
            Path(k8s_cluster.kubeconfig),
            client.CoreV1Api(world.api),
            ns,
            session_account(BO),
            tmp_path / "bo.kubeconfig",
        )
        done = subprocess.run(
            [binary, f"--kubeconfig={bo_config}", "-n", ns, "delete", "job", job_id],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0 and "belongs to trainhub.io/user=ada" in done.stderr, done

    # Shared: bo reads it, and writes nothing.
    shared_now = through_proxy(
        world, tokens[ADA], f"{jobs}/{job_id}", "PATCH", json={"shared": "team"}
    )
    assert shared_now.status_code == 200, shared_now.text
    seen = through_proxy(world, tokens[BO], f"/user/{BO}/trainhub/api/jobs/{job_id}")
    assert seen.status_code == 200 and seen.json()["user"] == ADA, seen.text
    tried = kernel(world, BO, tokens[BO], tries)
    assert tried["list"] == tried["read"] == "done", tried
    assert tried["write"] == "EACCES", tried

    (shared / RELEASE).write_text("")
    wait_for(f"{job_id} succeeded", lambda: state() == "succeeded", timeout=240)
    # Everything there is ada's: her session's submit, her pods' files, and what the controller
    # recorded (states, events, the verdict) as ada.
    owners = {ownership.owner_of(p).user for p in [jobdir, *jobdir.rglob("*")]}
    assert owners == {FIRST_ID}, owners
    events = [json.loads(line) for line in (jobdir / "events.jsonl").read_text().splitlines()]
    states = [e["state"] for e in events if e["type"] == "state"]
    assert states[-1] == "succeeded", states
    assert replica.proc.poll() is None

    # Private again: closed to bo, whose team's usage still counts it, from the row the
    # controller kept (as itself, readable by the team) of a job bo may not read.
    closed = through_proxy(
        world, tokens[ADA], f"{jobs}/{job_id}", "PATCH", json={"shared": "private"}
    )
    assert closed.status_code == 200, closed.text
    listed = kernel(
        world,
        BO,
        tokens[BO],
        f"""
        import json, os
        try:
            os.listdir({str(jobdir)!r})
            print(json.dumps("done"))
        except PermissionError:
            print(json.dumps("EACCES"))
        """,
    )
    assert listed == "EACCES"
    row = shared / ".trainhub" / "usage" / f"{job_id}.json"
    assert ownership.owner_of(row).user == 0 and row.stat().st_mode & 0o004
    assert json.loads(row.read_text())["user"] == ADA
    panel = through_proxy(world, tokens[BO], f"/user/{BO}/trainhub/api/usage/panel").json()
    assert panel["ended_30d"] == 1, panel  # ada's, though bo reads nothing of it

    for user in (ADA, BO):
        r = world.hub.api("DELETE", f"/users/{user}/server", token=tokens[user])
        assert r.status_code in (202, 204), r.text
    wait_for(
        "the sessions to go",
        lambda: not session_pods(world, ADA) + session_pods(world, BO),
        timeout=180,
    )
