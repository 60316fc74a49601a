"""Jobs for real on the real node: the example notebook as an Indexed Job of 2 workers, queued
by Kueue, its pods running torchrun in the curated pytorch-cpu image under Pod Security
``restricted`` and rendezvousing over the job's headless Service, its files on a
PersistentVolume bound to the team's claim; and recovery as on the local backend: a killed
pod's job is retried by trainhub from its latest checkpoint, a preempted one saves on SIGTERM
and resumes from that save when Kueue readmits it, an OOM kill and a code error get their own
verdicts, and a pod stopped by the kubelet exits 143, which the Job's podFailurePolicy ignores.

The front door (the REST API's server, JobService) runs as root here: each job directory is
handed to the pods' user 1000 as soon as it is submitted (its bundle and spec are private to
their owner), and the test runs with umask 000 so that what root writes later stays writable
for the pods, as the notebook server (user 1000 as well) leaves them in a deployment. The
image comes from ``images/build.sh`` (the test command builds it first); it is imported into
the node once per session (about 4 minutes: ~7 GB).
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch

from benchmarks.log_latency import JupyterServer
from tests.fixtures.k8s import _cluster_module
from tests.k8s.test_admin_apply import apply_teams
from tests.k8s.test_backend import Team, wait_for
from trainhub.jobs.states import FailureClass, JobState
from trainhub.teams import parse_teams

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_ddp.ipynb"
RUN_AS = 1000
# The example, small: 40 steps, checkpoints after steps 19 and 39.
QUICK = {"epochs": 1, "steps_per_epoch": 40, "batch_size": 32, "hidden": 16}
# Long enough to be interrupted: 80 steps of at least 0.2 s each.
SLOW = {**QUICK, "epochs": 2, "step_delay": 0.2}


# --- the image and the team ---------------------------------------------------------------------
def ctr(node: Any, *args: str) -> str:
    """containerd's own client on the node's socket, in the namespace the kubelet uses."""
    endpoint = _cluster_module().containerd_endpoint(node.cluster_dir)
    where = ["--address", endpoint["address"], "--namespace", endpoint["namespace"]]
    return subprocess.run(
        ["ctr", *where, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def built_image(name: str) -> dict[str, Any]:
    """images/build.sh's index entry of a curated image (skips when it is not built)."""
    entry = _cluster_module().curated_image(name)
    if entry is None:
        index_file = _cluster_module().curated_images_index()
        pytest.skip(f"{name} is not built ({index_file}); run: bash images/build.sh")
    return entry


def import_built_image(node: Any, name: str) -> str:
    """A curated image in the node's containerd; its reference. The store outlives nodes
    (cluster/node.py, store_dir), so this imports only what changed since the last node."""
    entry = built_image(name)
    started = time.monotonic()
    _cluster_module().import_image(node.cluster_dir, entry["archive"])
    print(
        f"{entry['reference']} in the node in {time.monotonic() - started:.0f} s", file=sys.stderr
    )
    return entry["reference"]


@pytest.fixture(scope="module")
def pytorch_image(k8s_real_node: Any) -> str:
    """The curated pytorch-cpu image, imported into the node's containerd (once per node)."""
    return import_built_image(k8s_real_node, "pytorch-cpu")


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


