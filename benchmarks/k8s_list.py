"""GET trainhub/api/jobs?limit=50 through a real Jupyter server on the Kubernetes backend: 1,000
trainhub jobs in the team's namespace against 10, with this checkout's reads (each object kind
listed once per call) and with those of commit PEER (the pods and Workload of each job read
per job, Kubernetes events synced while reading), side by side on one control plane; and this
checkout where a controller runs, whose server answers lists from a watch-fed cache; and that
one again with 1,000 jobs and a page of 10, the size of the whole list of 10: the ratio of the
two says what the namespace's size costs by itself, apart from a bigger page; and once more
with 1,000 jobs of which 900 are nine teammates' (not shared with the team): the page of the
user's own 100 says what a team's other members cost.

The jobs are made cheaply: KubernetesBackend.submit of a record whose job directory holds
what a read needs (spec.json, the submitted event), into a ClusterQueue held by its
``stopPolicy: Hold``: Kueue makes each Job's Workload and admits none, so every job stays
queued and the list explains each job of its page (Kueue's wait reason). Reconcile is off in
both servers, so only the requests are measured. PEER runs from ``git archive`` of it.

With ``--base COMMIT``, that commit's tree where a controller runs is measured as well, on the
same clusters right after this checkout's: a change's before and after in one run. The rows
"side by side" measure the page of 50 with both servers (10 and 1,000 jobs) up at once, each
round asking both in random order, so that the machine's changing load meets both sizes alike.

Each request is timed to its answer's last byte (as wrk or ab time one); the column "p95 ms,
parsed" adds the client's ``json.loads`` of the answer.

    python benchmarks/k8s_list.py [--jobs 1000] [--few 10] [--requests 60]
                                  [--peer-requests 1] [--peer-cap 300] [--kubeconfig PATH]
                                  [--base COMMIT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.control_plane import start_or_reuse  # noqa: E402
from benchmarks.kueue import KUEUE, new_record  # noqa: E402
from benchmarks.log_latency import JupyterServer, percentile  # noqa: E402
from benchmarks.report import print_table  # noqa: E402

PEER = "a23c047"  # the last commit whose Kubernetes reads went job by job
BACKEND = "trainhub.backends.kubernetes.backend.KubernetesBackend"
PAGE = "trainhub/api/jobs?limit={limit}"
WATCHED = "watch-fed cache (a controller runs)"
CACHED = f"this checkout, {WATCHED}"
MATES = f"{CACHED}, 900 of the jobs 9 teammates'"
TIME_LIMIT_S = 1800.0  # the peer's list of 1,000 jobs takes minutes; it is measured, not cut


def teams_data(names: list[str], shared: Path) -> dict[str, Any]:
    return {
        "pools": [
            {"name": "a100-list", "node_labels": {"trainhub.io/pool": "a100"}, "gpus_per_node": 8}
        ],
        "images": [{"name": "pytorch", "image": "registry.invalid/trainhub/pytorch:1"}],
        "teams": [
            {
                "name": n,
                "groups": [n],
                "namespace": n,
                "quota": {"a100-list": {"gpus": 8, "cpu": "64", "memory": "512Gi"}},
                "images": ["pytorch"],
                "shared_volume": {"claim": "shared", "mount_path": str(shared / n)},
            }
            for n in names
        ],
    }


def fill(api: Any, teams: Any, team_name: str, count: int, user: str) -> None:
    """``count`` queued jobs of ``user`` in the team's held ClusterQueue."""
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.jobs.directory import JobDir, write_json_atomic

    team = teams.team(team_name)
    backend = KubernetesBackend(teams, team_name, api_client=api)

    def one(i: int) -> None:
        record = new_record(team, f"list-{i:04d}", workers=1, gpus=1, pool="a100-list")
        record = record.model_copy(update={"user": user, "created_at": time.time()})
        jobdir = JobDir(record.job_dir).create()
        # Fields left at their defaults are left out, so that PEER's spec model reads it too.
        spec = record.spec.model_dump(mode="json", exclude_defaults=True)
        spec.update(id=record.id, user=user)
        write_json_atomic(jobdir.spec, spec)
        jobdir.emit("submitted", user=user, host="bench", content_hash="")
        backend.submit(record, backend.attempt_placement(record))

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(one, range(count)))


