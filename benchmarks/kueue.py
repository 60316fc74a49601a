"""Jobs through Kueue on the test control plane (kube-apiserver, scheduler, kwok GPU nodes, Kueue).

(a) submit -> every pod Running: trainhub's KubernetesBackend.submit of a 2-worker job (Kueue
    admits it, then unsuspends it) vs the same Indexed Job manifest created directly, without
    a queue label and not suspended, in a namespace no trainhub policy covers. Alternating;
    medians and their ratio. On kwok GPU nodes by default; with ``--node real`` on the
    cluster's real node (containerd, kubelet, the fake-GPU device plugin): 2 workers of 1 GPU
    each from the curated pytorch-cpu image, whose torchrun runs a bundle that sleeps, so each
    pod is Running when its containers really are; one direct start before the measured ones
    lets the node unpack the image (30 s here), which only a node's first container pays.
(b) ``jobs`` queued jobs across 3 teams in one cohort (1-GPU jobs on t4, 2-GPU jobs on a100,
    pods made to succeed ``run_for`` after they start through kwok's annotation): time until
    every Job is complete, and, sampled every ``sample_every`` s from the Workloads' admissions
    while the queue drains, the most GPUs a team held per pool vs its nominal quota plus what
    it may borrow, and the most the whole cohort held vs the sum of nominal quotas.

The team objects are rendered by trainhub from a teams file written here, and applied with
``trainhub.backends.kubernetes.apply``. A cluster is started in a temporary directory unless
``--kubeconfig`` (or TRAINHUB_TEST_KUBECONFIG) names a running one.

    python benchmarks/kueue.py [--jobs 500 | --quick] [--repeats 5] [--kubeconfig PATH]
    python benchmarks/kueue.py --node real [--repeats 5] [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.control_plane import (  # noqa: E402
    cluster_module,
    import_curated_image,
    real_node_state,
    start_or_reuse,
)
from benchmarks.report import print_table  # noqa: E402
from tests.fixtures.k8s import shared_claim  # noqa: E402

GPU = "nvidia.com/gpu"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TEAMS = ("a", "b", "c")
# Per team and pool: nominal GPUs, and a borrowing limit (None: whatever the cohort lends).
QUOTA = {
    "a": {"a100": (8, None), "t4": (4, None)},
    "b": {"a100": (4, 2), "t4": (2, 2)},
    "c": {"a100": (4, None), "t4": (2, None)},
}
SHARE = {"a": 0.5, "b": 0.3, "c": 0.2}  # of the queued jobs
GPUS_PER_JOB = {"a100": 2, "t4": 1}


def teams_data(suffix: str, shared: Path) -> dict[str, Any]:
    """3 teams in one cohort over the cluster's two pools; the nominal quotas add up to its GPUs."""

    def quota(team: str, pool: str) -> dict[str, Any]:
        gpus, borrow = QUOTA[team][pool]
        entry: dict[str, Any] = {"gpus": gpus, "cpu": "64", "memory": "512Gi"}
        if borrow is not None:
            entry["borrowing_limit"] = {"gpus": borrow}
        return entry

    return {
        "pools": [
            {
                "name": f"a100-{suffix}",
                "node_labels": {"trainhub.io/pool": "a100"},
                "gpus_per_node": 8,
            },
            {"name": f"t4-{suffix}", "node_labels": {"trainhub.io/pool": "t4"}, "gpus_per_node": 4},
        ],
        "images": [{"name": "pytorch", "image": "registry.invalid/trainhub/pytorch:1"}],
        "teams": [
            {
                "name": f"{t}-{suffix}",
                "groups": [t],
                "namespace": f"{t}-{suffix}",
                "cohort": f"bench-{suffix}",
                "quota": {f"{pool}-{suffix}": quota(t, pool) for pool in ("a100", "t4")},
                "images": ["pytorch"],
                "shared_volume": {"claim": "shared", "mount_path": str(shared / t)},
            }
            for t in TEAMS
        ],
    }