class RealTeam(Team):
    """A team whose one pool is the real node, with the example notebook in its workspace."""

    def __init__(self, k8s_namespace: Any, node: Any, image: str, tmp: Path, **team_extra: Any):
        ns = k8s_namespace.name
        self.data = {
            "pools": [
                {
                    "name": f"{ns}-real",
                    "node_labels": {"type": node.labels["type"]},
                    "gpus_per_node": 2,
                    "tolerations": [node.toleration],
                }
            ],
            "images": [{"name": "pytorch-cpu", "image": image}],
            "teams": [
                {
                    "name": ns,
                    "groups": [ns],
                    "namespace": ns,
                    "quota": {f"{ns}-real": {"gpus": 2, "cpu": "2", "memory": "6Gi"}},
                    "images": ["pytorch-cpu"],
                    "shared_volume": {"claim": "shared", "mount_path": str(tmp / ns)},
                    **team_extra,
                }
            ],
        }
        self.data.update(self.more_data(ns))
        teams = parse_teams(self.data)
        apply_teams(k8s_namespace, teams)
        shared = tmp / ns
        shared.mkdir(mode=0o777)
        os.chown(shared, RUN_AS, RUN_AS)  # the volume is the pods' user's: hostPath gets no fsGroup
        super().__init__(k8s_namespace, ns, teams, tmp)
        self.node, self.tmp = node, tmp
        self.workspace = tmp / "workspace"
        shutil.copy(EXAMPLE, self.workspace / EXAMPLE.name)
        self.teams_file = tmp / "teams.yaml"
        self.teams_file.write_text(yaml.safe_dump(self.data))
        self.env = {
            "TRAINHUB_BACKEND": "kubernetes",
            "TRAINHUB_TEAMS_FILE": str(self.teams_file),
            "TRAINHUB_TEAM": ns,
            "KUBECONFIG": str(k8s_namespace.kubeconfig),
            "TRAINHUB_WORKSPACE": str(self.workspace),
        }

    def more_data(self, ns: str) -> dict[str, Any]:
        """What a variant adds to the teams file (test_real_controller.py: a controller)."""
        return {}

    def spec(self, params: dict[str, Any], **resources: Any) -> dict[str, Any]:
        retry = resources.pop("retry", None)
        return {
            "name": resources.pop("name", "ddp"),
            "source": {"path": EXAMPLE.name},
            "parameters": params,
            "team": self.ns,
            "priority": resources.pop("priority", "normal"),
            "resources": {"workers": 2, "cpu": 0.25, "memory": "1500Mi", **resources},
            **({"retry": retry} if retry else {}),
        }

    user = "ada"  # the REST test's server serves its own account's jobs

    def submit_spec(self, spec: dict[str, Any]) -> str:
        job_id = self.service.submit(spec, user=self.user).id
        self.hand_over(job_id)
        return job_id

    def hand_over(self, job_id: str) -> None:
        """The job directory to the pods' user, before its pods start (seconds away)."""
        root = self.backend.jobs_root / job_id
        for path in [root, *root.rglob("*")]:
            os.chown(path, RUN_AS, RUN_AS, follow_symlinks=False)

    def script_spec(self, path: str, **resources: Any) -> dict[str, Any]:
        spec = self.spec({}, **resources)
        del spec["parameters"]
        return {**spec, "source": {"path": path}}

    def events(self, job_id: str) -> list[dict[str, Any]]:
        return self.service.events(job_id, user=self.user)[0]

    def until(self, job_id: str, what: str, test: Any, timeout: float = 240) -> Any:
        """Reconcile (as the server does every few seconds) until ``test(described)``."""

        def check() -> Any:
            self.backend.reconcile()
            described = self.service.describe(job_id, user=self.user)
            return described if test(described) else None

        return wait_for(f"{job_id}: {what}", check, timeout)

    def ended(self, job_id: str, timeout: float = 300) -> Any:
        """Once reconcile has recorded the job's end (a read may say "failed" a moment before
        reconcile decides that the attempt is retried)."""

        def recorded(described: Any) -> bool:
            states = [e["state"] for e in self.events(job_id) if e["type"] == "state"]
            return described.state.terminal and states[-1] == described.state.value

        return self.until(job_id, "an end", recorded, timeout)

    def cli(self, *args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "trainhub.cli", *args],
            env={**os.environ, **self.env},
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    def rank_log(self, job_id: str, rank: int) -> str:
        data, _ = self.service.log(job_id, user=self.user, rank=rank, offset=0, length=1 << 20)
        return data.decode(errors="replace")

    def scalar_steps(self, job_id: str, name: str) -> list[int]:
        records, _ = self.service.metrics(job_id, "scalars", user=self.user)
        return [r["step"] for r in records if r["name"] == name]

    def checkpoints_made(self, job_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events(job_id) if e["type"] == "checkpoint"]

    def kill_worker_once_saved(self, job_id: str, worker: int) -> None:
        """Once both workers run and the job saved its first checkpoint, SIGKILL to
        ``worker``'s container."""
        running_pods(self, job_id, 2)
        self.until(job_id, "its first checkpoint", lambda d: self.checkpoints_made(job_id), 240)
        index = "batch.kubernetes.io/job-completion-index"
        (victim,) = [p for p in self.pods(job_id) if p.metadata.annotations[index] == str(worker)]
        self.kill_container(victim)

    def kill_container(self, pod: Any) -> None:
        """SIGKILL to the container's first process, through the node's containerd: the pod
        dies as on a crash, without the kubelet being asked."""
        container = pod.status.container_statuses[0].container_id.split("://", 1)[1]
        ctr(self.node, "tasks", "kill", "--signal", "SIGKILL", container)


