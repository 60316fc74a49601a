"""The researcher's whole path, for real, in Chromium: a user of team ``lab`` logs in to the hub,
chooses a profile, gets JupyterLab from a notebook pod on the real node (the curated ``base``
image), presses Submit as job on the example notebook with two workers, and follows the job in
the Jobs panel while Kueue holds it (another job of the team has one of its two GPUs), while it
runs in ``pytorch-cpu`` pods (both ranks' logs, the metrics) and once it succeeded (its
checkpoints, and a fork from one, which starts a new job). A user of team ``other`` sees none
of it. The session's server extension reaches the API server as any pod does, through the
``kubernetes`` Service (tests/k8s/cluster/apiforward.py). Screenshots of each step stay in the
test's folder.

Then, on the same hub, the team's GPU quota for real, a hub restart and an idle GPU: a session
and a job hold the team's two GPUs, so another member's GPU session is refused with the
sentence; the hub (and its proxy) restarts while both run, and neither notices: the session's
kernel keeps its state, the job's log has every line, some written while the hub was down.
When the session's GPU goes idle, the idle-GPU service's warning reaches its JupyterLab, the
service stops it, and the spawn form says why. (The test hub's fake Prometheus reports each
pod's GPUs busy unless the test says otherwise; a session without a GPU is not watched.)
"""

from __future__ import annotations

import html
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.browser import needs_chromium, visit
from tests.hub.conftest import (
    PASSWORD,
    ROOT,
    HubWorld,
    browser_trouble,
    real_node_pool,
    running_hub,
    wait_for,
)
from tests.hub.test_hub_e2e import spawn_with_form
from tests.hub.test_real_session import execute, session_pods, through_proxy
from tests.k8s.test_real_jobs import RUN_AS, import_built_image

pytestmark = [pytest.mark.timeout(1500), needs_chromium]

RESEARCHER, TEAM = "dee", "lab"
OUTSIDER, OTHER = "eve", "other"
MEMBER = "fay"  # another member of the researcher's team
POOL = "real"
SESSION_IMAGE, JOB_IMAGE = "base", "pytorch-cpu"
# The walk-through's screenshots stay in the test's own folder; scripts/refresh-screenshots.sh
# points this at docs/ to refresh the README's pictures on purpose.
REFRESHED = os.environ.get("TRAINHUB_SCREENSHOTS_DIR")
# Where the pods serve (their IPs on the node's bridge); each user's files are their team's
# shared volume, where job pods read the bundles too.
PODS_CONFIG = """
c.KubeSpawner.cpu_guarantee = 0.25
c.KubeSpawner.mem_guarantee = "512M"
_dirs = {dirs}
def _team_dir(spawner):
    spawner.notebook_dir = _dirs[spawner.user.name]
c.KubeSpawner.pre_spawn_hook = _team_dir
"""
# The holder's work: hold its GPU until cancelled.
HOLD = "import time\nprint('holding a GPU', flush=True)\ntime.sleep(900)\n"
TICKS_DONE = "ticks.done"


def tick_script(done: Path) -> str:
    """A job whose log says when each line was written: "tick <n> <unix time>", every half
    second, until the test has seen what it needs and writes done (on the team's shared
    volume, mounted at the same path in the pod), or for 150 s."""
    return (
        "import os, time\n"
        "for i in range(300):\n"
        "    print(f'tick {i} {time.time():.3f}', flush=True)\n"
        f"    if os.path.exists({str(done)!r}):\n"
        "        break\n"
        "    time.sleep(0.5)\n"
    )


def teams_data(suffix: str, node: Any, images: dict[str, str], shared: Path) -> dict[str, Any]:
    def team(name: str, quota: dict[str, Any], images: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "groups": [name],
            "namespace": f"hub-{name}-{suffix}",
            "quota": {POOL: quota},
            "images": images,
            "session_gpus": [0, 1],
            "shared_volume": {"claim": "shared", "mount_path": str(shared / name)},
        }

    return {
        "pools": [
            real_node_pool(node, POOL),
        ],
        "images": [{"name": n, "image": ref} for n, ref in images.items()],
        "teams": [
            team(TEAM, {"gpus": 2, "cpu": "2", "memory": "8Gi"}, [SESSION_IMAGE, JOB_IMAGE]),
            team(OTHER, {"gpus": 0, "cpu": "1", "memory": "2Gi"}, [SESSION_IMAGE]),
        ],
    }