def team_limits() -> dict[tuple[str, str], int]:
    """The most GPUs Kueue may admit per (team, pool): nominal plus what it may borrow."""
    limits = {}
    for team, pools in QUOTA.items():
        for pool, (nominal, borrow) in pools.items():
            lendable = sum(QUOTA[o][pool][0] for o in TEAMS if o != team)
            limits[team, pool] = nominal + (lendable if borrow is None else min(borrow, lendable))
    return limits


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 120.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := fn():
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def new_record(
    team: Any, name: str, *, workers: int, gpus: int, pool: str, cpu: float | None = None
) -> Any:
    from trainhub.jobs.models import JobRecord
    from trainhub.jobs.spec import parse_spec
    from trainhub.jobs.states import JobState

    spec = parse_spec(
        {
            "name": name,
            "source": {"path": "train.py"},
            "team": team.name,
            "queue": pool,
            "resources": {
                "workers": workers,
                "gpus_per_worker": gpus,
                "memory": "1Gi",
                **({"cpu": cpu} if cpu is not None else {}),
            },
        }
    )
    job_id = f"{name}-{secrets.token_hex(4)}"
    job_dir = Path(team.shared_volume.mount_path) / "jobs" / job_id
    return JobRecord(
        id=job_id,
        name=name,
        user="bench",
        team=team.name,
        queue=pool,
        priority=spec.priority.rank,
        state=JobState.QUEUED,
        spec=spec,
        job_dir=str(job_dir),
        gpus=spec.resources.total_gpus,
        created_at=time.time(),
    )


# --- (a) submit -> all pods Running ------------------------------------------------------------
def _all_running(core: Any, ns: str, job_id: str, workers: int) -> bool:
    pods = core.list_namespaced_pod(ns, label_selector=f"trainhub.io/job-id={job_id}").items
    return len(pods) == workers and all(p.status.phase == "Running" for p in pods)


def _delete_job(batch: Any, core: Any, ns: str, job_id: str) -> None:
    batch.delete_namespaced_job(job_id, ns, propagation_policy="Background")
    wait_for(
        f"pods of {job_id} gone",
        lambda: (
            not core.list_namespaced_pod(ns, label_selector=f"trainhub.io/job-id={job_id}").items
        ),
        every=0.2,
    )


def measure_start(
    api: Any,
    teams: Any,
    plain_ns: str,
    repeats: int,
    workers: int = 2,
    gpus: int = 2,
    cpu: float | None = None,
    prepare: Callable[[Any], None] | None = None,
    warm_up: bool = False,
) -> list[dict[str, Any]]:
    """``prepare(record)`` writes the job directory the pods read (default: an empty one);
    ``warm_up``: one direct start first, not counted (a real node unpacks the image at its
    first container)."""
    from kubernetes import client

    from trainhub.backends.kubernetes import manifests
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.jobs.directory import JobDir

    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    team = teams.teams[0]
    pool = teams.pools[0]
    backend = KubernetesBackend(teams, team.name, api_client=api)

    def start(path: str) -> float:
        """Seconds from submit to every pod Running, through Kueue or as a direct Job."""
        record = new_record(
            team, f"start-{path}", workers=workers, gpus=gpus, pool=pool.name, cpu=cpu
        )
        if prepare is None:
            JobDir(record.job_dir).create()
        else:
            prepare(record)
        if path == "kueue":
            ns = team.namespace
            t0 = time.perf_counter()
            backend.submit(record, backend.attempt_placement(record))
        else:
            ns = plain_ns
            job = manifests.job_manifest(
                record, team=team, pool=pool, image=backend.check_image(record.spec.image).reference
            )
            job["metadata"]["namespace"] = ns
            del job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
            job["spec"]["suspend"] = False
            service = manifests.service_manifest(record, team)
            service["metadata"]["namespace"] = ns
            t0 = time.perf_counter()
            core.create_namespaced_service(ns, service)
            batch.create_namespaced_job(ns, job)
        wait_for(
            f"{record.id} running",
            lambda: _all_running(core, ns, record.id, workers),
            timeout=300,
        )
        took = time.perf_counter() - t0
        _delete_job(batch, core, ns, record.id)
        if path == "direct":  # trainhub's Service is owned by its Job and goes with it
            core.delete_namespaced_service(record.id, ns)
        return took

    if warm_up:
        start("direct")
    times: dict[str, list[float]] = {"kueue": [], "direct": []}
    for i in range(repeats):
        for path in ("kueue", "direct") if i % 2 == 0 else ("direct", "kueue"):
            times[path].append(start(path))
    kueue, direct = statistics.median(times["kueue"]), statistics.median(times["direct"])
    pairs = " / ".join(
        f"{a * 1000:.0f}|{b * 1000:.0f}"
        for a, b in zip(times["kueue"], times["direct"], strict=True)
    )
    return [
        {
            "measure": f"submit -> {workers} pods Running, trainhub + Kueue (median of {repeats})",
            "measured": f"{kueue * 1000:.0f} ms",
            "compared with": f"direct Job: {direct * 1000:.0f} ms",
            "ratio": f"{kueue / direct:.2f}",
            "detail": f"each run, Kueue|direct ms: {pairs}",
        }
    ]