@pytest.fixture
def real_team(
    k8s_namespace: Any, k8s_real_node: Any, pytorch_image: str, tmp_path: Path, open_umask: None
) -> Iterator[RealTeam]:
    team = RealTeam(k8s_namespace, k8s_real_node, pytorch_image, tmp_path)
    yield team
    team.cleanup()


class PodExits:
    """Every container termination of the namespace's pods, as a watch sees them (a pod the
    Job controller is done with may be gone before a poll would see how it ended)."""

    def __init__(self, api: Any, ns: str):
        self.seen: list[tuple[str, int, str]] = []  # (pod, exit code, reason)
        self._watch = watch.Watch()
        self._stopped = threading.Event()
        core = client.CoreV1Api(api)
        self._thread = threading.Thread(
            target=self._run, args=(core, ns), name="pod-exits", daemon=True
        )
        self._thread.start()

    def _run(self, core: Any, ns: str) -> None:
        for pod in resumed_watch(self._watch, self._stopped, core.list_namespaced_pod, ns):
            for cs in pod.status.container_statuses or []:
                term = cs.state.terminated if cs.state else None
                entry = term and (pod.metadata.name, term.exit_code, term.reason or "")
                if entry and entry not in self.seen:
                    self.seen.append(entry)

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()


def resumed_watch(
    w: watch.Watch, stopped: threading.Event, list_call: Any, *args: Any, seconds: float = 600
) -> Iterator[Any]:
    """The objects a watch sees for ``seconds``, across streams the API server or a proxy ends
    early ("Response ended prematurely"): each resumes from the last resourceVersion seen, and
    one the server no longer holds (410 Gone) starts over from a fresh list."""
    from urllib3.exceptions import ProtocolError

    deadline = time.monotonic() + seconds
    version: str | None = None
    while not stopped.is_set() and (left := deadline - time.monotonic()) > 0:
        since = {"resource_version": version} if version else {}
        try:
            for event in w.stream(list_call, *args, timeout_seconds=int(left) + 1, **since):
                version = event["object"].metadata.resource_version
                yield event["object"]
        except ProtocolError:
            continue  # cut off: resume where it was
        except client.ApiException as e:
            if e.status != 410:
                raise
            version = None


