"""The researcher's whole path, for real, in Chromium: a user of team ``lab`` logs in to the hub,
chooses a profile, gets JupyterLab from a notebook pod on the real node (the curated ``base``
image), presses Submit as job on the example notebook with two workers, and follows the job in
the Jobs panel while Kueue holds it (another job of the team has one of its two GPUs), while it
runs in ``pytorch-cpu`` pods (both ranks' logs, the metrics) and once it succeeded (its
checkpoints, and a resume from one, which starts a new job). A user of team ``other`` sees none
of it. The session's server extension reaches the API server as any pod does, through the
``kubernetes`` Service (tests/k8s/cluster/apiforward.py). Screenshots of each step go to docs/.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.hub.conftest import PASSWORD, ROOT, HubWorld, running_hub, wait_for
from tests.hub.test_real_session import through_proxy
from tests.hub.test_spawn_form_browser import PLAYWRIGHT
from tests.k8s.test_real_jobs import RUN_AS, import_built_image

pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.skipif(
        PLAYWRIGHT is None or not shutil.which("chromium") or not shutil.which("node"),
        reason="playwright and Chromium come with scripts/setup-ui.sh",
    ),
]

RESEARCHER, TEAM = "dee", "lab"
OUTSIDER, OTHER = "eve", "other"
POOL = "real"
SESSION_IMAGE, JOB_IMAGE = "base", "pytorch-cpu"
DOCS = ROOT / "docs"
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


def teams_data(suffix: str, node: Any, images: dict[str, str], shared: Path) -> dict[str, Any]:
    def team(name: str, quota: dict[str, Any], images: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "groups": [name],
            "namespace": f"hub-{name}-{suffix}",
            "quota": {POOL: quota},
            "images": images,
            "session_gpus": [0],
            "shared_volume": {"claim": "shared", "mount_path": str(shared / name)},
        }

    return {
        "pools": [
            {
                "name": POOL,
                "node_labels": {"type": node.labels["type"]},
                "gpus_per_node": 2,
                "tolerations": [node.toleration],
                "description": "the real test node",
            }
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
    for path in [shared, *shared.rglob("*")]:
        os.chown(path, RUN_AS, 100)  # hostPath volumes get no fsGroup: the sessions' own
    data = teams_data(secrets.token_hex(3), k8s_real_node, images, shared)
    with running_hub(
        k8s_cluster,
        chp,
        tmp,
        data,
        {RESEARCHER: TEAM, OUTSIDER: OTHER},
        hub_ip=k8s_real_node.gateway,
        pods_config=PODS_CONFIG.format(
            dirs=repr({RESEARCHER: str(shared / TEAM), OUTSIDER: str(shared / OTHER)})
        )
        .replace("{", "{{")
        .replace("}", "}}"),
        extra_env={"TRAINHUB_IDLE_STOP_MINUTES": "0"},
    ) as world:
        world.images = images  # type: ignore[attr-defined]
        yield world


def test_the_researchers_path_from_login_to_a_resumed_job(
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
    out = subprocess.run(
        [
            "node",
            str(Path(__file__).with_name("researcher_path.cjs")),
            str(PLAYWRIGHT),
            hub.url,
            RESEARCHER,
            PASSWORD,
            f"{TEAM}.{POOL}",
            SESSION_IMAGE,
            JOB_IMAGE,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
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
    assert seen["resumeHeader"] == f"Resume from step 19 of train-ddp ({job_id})"
    assert f"resume of {job_id} at step 19" in seen["resumedText"]

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

    for step in seen["steps"]:
        shutil.copy(tmp_path / f"{step}.png", DOCS / f"{step}.png")

    # The resumed job is not needed to its end: cancelled, and the sessions stopped.
    cancel = through_proxy(
        world,
        token,
        f"/user/{RESEARCHER}/trainhub/api/jobs/{seen['resumedId']}/cancel",
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