# --- (b) draining a queue ----------------------------------------------------------------------
@dataclass
class Peaks:
    """The most GPUs admitted at once, per (team, pool) and per pool over the whole cohort."""

    team: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    cohort: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: int = 0

    def add(self, admitted: dict[tuple[str, str], int]) -> None:
        self.samples += 1
        per_pool: dict[str, int] = defaultdict(int)
        for (team, pool), gpus in admitted.items():
            self.team[team, pool] = max(self.team[team, pool], gpus)
            per_pool[pool] += gpus
        for pool, gpus in per_pool.items():
            self.cohort[pool] = max(self.cohort[pool], gpus)


def admitted_gpus(
    workloads: list[dict[str, Any]], team_of: dict[str, str], pool_of: dict[str, str]
) -> dict[tuple[str, str], int]:
    """GPUs held by admitted (quota reserved, not finished) Workloads, per (team, pool)."""
    held: dict[tuple[str, str], int] = defaultdict(int)
    for wl in workloads:
        team = team_of.get(wl["metadata"]["namespace"])
        status = wl.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        if (
            team is None
            or conditions.get("QuotaReserved") != "True"
            or conditions.get("Finished") == "True"
        ):
            continue
        for assignment in (status.get("admission") or {}).get("podSetAssignments") or []:
            flavor = (assignment.get("flavors") or {}).get(GPU)
            usage = (assignment.get("resourceUsage") or {}).get(GPU)
            if flavor and usage:
                held[team, pool_of[flavor]] += int(usage)
    return held