@pytest.fixture(scope="module")
def path_hub(
    k8s_cluster: Any, k8s_real_node: Any, chp: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HubWorld]:
    images = {name: import_built_image(k8s_real_node, name) for name in (SESSION_IMAGE, JOB_IMAGE)}
    tmp = tmp_path_factory.mktemp("pathhub")
    shared = tmp / "shared"
    for name in (TEAM, OTHER):
        (shared / name / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "train_ddp.ipynb", shared / TEAM / "examples")
    (shared / TEAM / "hold.py").write_text(HOLD)
    (shared / TEAM / "ticks.py").write_text(tick_script(shared / TEAM / TICKS_DONE))
    for path in [shared, *shared.rglob("*")]:
        os.chown(path, RUN_AS, 100)  # hostPath volumes get no fsGroup: the sessions' own
    data = teams_data(secrets.token_hex(3), k8s_real_node, images, shared)
    with running_hub(
        k8s_cluster,
        chp,
        tmp,
        data,
        {RESEARCHER: TEAM, MEMBER: TEAM, OUTSIDER: OTHER},
        hub_ip=k8s_real_node.gateway,
        pods_config=PODS_CONFIG.format(
            dirs=repr(
                {
                    RESEARCHER: str(shared / TEAM),
                    MEMBER: str(shared / TEAM),
                    OUTSIDER: str(shared / OTHER),
                }
            )
        )
        .replace("{", "{{")
        .replace("}", "}}"),
    ) as world:
        world.images = images  # type: ignore[attr-defined]
        world.shared = shared  # type: ignore[attr-defined]
        yield world


def test_the_researchers_path_from_login_to_a_fork_of_their_job(
    path_hub: HubWorld, k8s_real_node: Any, tmp_path: Path
) -> None:
    world, hub = path_hub, path_hub.hub
    # The outsider's session, started meanwhile through the REST API.
    outsider_token = hub.user_token(OUTSIDER)
    r = hub.api(
        "POST",
        f"/users/{OUTSIDER}/server",
        token=outsider_token,
        json={"profile": f"{OTHER}.{POOL}", "image": SESSION_IMAGE, "gpus": "0"},
    )
    assert r.status_code in (201, 202), r.text

    started = time.monotonic()
    seen = visit(
        Path(__file__).with_name("researcher_path.cjs"),
        hub.url,
        RESEARCHER,
        PASSWORD,
        f"{TEAM}.{POOL}",
        SESSION_IMAGE,
        JOB_IMAGE,
        tmp_path,
        timeout=1200,
    )
    print(browser_trouble(seen))
    token = hub.user_token(RESEARCHER)
    pods = [p.metadata.name for p in world.pods(TEAM)]
    assert "error" not in seen, f"{seen.get('error')}\n{seen}\npods: {pods}\n{hub.log_tail()}"
    print(
        f"path: JupyterLab from the pod in {seen['labReadyS']:.0f} s, "
        f"all of it in {time.monotonic() - started:.0f} s"
    )

    # Kueue's sentence while it waited: the holder had one of the team's two GPUs.
    assert seen["waiting"] == (
        f"waiting for 1 nvidia.com/gpu in pool {POOL} in ClusterQueue {TEAM} (1 of 2 in use)"
    ), seen
    job_id = seen["jobId"]
    # Followed while it ran: its logs and its metrics came in before it ended.
    assert seen["statesSeen"] == {"firstLog": "running", "metrics": "running"}, seen
    assert 19 in seen["checkpoints"]
    assert seen["forkHeader"] == f"Fork from step 19 of train-ddp ({job_id})"
    assert f"fork of {job_id} at step 19" in seen["forkText"]

    # The job ran as an Indexed Job of two pods on the real node, in the team's namespace,
    # from the job image, submitted by the session's own server extension.
    ns = world.namespaces[TEAM]
    job = client.BatchV1Api(world.api).read_namespaced_job(job_id, ns)
    assert (job.spec.completion_mode, job.spec.completions) == ("Indexed", 2)
    job_pods = (
        client.CoreV1Api(world.api)
        .list_namespaced_pod(ns, label_selector=f"trainhub.io/job-id={job_id}")
        .items
    )
    assert len(job_pods) == 2
    for pod in job_pods:
        assert pod.spec.node_name == k8s_real_node.name
        assert pod.spec.containers[0].image == world.images[JOB_IMAGE]  # type: ignore[attr-defined]
        assert pod.status.phase == "Succeeded"
    detail = through_proxy(world, token, f"/user/{RESEARCHER}/trainhub/api/jobs/{job_id}").json()
    assert detail["state"] == "succeeded" and detail["user"] == RESEARCHER

    # The other team's user sees none of it.
    hub.wait_ready(OUTSIDER, timeout=300)
    theirs = through_proxy(world, outsider_token, f"/user/{OUTSIDER}/trainhub/api/jobs")
    assert theirs.status_code == 200, theirs.text
    assert theirs.json()["jobs"] == []
    one = through_proxy(world, outsider_token, f"/user/{OUTSIDER}/trainhub/api/jobs/{job_id}")
    assert one.status_code == 404

    for step in seen["steps"] if REFRESHED else ():
        shutil.copy(tmp_path / f"{step}.png", Path(REFRESHED) / f"{step}.png")

    # The fork is not needed to its end: cancelled, and the sessions stopped.
    cancel = through_proxy(
        world,
        token,
        f"/user/{RESEARCHER}/trainhub/api/jobs/{seen['forkId']}/cancel",
        "POST",
        json={"reason": "the test has seen it start"},
    )
    assert cancel.status_code in (200, 202), cancel.text
    for name, tok in ((RESEARCHER, token), (OUTSIDER, outsider_token)):
        assert hub.api("DELETE", f"/users/{name}/server", token=tok).status_code in (202, 204)
    wait_for(
        "the sessions to go",
        lambda: (
            not [
                p
                for p in world.pods(TEAM) + world.pods(OTHER)
                if "hub.jupyter.org/username" in (p.metadata.annotations or {})
            ]
        ),
        timeout=180,
    )