def test_a_pod_watch_resumes_from_the_last_version_when_its_stream_ends_early() -> None:
    from types import SimpleNamespace

    from urllib3.exceptions import ProtocolError

    def pod(version: str) -> dict[str, Any]:
        return {"object": SimpleNamespace(metadata=SimpleNamespace(resource_version=version))}

    class CutShort:
        """The first stream ends early, the second after a 410, the third ends on time."""

        def __init__(self) -> None:
            self.asked: list[str | None] = []

        def stream(self, call: Any, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
            self.asked.append(kwargs.get("resource_version"))
            if len(self.asked) == 1:
                yield pod("5")
                yield pod("6")
                raise ProtocolError("Response ended prematurely")
            if len(self.asked) == 2:
                yield pod("7")
                raise client.ApiException(status=410, reason="Gone")
            yield pod("9")
            stopped.set()

    stopped = threading.Event()
    w = CutShort()
    seen = [p.metadata.resource_version for p in resumed_watch(w, stopped, None)]  # type: ignore[arg-type]
    assert seen == ["5", "6", "7", "9"]
    assert w.asked == [None, "6", None]  # resumed after the cut; listed afresh after the 410


def running_pods(team: RealTeam, job_id: str, count: int) -> list[Any]:
    def running() -> list[Any] | None:
        pods = [p for p in team.pods(job_id) if p.status.phase == "Running"]
        return pods if len(pods) == count else None

    return wait_for(f"{count} pods of {job_id} Running", running, timeout=240)


# --- a distributed job ----------------------------------------------------------------------------
def test_the_example_runs_as_two_workers_on_the_real_node_and_is_served_by_cli_and_rest(
    real_team: RealTeam, k8s_real_node: Any, pytorch_image: str
) -> None:
    t = real_team
    t.user = getpass.getuser()  # whose jobs a personal server serves
    home = t.tmp / "server-home"
    home.mkdir()
    server = JupyterServer(home, t.workspace, reconcile_interval=1.0)
    server.env_overrides = t.env
    with server:
        body = json.dumps(t.spec(QUICK, gpus_per_worker=1)).encode()
        request = urllib.request.Request(
            server.base + "trainhub/api/jobs",
            data=body,
            method="POST",
            headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            job_id = json.loads(response.read())["id"]
        t.hand_over(job_id)

        # The Indexed Job in the team's namespace, admitted by Kueue onto the real node.
        job = t.backend.batch.read_namespaced_job(job_id, t.ns)
        assert (job.spec.completion_mode, job.spec.completions) == ("Indexed", 2)
        assert job.metadata.labels["kueue.x-k8s.io/queue-name"] == t.backend.queue
        pods = running_pods(t, job_id, 2)
        # The rendering (and Kueue's injection) reaches the pods: restricted namespace, the
        # curated image, the job's code from the shared volume only (no hostPath in a pod).
        ns = client.CoreV1Api(t.api).read_namespace(t.ns)
        assert ns.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"
        for pod in pods:
            assert pod.spec.node_name == k8s_real_node.name
            assert pod.spec.containers[0].image == pytorch_image
            assert all(v.host_path is None for v in pod.spec.volumes)
            assert pod.spec.security_context.run_as_user == RUN_AS
        workloads = client.CustomObjectsApi(t.api).list_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", t.ns, "workloads"
        )["items"]
        (workload,) = workloads
        assert any(
            c["type"] == "Admitted" and c["status"] == "True"
            for c in workload["status"]["conditions"]
        )
        # While the pods run, a rank's log comes from the kubelet (pods/log).
        live = wait_for(
            "a live pod log",
            lambda: (got := t.backend.live_log(job_id, 1, 0, 1 << 16)) and got[0] and got,
            timeout=120,
        )
        (worker1,) = [p for p in pods if p.metadata.name.startswith(f"{job_id}-1-")]
        pod_log = client.CoreV1Api(t.api).read_namespaced_pod_log(worker1.metadata.name, t.ns)
        assert pod_log.startswith(live[0].decode()) and "[trainhub] running torchrun" in pod_log

        done = wait_for(
            f"{job_id} ended (the server reconciles)",
            lambda: (
                (j := server.get(f"trainhub/api/jobs/{job_id}"))["state"]
                in ("succeeded", "failed", "cancelled")
                and j
            ),
            timeout=300,
        )
        logs = [t.rank_log(job_id, r) for r in (0, 1)]
        assert done["state"] == "succeeded", (done.get("verdict"), logs)

        # The same answers as on the local backend, from the job directory on the volume.
        for rank in (0, 1):
            log = server.get(f"trainhub/api/jobs/{job_id}/logs/{rank}?offset=0")["text"]
            assert f"rank {rank} of 2 on cpu" in log
            assert "done: validation accuracy" in log
            assert log == t.cli("logs", job_id, "--rank", str(rank))
        scalars = server.get(f"trainhub/api/jobs/{job_id}/metrics/scalars")["records"]
        assert [r["step"] for r in scalars if r["name"] == "loss"] == [0, 10, 20, 30]
        assert [r["step"] for r in scalars if r["name"] == "val_accuracy"] == [19, 39]
        # Each pod's first process sampled its GPU (NVML in the pod over the device plugin's
        # fake) and its rank: worker w's only GPU is the job's GPU w, a device of the node's.
        fleet = dict(
            line.split("=", 1) for line in k8s_real_node.nvml_state.read_text().splitlines()
        )
        gpu = server.get(f"trainhub/api/jobs/{job_id}/metrics/gpu")["records"]
        uuid_of = {r["gpu"]: r["uuid"] for r in gpu}
        assert sorted(uuid_of) == [0, 1] and len(set(uuid_of.values())) == 2, gpu
        assert set(uuid_of.values()) <= {v for k, v in fleet.items() if k.endswith(".uuid")}
        system = server.get(f"trainhub/api/jobs/{job_id}/metrics/system")["records"]
        assert {r["rank"] for r in system if r["rank"] is not None} == {0, 1}, system
        hosts = {r["host"] for r in system if r["rank"] is None}
        assert hosts == {p.spec.hostname for p in pods} == {f"{job_id}-0", f"{job_id}-1"}
        listed = server.get(f"trainhub/api/jobs/{job_id}/checkpoints")["checkpoints"]
        steps = [c["step"] for c in listed]
        assert steps == [19, 39]
        cli_steps = [c["step"] for c in json.loads(t.cli("checkpoints", job_id, "--json"))]
        assert cli_steps == steps

        # The lineage keeps the image the pods really ran: each pod's imageID, one digest that
        # the node's containerd holds for the curated image's reference.
        ran = server.get(f"trainhub/api/jobs/{job_id}")["lineage"]["ran_image"]
        ended = {p.metadata.name: p.status.container_statuses[0].image_id for p in t.pods(job_id)}
        assert ran["pods"] == ended and set(ended.values()) == {ran["image_id"]}, ran
        digest = ran["image_id"].rsplit("@", 1)[-1]  # repo@sha256:… or the image's own id
        assert digest.startswith("sha256:"), ran
        images = [line.split() for line in ctr(k8s_real_node, "images", "ls").splitlines()[1:]]
        manifest_of = {row[0]: row[2] for row in images}
        assert manifest_of[pytorch_image] in {
            row[2] for row in images if digest in (row[0].rsplit("@", 1)[-1], row[2])
        }, (digest, images)
    # Written by the pods' user, on the PersistentVolume bound to the team's claim.
    claim = client.CoreV1Api(t.api).read_namespaced_persistent_volume_claim("shared", t.ns)
    assert claim.status.phase == "Bound" and claim.spec.volume_name == f"{t.ns}-shared"
    jobdir = t.backend.jobs_root / job_id
    assert (jobdir / "checkpoints").stat().st_uid == RUN_AS
    assert (jobdir / "logs" / "rank-1.log").stat().st_uid == RUN_AS


# --- recovery -------------------------------------------------------------------------------------
def test_a_killed_pod_gives_an_infrastructure_verdict_and_the_retry_resumes_and_succeeds(
    real_team: RealTeam,
) -> None:
    t = real_team
    retry = {"infrastructure": 1, "backoff_seconds": 1}
    job_id = t.submit_spec(t.spec(SLOW, retry=retry))
    t.kill_worker_once_saved(job_id, worker=1)

    done = t.ended(job_id)
    events = t.events(job_id)
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(job_id, 0)[-3000:])
    assert done.attempt == 1 and done.retries == {"infrastructure": 1}
    (verdict,) = [e for e in events if e["type"] == "verdict"]
    assert verdict["failure_class"] == FailureClass.INFRASTRUCTURE.value and verdict["retriable"]
    assert verdict["reason"] == "worker 1 was killed by SIGKILL", verdict
    (retry_event,) = [e for e in events if e["type"] == "retry"]
    assert retry_event["attempt"] == 1 and retry_event["backoff_seconds"] == 1.0
    assert retry_event["resume_step"] >= 19
    states = [(e["state"], e.get("attempt")) for e in events if e["type"] == "state"]
    assert ("retrying", 1) in states and states[-1][0] == "succeeded"
    # The next attempt's pods resumed from the job's latest checkpoint (worker 0 may have
    # saved one more on its way out), named by TRAINHUB_RESUME_FROM.
    job = t.backend.batch.read_namespaced_job(job_id, t.ns)
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert env["TRAINHUB_ATTEMPT"] == "1"
    resumed = int(Path(env["TRAINHUB_RESUME_FROM"]).name)
    assert Path(env["TRAINHUB_RESUME_FROM"]).parent == t.backend.jobs_root / job_id / "checkpoints"
    assert resumed >= retry_event["resume_step"]
    log = t.rank_log(job_id, 0)
    assert f"resumed from step {resumed}" in log
    assert "rank 0/2, attempt 1" in log