def drain(
    api: Any, teams: Any, jobs: int, run_for: str, sample_every: float, timeout: float
) -> list[dict[str, Any]]:
    from kubernetes import client

    from trainhub.backends.kubernetes import manifests, status

    batch = client.BatchV1Api(api)
    suffix = teams.teams[0].name.split("-", 1)[1]
    team_of = {t.namespace: t.name.split("-", 1)[0] for t in teams.teams}
    pool_of = {p.name: p.name.split("-", 1)[0] for p in teams.pools}
    label = f"trainhub.io/bench={suffix}"
    plan = [t for t in TEAMS for _ in range(round(jobs * SHARE[t]))][:jobs]
    plan += [TEAMS[0]] * (jobs - len(plan))
    plan = [
        plan[i] for i in sorted(range(len(plan)), key=lambda i: (i * 7919) % len(plan))
    ]  # interleave
    peaks = Peaks()
    raw = {"_preload_content": False}

    def sample() -> list[dict[str, Any]]:
        """The bench's Workloads, their admitted GPUs added to the peaks."""
        listed = json.loads(
            client.CustomObjectsApi(api).list_cluster_custom_object(*KUEUE, "workloads", **raw).data
        )["items"]
        workloads = [w for w in listed if w["metadata"]["namespace"] in team_of]
        peaks.add(admitted_gpus(workloads, team_of, pool_of))
        return workloads

    def finished(workloads: list[dict[str, Any]]) -> int:
        return sum(
            1
            for w in workloads
            if any(
                c["type"] == "Finished" and c["status"] == "True"
                for c in (w.get("status") or {}).get("conditions") or []
            )
        )

    t0 = time.perf_counter()
    next_sample = t0
    for i, short in enumerate(plan):
        team = teams.team(f"{short}-{suffix}")
        pool_short = "a100" if i % 2 == 0 else "t4"
        pool = teams.pool(f"{pool_short}-{suffix}")
        record = new_record(team, f"q{i}", workers=1, gpus=GPUS_PER_JOB[pool_short], pool=pool.name)
        job = manifests.job_manifest(
            record, team=team, pool=pool, image=teams.image("pytorch").image
        )
        job["metadata"]["namespace"] = team.namespace
        job["metadata"]["labels"]["trainhub.io/bench"] = suffix
        job["spec"]["template"]["metadata"]["annotations"] = {
            "kwok.trainhub.io/result": "Succeeded",
            "kwok.trainhub.io/delay": run_for,
        }
        batch.create_namespaced_job(team.namespace, job)
        if time.perf_counter() >= next_sample:  # keep sampling while the queue fills
            sample()
            next_sample = time.perf_counter() + sample_every
    submitted = time.perf_counter() - t0
    done, workloads = 0, []
    while done < jobs:  # a Workload is Finished when its Job has succeeded or failed
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{done} of {jobs} jobs finished after {timeout:.0f}s")
        started = time.perf_counter()
        workloads = sample()
        done = finished(workloads)
        time.sleep(max(0.0, sample_every - (time.perf_counter() - started)))
    drained = time.perf_counter() - t0
    listed = json.loads(batch.list_job_for_all_namespaces(label_selector=label, **raw).data)[
        "items"
    ]
    failed = [
        j
        for j in listed
        if any(
            c["type"] == "Failed" and c["status"] == "True"
            for c in (j.get("status") or {}).get("conditions") or []
        )
    ]
    evicted = sum(status.preemptions(w) for w in workloads)
    limits = team_limits()
    rows: list[dict[str, Any]] = [
        {
            "measure": f"{jobs} queued jobs, 3 teams: until all finished",
            "measured": f"{drained:.1f} s",
            "detail": f"created in {submitted:.1f} s; {jobs / drained:.1f} jobs/s; "
            f"each runs {run_for}; "
            f"{peaks.samples} samples of the Workloads' admissions; {evicted} preemptions; "
            f"{len(failed)} failed" + (f" ({_failure(failed[0])})" if failed else ""),
        }
    ]
    for (team, pool), limit in sorted(limits.items()):
        seen = peaks.team[team, pool]
        nominal, borrow = QUOTA[team][pool]
        rows.append(
            {
                "measure": f"team {team}, {pool}: most GPUs admitted at once",
                "measured": seen,
                "compared with": f"quota + borrowing: {limit}",
                "ratio": f"{seen / limit:.2f}",
                "detail": f"nominal {nominal}, "
                f"borrowing limit {borrow if borrow is not None else 'none'}; "
                f"{'within' if seen <= limit else 'EXCEEDED'}",
            }
        )
    for pool in ("a100", "t4"):
        nominal = sum(QUOTA[t][pool][0] for t in TEAMS)
        seen = peaks.cohort[pool]
        rows.append(
            {
                "measure": f"all 3 teams, {pool}: most GPUs admitted at once",
                "measured": seen,
                "compared with": f"sum of nominal quotas: {nominal}",
                "ratio": f"{seen / nominal:.2f}",
                "detail": "within" if seen <= nominal else "EXCEEDED",
            }
        )
    return rows


