"""trainhub's controller at scale on kwok nodes: NAMESPACES team namespaces holding JOBS jobs
in all (per team one admitted and running, the others queued by Kueue behind the team's
quota), the controller as its own process with its ServiceAccount's token. Reported: the time
for its cache to sync, its memory (RSS) and idle CPU once synced, and the latency from a pod's
exit (the pod's end written to the API server) to the job's verdict recorded in its directory,
p50/p95 over every running job, all ended at once, and the reconciles that took (how many, how
long each on average, from the controller's metrics). Peer: none runs the same promises; the
figures are absolute (the issue's goal: p95 <= 2 s at 10,000 jobs across 100 namespaces). One
row for each number of reconcile workers asked for, each on a cluster of its own.

    python benchmarks/controller.py [--namespaces 100] [--jobs 10000] [--workers 1 4]
                                    [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.control_plane import start_or_reuse  # noqa: E402
from benchmarks.log_latency import percentile  # noqa: E402
from benchmarks.report import print_table  # noqa: E402

POOL = "bench-a100"


def teams_data(names: list[str], shared: Path, controller_ns: str) -> dict[str, Any]:
    return {
        "pools": [{"name": POOL, "node_labels": {"trainhub.io/pool": "a100"}, "gpus_per_node": 8}],
        "images": [{"name": "pytorch", "image": "registry.invalid/trainhub/pytorch:1"}],
        "controller": {"namespace": controller_ns},
        "teams": [
            {
                "name": n,
                "groups": [n],
                "namespace": n,
                # room for one job: the others wait in Kueue, as a busy team's do
                "quota": {POOL: {"gpus": 0, "cpu": "0.1", "memory": "256Mi"}},
                "images": ["pytorch"],
                "shared_volume": {"claim": "shared", "mount_path": str(shared / n)},
            }
            for n in names
        ],
    }


def fill(api: Any, teams: Any, team_name: str, count: int) -> None:
    from benchmarks.kueue import new_record
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.jobs.directory import JobDir, write_json_atomic

    team = teams.team(team_name)
    backend = KubernetesBackend(teams, team_name, api_client=api)
    for i in range(count):
        record = new_record(team, f"c-{i:04d}", workers=1, gpus=0, pool=POOL, cpu=0.1)
        spec = record.spec.model_copy(
            update={"resources": record.spec.resources.model_copy(update={"memory": "256Mi"})}
        )
        record = record.model_copy(update={"spec": spec, "created_at": time.time()})
        jobdir = JobDir(record.job_dir).create()
        data = record.spec.model_dump(mode="json")
        data.update(id=record.id, user=record.user)
        write_json_atomic(jobdir.spec, data)
        jobdir.emit("submitted", user=record.user, host="bench", content_hash="")
        backend.submit(record, backend.attempt_placement(record))


def last_state(job_dir: Path) -> dict[str, Any] | None:
    try:
        lines = (job_dir / "events.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return None
    states = [e for e in map(json.loads, lines) if e.get("type") == "state"]
    return states[-1] if states else None


def running_pods(api: Any, namespaces: list[str]) -> dict[str, tuple[str, str, str]]:
    """job id -> (namespace, pod name, job dir) of every running trainhub pod."""
    from kubernetes import client

    core, found = client.CoreV1Api(api), {}
    for ns in namespaces:
        for pod in core.list_namespaced_pod(ns, label_selector="trainhub.io/job-id").items:
            if pod.status.phase == "Running":
                job = pod.metadata.labels["trainhub.io/job-id"]
                found[job] = (ns, pod.metadata.name, job)
    return found


def reconcile_totals(log: Path) -> tuple[float, float]:
    """(count, seconds) of the reconciles the controller made so far, from its /metrics (its
    port is in its log)."""
    import re
    import urllib.request

    port = re.search(r"probes on port (\d+)", log.read_text()).group(1)  # type: ignore[union-attr]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    count = total = 0.0
    for line in text.splitlines():
        if line.startswith("trainhub_controller_reconcile_seconds_count"):
            count += float(line.rsplit(" ", 1)[1])
        elif line.startswith("trainhub_controller_reconcile_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
    return count, total


class JobEnds:
    """When this benchmark first saw each trainhub Job marked failed by the Job controller
    (its FailureTarget or Failed condition), from one watch across the namespaces: what part
    of a pod's exit -> verdict is Kubernetes' own, before trainhub's controller can know."""

    def __init__(self, api: Any):
        import threading

        from kubernetes import client

        self.batch, self.seen = client.BatchV1Api(api), {}  # job id -> time.time()
        self.stop = threading.Event()
        listed = self.batch.list_job_for_all_namespaces(label_selector="trainhub.io/job-id")
        self.version = listed.metadata.resource_version
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from kubernetes import watch

        while not self.stop.is_set():
            w = watch.Watch()
            for event in w.stream(
                self.batch.list_job_for_all_namespaces,
                label_selector="trainhub.io/job-id",
                resource_version=self.version,
                timeout_seconds=30,
            ):
                job = event["object"]
                self.version = job.metadata.resource_version
                failed = any(
                    c.type in ("Failed", "FailureTarget") and c.status == "True"
                    for c in job.status.conditions or []
                )
                if failed:
                    self.seen.setdefault(job.metadata.labels["trainhub.io/job-id"], time.time())
                if self.stop.is_set():
                    break