def test_preemption_saves_on_sigterm_and_the_readmitted_job_resumes_from_that_save(
    real_team: RealTeam,
) -> None:
    t = real_team
    exits = PodExits(t.api, t.ns)
    try:
        low = t.submit_spec(t.spec(SLOW, gpus_per_worker=1, priority="low", name="low"))
        running_pods(t, low, 2)
        # Past the checkpoint of step 19, so that the stop has something new to save (a stop
        # right after that save rightly keeps nothing more: seen once under load).
        t.until(
            low,
            "step 20 trained",
            lambda d: max(t.scalar_steps(low, "loss"), default=-1) >= 20,
            240,
        )
        high = t.submit_spec(
            t.spec(QUICK, gpus_per_worker=1, workers=1, priority="high", name="high")
        )
        t.until(low, "preempted", lambda d: any(e["type"] == "preempted" for e in t.events(low)))
        assert t.ended(high).state == JobState.SUCCEEDED
        done = t.ended(low)
    finally:
        exits.stop()
    events = t.events(low)
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(low, 0)[-3000:])
    assert done.attempt == 0 and done.retries.get("preempted", 0) >= 1
    stops = [e for e in events if e["type"] == "stop_requested"]
    assert 0 in {e["rank"] for e in stops} and {e["signal"] for e in stops} == {"SIGTERM"}
    # The save made on SIGTERM is the one synchronous checkpoint; the resumed run starts there.
    (saved,) = [e for e in t.checkpoints_made(low) if not e["async_"]]
    log = t.rank_log(low, 0)
    assert f"resumed from step {saved['step']}" in log
    # The kubelet stopped the preempted pods; they exited 143, which the Job ignores.
    low_pods = [(name, code) for name, code, _ in exits.seen if name.startswith(f"{low}-")]
    assert (f"{low}-0", 143) in [(n.rsplit("-", 1)[0], c) for n, c in low_pods], low_pods