def answer(server: JupyterServer, path: str, timeout: float = TIME_LIMIT_S + 60) -> bytes:
    """The answer's body, read to its last byte: a request's latency as wrk or ab time it."""
    request = urllib.request.Request(
        server.base + path, headers={"Authorization": f"token {server.token}"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def get(server: JupyterServer, path: str, timeout: float = TIME_LIMIT_S + 60) -> Any:
    return json.loads(answer(server, path, timeout))


def measure(
    label: str,
    tmp: Path,
    env: dict[str, str],
    team: str,
    jobs: int,
    requests: int,
    cap_s: float | None = None,
    settle_s: float = 0.0,
    limit: int = 50,
    total: int | None = None,
) -> dict[str, Any]:
    """p50/p95/max of ``requests`` pages after one to warm up, each timed to the answer's last
    byte; and the p95 with the client's parse of it (``json.loads``, what a caller of the API
    also pays, but not the server's answer). With ``cap_s``, no warm-up and requests given up
    after ``cap_s`` (the figures are then lower bounds, marked ">")."""
    server = server_for(label, tmp, env, team, jobs)
    page = PAGE.format(limit=limit)
    samples, parsed, cut = [], [], False  # cut: the last request was given up after cap_s
    with server:
        if settle_s:
            time.sleep(settle_s)  # the server's watch-fed cache lists the namespace once
        if cap_s is None:
            warm(server, page, jobs if total is None else total, limit)
        for _ in range(requests):
            if cut := not timed(server, page, samples, parsed, cap_s):
                break
    return figures(label, jobs, limit, samples, parsed, cut)


def side_by_side(
    label: str, tmp: Path, env: dict[str, str], names: dict[int, str], requests: int
) -> list[dict[str, Any]]:
    """The page of 50 from the servers of both namespaces, up at once, each round asking both
    in random order: a load that comes and goes on the machine meets both sizes alike."""
    label = f"{label}, side by side"
    servers = {n: server_for(label, tmp, env, team, n) for n, team in names.items()}
    page = PAGE.format(limit=50)
    samples: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in servers}
    with contextlib.ExitStack() as up:
        for server in servers.values():
            up.enter_context(server)
        time.sleep(10.0)  # their watch-fed caches list the namespaces once
        for n, server in servers.items():
            warm(server, page, n, 50)
        for _ in range(requests):
            for n in random.sample(list(servers), len(servers)):
                timed(servers[n], page, *samples[n], None)
    return [figures(label, n, 50, *samples[n]) for n in servers]


def server_for(label: str, tmp: Path, env: dict[str, str], team: str, jobs: int) -> JupyterServer:
    home, root = tmp / f"{label}-{jobs}" / "home", tmp / f"{label}-{jobs}" / "root"
    home.mkdir(parents=True)
    root.mkdir()
    server = JupyterServer(
        home, root, backend_class=BACKEND, reconcile_interval=0, call_time_limit=TIME_LIMIT_S
    )
    server.env_overrides = {**env, "TRAINHUB_TEAM": team}
    return server


def warm(server: JupyterServer, page: str, total: int, limit: int) -> None:
    """One request to warm up, which checks the page is what is measured."""
    first = get(server, page)
    assert first["total"] == total and len(first["jobs"]) == min(limit, total), first
    assert all(j["wait_reason"] for j in first["jobs"]), first["jobs"][0]


def timed(
    server: JupyterServer,
    page: str,
    samples: list[float],
    parsed: list[float],
    cap_s: float | None,
) -> bool:
    """One request, timed to its answer's last byte (into ``samples``) and then with the
    client's parse of it (into ``parsed``); False when it was given up after ``cap_s``."""
    start = time.perf_counter()
    try:
        body = answer(server, page, timeout=cap_s or TIME_LIMIT_S + 60)
    except TimeoutError:  # the answer's wait, as urllib raises it past the connection
        samples.append((time.perf_counter() - start) * 1000)
        parsed.append(samples[-1])
        return False
    samples.append((time.perf_counter() - start) * 1000)
    json.loads(body)  # outside the answer's time: the client's own work
    parsed.append((time.perf_counter() - start) * 1000)
    return True


def figures(
    label: str,
    jobs: int,
    limit: int,
    samples: list[float],
    parsed: list[float],
    cut: bool = False,
) -> dict[str, Any]:
    mark = ">" if cut else ""
    return {
        "reads": label,
        "jobs": jobs,
        "page": limit,
        "requests": len(samples),
        "p50 ms": f"{mark}{percentile(samples, 0.5):.1f}",
        "p95 ms": f"{mark}{percentile(samples, 0.95):.1f}",
        "max ms": f"{mark}{max(samples):.1f}",
        "p95 ms, parsed": f"{mark}{percentile(parsed, 0.95):.1f}",
    }


def run(
    jobs: int = 1000,
    few: int = 10,
    requests: int = 30,
    peer_requests: int = 1,
    kubeconfig: str | None = None,
    peer_cap_s: float = 300.0,
    base: str | None = None,
) -> list[dict[str, Any]]:
    from kubernetes import client, config

    from trainhub.backends.kubernetes.apply import apply_objects
    from trainhub.backends.kubernetes.render import render
    from trainhub.teams import parse_teams

    user = "bench"
    with tempfile.TemporaryDirectory(prefix="trainhub-k8s-list-") as tmp_name:
        tmp = Path(tmp_name)
        kube, cluster = start_or_reuse(kubeconfig, tmp)
        try:
            api = config.new_client_from_config(config_file=str(kube))
            suffix = os.urandom(3).hex()
            names = {n: f"list-{n}-{suffix}" for n in (few, jobs)}
            mates = f"list-mates-{suffix}"
            data = teams_data([*names.values(), mates], tmp / "shared")
            teams = parse_teams(data)
            teams_file = tmp / "teams.yaml"
            teams_file.write_text(yaml.safe_dump(data))
            # The same teams where the controller runs: sessions read from a watch-fed cache.
            controlled_file = tmp / "teams-controlled.yaml"
            controlled_file.write_text(yaml.safe_dump({**data, "controller": {}}))
            apply_objects(api, render(teams))  # the namespaces, quotas and queues
            for name in [*names.values(), mates]:  # Kueue makes Workloads, and admits none
                client.CustomObjectsApi(api).patch_cluster_custom_object(
                    *KUEUE,
                    "clusterqueues",
                    teams.team(name).cluster_queue,
                    {"spec": {"stopPolicy": "Hold"}},
                )
            started = time.perf_counter()
            for count, name in names.items():
                fill(api, teams, name, count, user)
            own = jobs // 10
            fill(api, teams, mates, own, user)
            for n in range(9):
                fill(api, teams, mates, (jobs - own) // 9, f"mate{n}")
            print(f"{few + jobs} jobs made in {time.perf_counter() - started:.0f} s", flush=True)

            env = {"KUBECONFIG": str(kube), "TRAINHUB_TEAMS_FILE": str(teams_file)}
            # The server's user is the process's: the jobs are made as that user.
            env["USER"] = env["LOGNAME"] = user
            controlled = {"TRAINHUB_TEAMS_FILE": str(controlled_file)}
            trees = {"this checkout": {}, CACHED: controlled}
            if base:
                trees[based(base)] = {**controlled, **tree_of(base, tmp / "base")}
            trees[f"{PEER} (per job)"] = tree_of(PEER, tmp / "peer")
            rows = []
            for label, extra in trees.items():
                for count, name in names.items():
                    slow = label.startswith(PEER) and count != few  # the peer, many jobs
                    n = peer_requests if slow else requests
                    cap = peer_cap_s if slow else None
                    settle = 10.0 if label.endswith(WATCHED) else 0.0
                    row = measure(label, tmp, {**env, **extra}, name, count, n, cap, settle)
                    print(row, flush=True)
                    rows.append(row)
            # The same page of `few` at both sizes: what the namespace's size alone costs.
            cached = {**env, **trees[CACHED]}
            row = measure(
                CACHED, tmp / "same-page", cached, names[jobs], jobs, requests, None, 10.0, few
            )
            print(row, flush=True)
            rows.append(row)
            # Both sizes at once, asked in turn: the same load meets both.
            for label in (CACHED, *([based(base)] if base else [])):
                pair = side_by_side(label, tmp, {**env, **trees[label]}, names, requests)
                print(pair, flush=True)
                rows += pair
            # The same namespace size, 90 % of it teammates' jobs: the user's page of 50.
            for label in (CACHED, *([based(base)] if base else [])):
                mates_label = MATES if label == CACHED else f"{label}, 900 of the jobs 9 teammates'"
                environment = {**env, **trees[label]}
                row = measure(
                    mates_label, tmp, environment, mates, jobs, requests, None, 10.0, total=own
                )
                print(row, flush=True)
                rows.append(row)
        finally:
            if cluster is not None:
                cluster.stop()
    return rows + ratios(rows, few, jobs)


def based(commit: str) -> str:
    return f"{commit} (before), {WATCHED}"


def tree_of(commit: str, where: Path) -> dict[str, str]:
    """The environment that runs ``commit``'s trainhub and server extension (from ``git
    archive`` of it into ``where``)."""
    where.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return {"PYTHONPATH": os.pathsep.join([str(where), str(where / "server_extension")])}


def ratios(rows: list[dict[str, Any]], few: int, jobs: int) -> list[dict[str, Any]]:
    """p95 of many jobs over few, for each; ours over the peer's, at each count. A figure cut
    short (">") makes its ratio a bound."""
    p95 = {(r["reads"], r["jobs"]): r["p95 ms"] for r in rows if r["page"] == 50}
    parsed = {(r["reads"], r["jobs"]): r["p95 ms, parsed"] for r in rows if r["page"] == 50}
    labels = dict.fromkeys(r["reads"] for r in rows)
    bases = [r for r in labels if r.endswith(based(""))]
    pairs = [r for r in labels if r.endswith(", side by side")]
    same_page = next(r["p95 ms"] for r in rows if r["page"] == few and r["jobs"] == jobs)
    ours, peer = rows[0]["reads"], next(r["reads"] for r in rows if r["reads"].startswith(PEER))

    def ratio(a: str, b: str) -> str:
        value = float(a.lstrip(">")) / float(b.lstrip(">"))
        bound = ">" if a.startswith(">") else "<" if b.startswith(">") else ""
        return f"{bound}{value:.3g}"

    return (
        [
            {
                "reads": f"ratio {jobs} jobs / {few} jobs, p95: {label}",
                "p95 ms": ratio(p95[label, jobs], p95[label, few]),
            }
            for label in (ours, CACHED, *bases, *pairs, peer)
            if (label, jobs) in p95
        ]
        + [
            {
                "reads": f"ratio {jobs} jobs / {few} jobs, p95 with the client's parse: {label}",
                "p95 ms, parsed": ratio(parsed[label, jobs], parsed[label, few]),
            }
            for label in (CACHED, *bases, *pairs)
            if (label, jobs) in parsed
        ]
        + [
            {
                "reads": f"ratio {jobs} jobs / {few} jobs, p95, the same page of {few}: {CACHED}",
                "p95 ms": ratio(same_page, p95[CACHED, few]),
            }
        ]
        + (
            [
                {
                    "reads": f"ratio {MATES} / all the user's, p95",
                    "p95 ms": ratio(p95[MATES, jobs], p95[CACHED, jobs]),
                }
            ]
            if (MATES, jobs) in p95
            else []
        )
        + [
            {
                "reads": f"ratio this checkout / {PEER}, p95, {n} jobs",
                "p95 ms": ratio(p95[ours, n], p95[peer, n]),
            }
            for n in (few, jobs)
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--few", type=int, default=10)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--peer-requests", type=int, default=1)
    parser.add_argument("--peer-cap", type=float, default=300.0, help="seconds")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--base", help="a commit to measure too, with a controller")
    args = parser.parse_args()
    rows = run(
        args.jobs,
        args.few,
        args.requests,
        args.peer_requests,
        args.kubeconfig,
        args.peer_cap,
        args.base,
    )
    print_table("k8s_list", rows)


if __name__ == "__main__":
    main()