def run(
    namespaces: int = 100, jobs: int = 10000, kubeconfig: str | None = None, workers: int = 4
) -> list[dict[str, Any]]:
    import psutil
    from kubernetes import client, config

    from tests.fixtures.k8s import shared_claim
    from tests.k8s.test_controller import controller_kubeconfig
    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub.backends.kubernetes.controlplane import CONTROLLER, teams_config
    from trainhub.backends.kubernetes.render import render
    from trainhub.teams import parse_teams

    with tempfile.TemporaryDirectory(prefix="trainhub-controller-bench-") as tmp_name:
        tmp = Path(tmp_name)
        # As Kueue's client here, and as clusters of thousands of jobs set it: at its default
        # 20 requests/s, 100 Jobs ending at once wait seconds to be marked failed (RESULTS.md).
        kube, cluster = start_or_reuse(kubeconfig, tmp, controller_manager_qps=100)
        proc = None
        try:
            api = config.new_client_from_config(config_file=str(kube))
            suffix = os.urandom(2).hex()
            names = [f"cb-{suffix}-{i:03d}" for i in range(namespaces)]
            ctl_ns = f"cb-{suffix}-controller"
            teams = parse_teams(teams_data(names, tmp / "shared", ctl_ns))
            apply_objects(api, render(teams))
            for ns in names:  # the team volume the pods mount
                shared_claim(client.CoreV1Api(api), ns, tmp / "shared" / ns)
            per = [jobs // namespaces + (i < jobs % namespaces) for i in range(namespaces)]
            started = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda a: fill(api, teams, *a), zip(names, per, strict=True)))
            made_s = time.perf_counter() - started
            print(f"{jobs} jobs in {namespaces} namespaces made in {made_s:.0f} s", flush=True)

            def all_running() -> dict[str, tuple[str, str, str]]:
                return running_pods(api, names)

            deadline = time.monotonic() + 900
            while len(running := all_running()) < namespaces and time.monotonic() < deadline:
                time.sleep(5)
            teams_file = tmp / "teams.yaml"
            teams_file.write_text(teams_config(teams, ctl_ns)["data"]["teams.yaml"])
            kc = controller_kubeconfig(api, kube, ctl_ns, tmp / "controller.kubeconfig")
            log = tmp / "controller.log"
            started = time.perf_counter()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "trainhub.cli",
                    "controller",
                    f"--teams={teams_file}",
                    f"--kubeconfig={kc}",
                    "--identity=bench",
                    "--listen=127.0.0.1",
                    "--port=0",
                    f"--workers={workers}",
                ],
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            lease = client.CoordinationV1Api(api)
            while True:  # leading, and every running job's state recorded
                assert proc.poll() is None, log.read_text()[-3000:]
                try:
                    holder = lease.read_namespaced_lease(CONTROLLER, ctl_ns).spec.holder_identity
                except client.ApiException:
                    holder = None
                recorded = [
                    last_state(Path(teams.team(ns).shared_volume.mount_path) / "jobs" / j)
                    for j, (ns, _, _) in running.items()
                ]
                if holder == "bench" and all(s and s["state"] == "running" for s in recorded):
                    break
                time.sleep(0.5)
            synced_s = time.perf_counter() - started
            ps = psutil.Process(proc.pid)
            time.sleep(10)
            rss = ps.memory_info().rss
            cpu0, t0 = sum(ps.cpu_times()[:2]), time.monotonic()
            time.sleep(30)
            idle_cpu = (sum(ps.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)

            core = client.CoreV1Api(api)
            before = reconcile_totals(log)
            marked = JobEnds(api)
            ended: dict[str, float] = {}
            for job, (ns, pod, _) in running.items():
                core.patch_namespaced_pod(
                    pod,
                    ns,
                    {"metadata": {"annotations": {"kwok.trainhub.io/result": "Failed"}}},
                )
                ended[job] = time.time()
            latencies: dict[str, float] = {}
            deadline = time.monotonic() + 300
            while len(latencies) < len(ended) and time.monotonic() < deadline:
                for job, (ns, _, _) in running.items():
                    if job in latencies:
                        continue
                    state = last_state(Path(teams.team(ns).shared_volume.mount_path) / "jobs" / job)
                    # its verdict recorded: the end, or the retry its policy allows
                    if state and state["state"] in ("failed", "retrying"):
                        latencies[job] = state["time"] - ended[job]
                time.sleep(0.1)
            marked.stop.set()
            samples = [v * 1000 for v in latencies.values()]
            k8s = [(marked.seen[j] - ended[j]) * 1000 for j in latencies if j in marked.seen]
            ours = [
                (latencies[j] + ended[j] - marked.seen[j]) * 1000
                for j in latencies
                if j in marked.seen
            ]
            after = reconcile_totals(log)
            reconciles = after[0] - before[0]
            mean_reconcile = (after[1] - before[1]) / max(reconciles, 1)
            return [
                {
                    "jobs": jobs,
                    "namespaces": namespaces,
                    "workers": workers,
                    "cache synced + running recorded s": f"{synced_s:.1f}",
                    "RSS MiB": f"{rss / 2**20:.0f}",
                    "idle CPU %": f"{idle_cpu * 100:.1f}",
                    "exits": f"{len(latencies)}/{len(ended)}",
                    "exit->verdict p50 ms": f"{percentile(samples, 0.5):.0f}",
                    "p95 ms": f"{percentile(samples, 0.95):.0f}",
                    "max ms": f"{max(samples):.0f}",
                    "exit->Job failed p95 ms": f"{percentile(k8s, 0.95):.0f}" if k8s else "-",
                    "Job failed->verdict p95 ms": f"{percentile(ours, 0.95):.0f}" if ours else "-",
                    "reconciles": f"{reconciles:.0f}",
                    "mean reconcile ms": f"{mean_reconcile * 1000:.0f}",
                }
            ]
        finally:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    print("the controller did not stop within 30 s of SIGTERM", flush=True)
                    proc.kill()
                    proc.wait()
            if cluster is not None:
                cluster.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--namespaces", type=int, default=100)
    p.add_argument("--jobs", type=int, default=10000)
    p.add_argument("--kubeconfig")
    p.add_argument("--workers", type=int, nargs="+", default=[4], help="one row for each")
    args = p.parse_args()
    print_table(
        "trainhub controller at scale (kwok nodes)",
        [row for w in args.workers for row in run(args.namespaces, args.jobs, args.kubeconfig, w)],
    )


if __name__ == "__main__":
    main()