def test_a_pod_deleted_by_the_kubelet_exits_143_and_its_replacement_resumes(
    real_team: RealTeam,
) -> None:
    """The podFailurePolicy's exit-143 rule on a real kubelet: a pod stopped from outside is
    not the job's failure; the Job controller replaces it and nothing is counted."""
    t = real_team
    exits = PodExits(t.api, t.ns)
    try:
        job_id = t.submit_spec(t.spec(SLOW, workers=1))
        (pod,) = running_pods(t, job_id, 1)
        # Past the checkpoint of step 19, so that the stop has something new to save.
        t.until(
            job_id,
            "step 20 trained",
            lambda d: max(t.scalar_steps(job_id, "loss"), default=-1) >= 20,
        )
        client.CoreV1Api(t.api).delete_namespaced_pod(pod.metadata.name, t.ns)
        done = t.ended(job_id)
    finally:
        exits.stop()
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(job_id, 0)[-3000:])
    assert (pod.metadata.name, 143, "Error") in exits.seen, exits.seen
    job = t.backend.batch.read_namespaced_job(job_id, t.ns)
    assert job.status.failed in (None, 0) and job.status.succeeded == 1
    assert done.attempt == 0 and not [e for e in t.events(job_id) if e["type"] == "retry"]
    (saved,) = [e for e in t.checkpoints_made(job_id) if not e["async_"]]
    assert f"resumed from step {saved['step']}" in t.rank_log(job_id, 0)