def _failure(job: dict[str, Any]) -> str:
    cond = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    return f"{job['metadata']['name']}: {cond.get('reason')}: {cond.get('message')}"


# --- the run ------------------------------------------------------------------------------------
def run(
    jobs: int = 500,
    repeats: int = 5,
    kubeconfig: str | None = None,
    run_for: str = "1s",
    sample_every: float = 0.5,
    timeout: float = 1800.0,
    node: str = "kwok",
) -> list[dict[str, Any]]:
    """Rows for benchmarks/run_all.py: (a) start latency side by side, (b) drain and quota peaks;
    with ``node="real"`` (a) alone, on the real node."""
    if node == "real":
        return run_on_real_node(repeats, kubeconfig)
    from kubernetes import config

    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub.backends.kubernetes.render import render
    from trainhub.teams import load_teams

    work = Path(tempfile.mkdtemp(prefix="trainhub-kueue-bench-"))
    kubeconfig_path, cluster = start_or_reuse(
        kubeconfig or os.environ.get("TRAINHUB_TEST_KUBECONFIG"), work
    )
    suffix = secrets.token_hex(3)
    teams_file = work / "teams.yaml"
    teams_file.write_text(yaml.safe_dump(teams_data(suffix, work / "shared"), sort_keys=False))
    teams = load_teams(teams_file)
    api = config.new_client_from_config(config_file=str(kubeconfig_path))
    plain_ns = f"plain-{suffix}"
    objs = render(teams)
    try:
        apply_objects(api, objs)
        prepare_namespaces(api, teams, plain_ns, lambda ns: work / "shared" / ns)
        rows = measure_start(api, teams, plain_ns, repeats)
        rows += drain(api, teams, jobs, run_for, sample_every, timeout)
        return rows
    finally:
        if cluster is not None:
            cluster.stop()
        else:
            _clean_up(api, teams, objs, plain_ns)
        api.close()


def prepare_namespaces(
    api: Any, teams: Any, plain_ns: str, shared_path: Callable[[str], Path]
) -> None:
    """The plain namespace beside the teams' (rendered and applied already), and in each a
    'shared' claim bound to a hostPath volume at ``shared_path(namespace)``."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": plain_ns}})
    for ns in [*(t.namespace for t in teams.teams), plain_ns]:
        wait_for(
            f"{ns} default account",
            lambda ns=ns: (
                core.list_namespaced_service_account(
                    ns, field_selector="metadata.name=default"
                ).items
            ),
        )
        shared_claim(core, ns, shared_path(ns))


# --- (a) on the real node -------------------------------------------------------------------------
RUN_AS = 1000  # the curated images' user (images/README.md)
SLEEPER = "import time\n\ntime.sleep(600)\n"  # the job's script: its pods stay Running


def real_node_teams(suffix: str, shared: Path, image: str) -> dict[str, Any]:
    """One team whose one pool is the real node (2 GPUs), with the curated image ``image``."""
    node = cluster_module()._load_node()
    pool = f"real-{suffix}"
    return {
        "pools": [
            {
                "name": pool,
                "node_labels": {"type": node.NODE_LABELS["type"]},
                "gpus_per_node": 2,
                "tolerations": [{"operator": "Equal", **node.NODE_TAINT}],
            }
        ],
        "images": [{"name": "pytorch-cpu", "image": image}],
        "teams": [
            {
                "name": f"lab-{suffix}",
                "groups": ["lab"],
                "namespace": f"lab-{suffix}",
                "quota": {pool: {"gpus": 2, "cpu": "2", "memory": "6Gi"}},
                "images": ["pytorch-cpu"],
                "shared_volume": {"claim": "shared", "mount_path": str(shared)},
            }
        ],
    }


def sleeping_job(workspace: Path) -> Callable[[Any], None]:
    """``measure_start``'s ``prepare``: the record's job directory with the bundle of
    ``workspace`` (its train.py sleeps), owned by the pods' user as a notebook server leaves it."""

    def prepare(record: Any) -> None:
        from trainhub.bundle.compile import compile_bundle
        from trainhub.jobs.directory import JobDir

        job = JobDir(record.job_dir)
        job.create()
        compile_bundle(record.spec, workspace, job.bundle)
        for path in [job.root, *job.root.rglob("*")]:
            os.chown(path, RUN_AS, RUN_AS)

    return prepare