def gpus_in_use(world: HubWorld, team: str) -> str:
    quota = client.CoreV1Api(world.api).read_namespaced_resource_quota(
        "trainhub-quota", world.namespaces[team]
    )
    return (quota.status.used or {}).get("requests.nvidia.com/gpu", "0")


def job_of(world: HubWorld, token: str, job_id: str) -> dict[str, Any]:
    r = through_proxy(world, token, f"/user/{RESEARCHER}/trainhub/api/jobs/{job_id}")
    assert r.status_code == 200, r.text
    return r.json()


def test_the_teams_gpu_quota_and_a_hub_restart_with_a_session_and_a_job_running(
    path_hub: HubWorld,
) -> None:
    world, hub = path_hub, path_hub.hub
    base = f"/user/{RESEARCHER}"
    wait_for("the team's GPUs to be free", lambda: gpus_in_use(world, TEAM) == "0", timeout=180)

    # The researcher's session with one GPU, and a job with the other one.
    token = hub.user_token(RESEARCHER)
    r = hub.api(
        "POST",
        f"/users/{RESEARCHER}/server",
        token=token,
        json={"profile": f"{TEAM}.{POOL}", "image": SESSION_IMAGE, "gpus": "1"},
    )
    assert r.status_code in (201, 202), r.text
    hub.wait_ready(RESEARCHER, timeout=300)
    submitted = through_proxy(
        world,
        token,
        f"{base}/trainhub/api/jobs",
        "POST",
        json={
            "name": "ticks",
            "source": {"path": "ticks.py"},
            "image": JOB_IMAGE,
            "resources": {"workers": 1, "gpus_per_worker": 1, "cpu": 0.25, "memory": "512Mi"},
        },
    )
    assert submitted.status_code == 201, submitted.text
    job_id = submitted.json()["id"]
    wait_for(
        "the job's first ticks",
        lambda: "tick 3 " in rank_log(world, token, job_id),
        timeout=300,
        interval=1,
    )
    assert gpus_in_use(world, TEAM) == "2"

    # Another member's GPU session would pass the team's quota: refused, with the sentence.
    slug = f"{TEAM}.{POOL}"
    refused = spawn_with_form(
        world,
        MEMBER,
        {
            "profile": slug,
            f"profile-option-{slug}--image": SESSION_IMAGE,
            f"profile-option-{slug}--gpus": "1",
        },
    )
    sentence = f"team {TEAM} uses 2 of 2 GPUs; this profile needs 1"
    if sentence not in html.unescape(refused.text):  # a slow refusal: in the progress stream
        events = hub.api("GET", f"/users/{MEMBER}/server/progress").text
        assert sentence in events, refused.text[-2000:]
    assert not session_pods(world, MEMBER)

    # A kernel of the session holds some state; then the hub and its proxy restart.
    [session_pod] = session_pods(world, RESEARCHER)
    kernel = through_proxy(world, token, f"{base}/api/kernels", "POST", json={})
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    execute(world, token, base, kernel_id, "kept = 41")
    down = time.time()
    hub.stop()
    hub.start()
    up = time.time()
    print(f"hub restart: down for {up - down:.1f} s")

    # The session is the same pod and server: its kernel still has its state.
    assert hub.server(RESEARCHER)["ready"]
    [after] = session_pods(world, RESEARCHER)
    assert after.metadata.uid == session_pod.metadata.uid
    assert execute(world, token, base, kernel_id, "print(kept + 1)").strip() == "42"
    # The job ran on while the hub was away, and its log has every line, in order.
    assert job_of(world, token, job_id)["state"] == "running"
    (world.shared / TEAM / TICKS_DONE).write_text("")  # type: ignore[attr-defined]
    wait_for(
        "the job to succeed",
        lambda: job_of(world, token, job_id)["state"] == "succeeded",
        timeout=300,
        interval=2,
    )
    ticks = [
        line.split()[1:3]
        for line in rank_log(world, token, job_id).splitlines()
        if line.startswith("tick ")
    ]
    assert [int(n) for n, _ in ticks] == list(range(len(ticks)))
    assert float(ticks[-1][1]) > up  # it ticked on after the restart, to the file it was told
    assert any(down < float(t) < up for _, t in ticks), (down, up, ticks[-1])

    through_proxy(world, token, f"{base}/api/kernels/{kernel_id}", "DELETE")

    # The session's GPU goes idle: the idle-GPU service's warning reaches its JupyterLab as a
    # notice, the service stops the server, and the spawn form says why.
    world.utilization.by_pod[session_pod.metadata.name] = 1.0

    def warnings() -> list[dict[str, Any]]:
        r = through_proxy(world, token, f"{base}/trainhub/api/notices")
        return [n for n in r.json()["notices"] if n["source"] == "trainhub-idle-gpu"]

    [warning] = wait_for("the idle warning in JupyterLab", warnings, timeout=60, interval=0.2)
    assert warning["level"] == "warning"
    assert f"{RESEARCHER}'s server has used less than 5% of its 1 GPU" in warning["message"]
    wait_for("the idle server to be stopped", lambda: hub.server(RESEARCHER) is None, 120)
    form = hub.login(RESEARCHER).get(f"{hub.url}/hub/spawn/{RESEARCHER}", timeout=60)
    assert "This server was stopped at " in form.text
    assert "its 1 GPU stayed under 5% for 0.1 minutes" in html.unescape(form.text)
    wait_for("the team's GPUs to be free again", lambda: gpus_in_use(world, TEAM) == "0", 180)


def rank_log(world: HubWorld, token: str, job_id: str, rank: int = 0) -> str:
    """A rank's whole log as the session serves it, read chunk by chunk."""
    text, offset = [], 0
    while True:
        r = through_proxy(
            world,
            token,
            f"/user/{RESEARCHER}/trainhub/api/jobs/{job_id}/logs/{rank}",
            params={"offset": offset},
        )
        if r.status_code == 404:  # no line written yet
            return ""
        assert r.status_code == 200, r.text
        chunk = r.json()
        text.append(chunk["text"])
        if chunk["next_offset"] == offset:
            return "".join(text)
        offset = chunk["next_offset"]