def test_an_oom_kill_by_the_memory_limit_and_a_code_error_get_their_own_verdicts(
    real_team: RealTeam,
) -> None:
    t = real_team
    (t.workspace / "hog.py").write_text(
        "import time\nprint('allocating', flush=True)\nheld = b'x' * (3 << 30)\ntime.sleep(60)\n"
    )
    (t.workspace / "broken.py").write_text("print('starting')\nvalue = int('three')\n")
    no_retry = {"infrastructure": 0}
    oom = t.submit_spec(t.script_spec("hog.py", workers=1, memory="1Gi", retry=no_retry))
    code = t.submit_spec(t.script_spec("broken.py", workers=1, memory="1Gi", retry=no_retry))
    oomed, broke = t.ended(oom), t.ended(code)
    assert oomed.state == JobState.FAILED, oomed
    assert oomed.verdict.failure_class == FailureClass.INFRASTRUCTURE
    # The rank the OOM killer took, as torchrun's summary (kept by the pod's first process)
    # names it; the kubelet's OOMKilled says by whom.
    assert oomed.verdict.reason == "rank 0 was killed by the kernel's out-of-memory killer"
    assert (oomed.verdict.rank, oomed.verdict.signal) == (0, "SIGKILL")
    assert broke.state == JobState.FAILED, broke
    assert broke.verdict.failure_class == FailureClass.CODE
    assert broke.verdict.exception == "ValueError" and broke.verdict.line == 2
    assert broke.verdict.reason.startswith("ValueError in broken.py, line 2 (rank 0)")
    # Neither was retried: an OOM with its retries set to 0, a code error never.
    assert oomed.attempt == broke.attempt == 0


def test_tensorboard_scalars_of_a_pods_rank_reach_the_jobs_scalars_once(
    real_team: RealTeam,
) -> None:
    """A SummaryWriter in the job's code, as researchers already write, on a 2-worker job:
    its scalars reach the job's own (charts, compare) through worker 0's pod, each once."""
    t = real_team
    (t.workspace / "tb.py").write_text(
        "import os\n"
        "from torch.utils.tensorboard import SummaryWriter\n"
        "if os.environ['RANK'] == '0':\n"
        "    writer = SummaryWriter()  # runs/<date>_<host>, below the working tree\n"
        "    for step in range(3):\n"
        "        writer.add_scalar('loss/train', 1.0 / (step + 1), step)\n"
        "    writer.close()\n"
    )
    job_id = t.submit_spec(t.script_spec("tb.py", workers=2, retry={"infrastructure": 0}))
    done = t.ended(job_id)
    assert done.state == JobState.SUCCEEDED, (done.verdict, t.rank_log(job_id, 0)[-3000:])
    scalars, _ = t.service.metrics(job_id, "scalars", user=t.user)
    read = [(s["name"], s["step"], s["value"], s["source"]) for s in scalars]
    assert sorted(read) == [
        ("loss/train", 0, 1.0, "tensorboard"),
        ("loss/train", 1, 0.5, "tensorboard"),
        ("loss/train", 2, pytest.approx(1 / 3), "tensorboard"),
    ], read