def run_on_real_node(repeats: int, kubeconfig: str | None) -> list[dict[str, Any]]:
    """(a) with pods that really start: a control plane with its real node is started here
    unless ``kubeconfig`` names one that runs it."""
    from kubernetes import config

    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub.backends.kubernetes.render import render
    from trainhub.teams import parse_teams

    work = Path(tempfile.mkdtemp(prefix="trainhub-kueue-real-"))
    kubeconfig_path, cluster = start_or_reuse(
        kubeconfig or os.environ.get("TRAINHUB_TEST_KUBECONFIG"), work
    )
    api = None
    try:
        if cluster is not None:
            cluster.start_node()
        cluster_dir = Path(kubeconfig_path).parent
        real_node_state(cluster_dir)
        image = import_curated_image(cluster_dir, "pytorch-cpu")
        shared, workspace = work / "shared", work / "workspace"
        shared.mkdir()
        os.chown(shared, RUN_AS, RUN_AS)  # hostPath volumes get no fsGroup
        workspace.mkdir()
        (workspace / "train.py").write_text(SLEEPER)
        suffix = secrets.token_hex(3)
        teams = parse_teams(real_node_teams(suffix, shared, image))
        api = config.new_client_from_config(config_file=str(kubeconfig_path))
        plain_ns = f"plain-{suffix}"
        objs = render(teams)
        apply_objects(api, objs)
        prepare_namespaces(api, teams, plain_ns, lambda ns: shared)
        try:
            return measure_start(
                api,
                teams,
                plain_ns,
                repeats,
                gpus=1,
                cpu=0.25,
                prepare=sleeping_job(workspace),
                warm_up=True,
            )
        finally:
            if cluster is None:
                _clean_up(api, teams, objs, plain_ns)
    finally:
        if api is not None:
            api.close()
        if cluster is not None:
            cluster.stop()  # and the real node with it


def _clean_up(api: Any, teams: Any, objs: list[dict[str, Any]], plain_ns: str) -> None:
    """On a cluster that outlives the run: remove the namespaces, volumes and queue objects."""
    from kubernetes import client

    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    for ns in [*(t.namespace for t in teams.teams), plain_ns]:
        for call in (
            lambda ns=ns: core.delete_namespace(ns, propagation_policy="Background"),
            lambda ns=ns: core.delete_persistent_volume(f"{ns}-shared"),
        ):
            try:
                call()
            except client.ApiException as e:
                if e.status != 404:
                    raise
    for obj in objs:
        plural = {"ClusterQueue": "clusterqueues", "ResourceFlavor": "resourceflavors"}.get(
            obj["kind"]
        )
        if plural:
            try:
                custom.delete_cluster_custom_object(*KUEUE, plural, obj["metadata"]["name"])
            except client.ApiException as e:
                if e.status != 404:
                    raise


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="100 jobs, 3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--run-for", default="1s", help="how long each drained job's pod runs (Go duration)"
    )
    parser.add_argument("--kubeconfig")
    parser.add_argument(
        "--node",
        choices=("kwok", "real"),
        default="kwok",
        help="where (a)'s pods run; real: (a) alone, on the real node",
    )
    args = parser.parse_args()
    jobs, repeats = (100, 3) if args.quick else (args.jobs, args.repeats)
    rows = run(
        jobs=jobs,
        repeats=repeats,
        kubeconfig=args.kubeconfig,
        run_for=args.run_for,
        node=args.node,
    )
    print_table("kueue_real_node" if args.node == "real" else "kueue", rows)


if __name__ == "__main__":
    main()
