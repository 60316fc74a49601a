"""Shared GPUs in the teams file: a pool that offers each GPU as shares, the sizes a team
offers, the mistakes named by their path, and the quota objects that count a share as 1/N GPU."""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from tests.fixtures.fake_nvml.fake import GIB
from tests.fixtures.shared_gpus import SHARED_POOL, SHARED_TAINT, with_shared_pool
from trainhub.api import build_spec
from trainhub.backends.kubernetes import manifests, render
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.backends.kubernetes.doctor import Seen, findings
from trainhub.backends.kubernetes.queues import cluster_queue
from trainhub.backends.local.backend import LocalBackend
from trainhub.cli.jobargs import add_job_arguments, job_keywords
from trainhub.jobs.models import JobRecord
from trainhub.jobs.service import JobService
from trainhub.jobs.shares import parse_share, share_words
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.states import JobState
from trainhub.teams import TeamsError, parse_teams
from trainhub.usage.compute import usage_row
from trainhub.usage.panel import cluster_queue_quotas

GOLDEN = Path(__file__).parent / "golden"
BASE = yaml.safe_load((GOLDEN / "teams.yaml").read_text())


def shared_teams(mutate=lambda d: None):
    data = with_shared_pool(BASE)
    mutate(data)
    return parse_teams(data)


def errors_of(mutate) -> dict[str, str]:
    with pytest.raises(TeamsError) as info:
        shared_teams(mutate)
    return dict(info.value.errors)


def test_a_team_offers_a_share_of_a_shared_pool() -> None:
    teams = shared_teams()
    vision, pool = teams.team("vision"), teams.pool("t4-shared")
    assert vision.session_gpus == [0, "1/4", 1]
    assert vision.session_shares == [Fraction(1, 4)]
    assert pool.shared_resource == "nvidia.com/gpu.shared"
    mig = shared_teams(
        lambda d: d["pools"][2].update(
            sharing={"strategy": "mig", "replicas": 4, "profile": "1g.10gb"}
        )
    )
    assert mig.pool("t4-shared").shared_resource == "nvidia.com/mig-1g.10gb"


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (
            lambda d: d["teams"][0].update(session_gpus=[0, "2/4"]),
            "teams[0].session_gpus",
            "not a GPU share",
        ),
        (lambda d: d["teams"][0].update(session_gpus=["1/3"]), "teams[0].session_gpus", "3 ways"),
        (lambda d: d["pools"][2].update(tolerations=[]), "pools[2].tolerations", "tainted"),
        (
            lambda d: d["pools"][2]["sharing"].update(replicas=1),
            "pools[2].sharing.replicas",
            ">= 2",
        ),
        (
            lambda d: d["pools"][2]["sharing"].update(strategy="mps"),
            "pools[2].sharing.strategy",
            "time-slicing",
        ),
        (
            lambda d: d["pools"][2]["sharing"].update(strategy="mig"),
            "pools[2].sharing.profile",
            "1g.10gb",
        ),
        (
            lambda d: d["pools"].append(
                {
                    **copy.deepcopy(SHARED_POOL),
                    "name": "x",
                    "sharing": {"strategy": "time-slicing", "replicas": 2},
                }
            ),
            "pools[3].sharing.replicas",
            "one size of share",
        ),
    ],
)
def test_sharing_mistakes_name_their_field(mutate, path: str, words: str) -> None:
    errors = errors_of(mutate)
    assert path in errors, errors
    assert words in errors[path]


def test_whole_gpus_of_a_session_come_from_pools_that_do_not_share() -> None:
    def only_shared(d):
        d["teams"][0]["quota"] = {"t4-shared": d["teams"][0]["quota"]["t4-shared"]}
        d["teams"][0]["session_gpus"] = [0, 1, "1/4"]

    errors = errors_of(only_shared)
    assert errors["teams[0].session_gpus"].startswith("1 GPUs do not fit on one node")


def test_share_text_and_words() -> None:
    assert parse_share(" 1/4 ") == Fraction(1, 4)
    with pytest.raises(ValueError, match="not a GPU share"):
        parse_share("1/17")
    assert share_words(Fraction(1, 4), "time-slicing") == "¼ of a GPU (time-sliced with 3 others)"
    assert share_words(Fraction(1, 7), "mig") == "⅐ of a GPU (a MIG partition)"


def test_quota_objects_count_shares_golden() -> None:
    """The team's ClusterQueue covers the shared resource beside whole GPUs, every flavor
    listing both (quota 0 where a pool has none of it); one GPU of the shared pool is 4 units,
    limits too; the namespace's ResourceQuota caps each resource alike. A team without a
    shared pool keeps its objects as they were."""
    teams = shared_teams()
    objs = render.render(teams)
    picked = [
        o
        for o in objs
        if o["kind"] in ("ClusterQueue", "ResourceQuota", "ResourceFlavor")
        and o["metadata"]["name"] in ("vision", "nlp", "trainhub-quota", "t4-shared")
    ]
    text = render.to_yaml(picked)
    path = GOLDEN / "shared-gpus.yaml"

    if os.environ.get("TRAINHUB_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), "shared-gpus.yaml differs from the golden file"
    plain = render.render(parse_teams(copy.deepcopy(BASE)))
    nlp = [o for o in objs if o["metadata"]["name"] == "nlp" and o["kind"] == "ClusterQueue"]
    assert nlp == [
        o for o in plain if o["metadata"]["name"] == "nlp" and o["kind"] == "ClusterQueue"
    ]


def job(queue: str | None = None, **resources) -> JobRecord:
    spec = parse_spec(
        {
            "name": "probe",
            "source": {"path": "t.ipynb"},
            "team": "vision",
            "resources": resources,
            **({"queue": queue} if queue else {}),
        }
    )
    return JobRecord(
        id="probe-0a1b2c3d",
        name="probe",
        user="ada@example.org",
        team="vision",
        priority=1,
        state=JobState.QUEUED,
        spec=spec,
        job_dir="/shared/vision/jobs/probe-0a1b2c3d",
        gpus=spec.resources.total_gpus,
        created_at=1700000000.0,
    )


@pytest.mark.parametrize(
    ("resources", "words"),
    [
        ({"gpu_share": "1/4", "workers": 2}, "a shared GPU holds one worker"),
        ({"gpu_share": "1/4", "gpus_per_worker": 1}, "not both"),
        ({"gpu_share": "half"}, "not a GPU share"),
    ],
)
def test_a_job_asks_for_a_share_of_one_worker_only(resources, words: str) -> None:
    with pytest.raises(SpecError) as info:
        job(**resources)
    assert [(e.field, words in e.message) for e in info.value.errors] == [
        ("resources.gpu_share", True)
    ]


def test_only_a_job_asking_for_the_share_lands_on_the_shared_pool_and_requests_it() -> None:
    def shared_first(d):  # the pools a job may take are tried in the quota's order
        quota = d["teams"][0]["quota"]
        d["teams"][0]["quota"] = {"t4-shared": quota.pop("t4-shared"), **quota}

    teams = shared_teams(shared_first)
    backend = KubernetesBackend(teams, "vision", api_client=object())
    team, shared = teams.team("vision"), teams.pool("t4-shared")
    assert backend.pool_for(job(gpu_share="1/4")) == "t4-shared"
    assert backend.pool_for(job(gpus_per_worker=1)) == "a100"
    assert backend.pool_for(job()) == "a100"
    refusals = [
        (job(gpu_share="1/2"), "no pool of team vision offers 1/2 of a GPU"),
        (
            job(gpus_per_worker=1, queue="t4-shared"),
            "pool t4-shared takes only jobs asking for 1/4 of a GPU, not whole GPUs",
        ),
        (job(gpu_share="1/4", queue="t4"), "pool t4 takes only jobs asking for whole GPUs"),
    ]
    for record, words in refusals:
        with pytest.raises(SpecError) as info:
            backend.pool_for(record)
        assert info.value.errors[0].field == "resources.gpu_share"
        assert info.value.errors[0].message.startswith(words)

    def requests(record, pool):
        m = manifests.job_manifest(record, team=team, pool=pool, image="img:1")
        pod = m["spec"]["template"]["spec"]
        return pod["containers"][0]["resources"]["requests"], pod.get("tolerations")

    got, tolerations = requests(job(gpu_share="1/4"), shared)
    assert got["nvidia.com/gpu.shared"] == "1" and "nvidia.com/gpu" not in got
    assert tolerations == [SHARED_TAINT]
    got, _ = requests(job(gpus_per_worker=2), teams.pool("a100"))
    assert got["nvidia.com/gpu"] == "2" and "nvidia.com/gpu.shared" not in got
    # The submit dialog offers the share with the pool such a job goes to (GET config).
    assert backend.catalog()["teams"][0]["gpu_shares"] == [
        {"share": "1/4", "queue": "t4-shared", "label": "¼ of a GPU (time-sliced with 3 others)"}
    ]


def test_the_usage_panel_says_shares_in_gpus() -> None:
    """The ClusterQueue counts shares in units; the Usage panel's quota says them in GPUs
    (one session of 1/4 and a job of 1/4 hold half a GPU of the 2), and leaves out the GPU
    resources a pool does not have."""
    teams = shared_teams()
    cq = cluster_queue(teams.team("vision"), teams)
    cq["status"] = {
        "flavorsReservation": [
            {"name": "t4-shared", "resources": [{"name": "nvidia.com/gpu.shared", "total": "2"}]},
            {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "3"}]},
        ]
    }
    shares = {"t4-shared": ("nvidia.com/gpu.shared", 4)}
    quotas = {(q.pool, q.resource): q for q in cluster_queue_quotas(cq, shares)}
    assert sorted(quotas) == [
        (pool, resource)
        for pool in ("a100", "t4", "t4-shared")
        for resource in ("cpu", "memory", "nvidia.com/gpu")
    ]
    shared = quotas[("t4-shared", "nvidia.com/gpu")]
    assert (shared.used, shared.nominal, shared.lendable) == (0.5, 2.0, 1.0)
    assert quotas[("a100", "nvidia.com/gpu")].used == 3.0


SESSION_GPU = (
    "from trainhub.metrics.gpushare import session_gpu; print(session_gpu().model_dump_json())"
)


def test_a_shared_session_sees_its_share_and_the_memory_others_use(fake_nvml) -> None:
    """Through the real nvidia-ml-py on the fake NVML: the GPU's used memory less what this
    session's own processes hold (this test's process stands for the session's kernel, seen in
    the child's /proc; the other pid is no process here: another pod's)."""
    fake_nvml.set(
        0,
        memory_used=int(11.1 * GIB),
        processes=f"{os.getpid()}:{2 * GIB},{2**22 + 7}:{int(9.1 * GIB)}",
    )
    env = {**fake_nvml.env, "TRAINHUB_GPU_SHARE": "1/4", "TRAINHUB_GPU_SHARING": "time-slicing"}
    out = subprocess.run(
        [sys.executable, "-c", SESSION_GPU], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["line"] == "¼ of a GPU (time-sliced with 3 others) · 9.1 GiB in use by others"
    assert (got["share"], got["others_bytes"], got["reason"]) == ("1/4", int(9.1 * GIB), None)
    assert got["memory_total_bytes"] == 80 * GIB

    fake_nvml.fail("nvmlDeviceGetComputeRunningProcesses_v3", 3)
    out = subprocess.run(
        [sys.executable, "-c", SESSION_GPU], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["line"] == "¼ of a GPU (time-sliced with 3 others)"
    assert got["others_bytes"] is None and got["reason"].startswith("NVML could not read the GPU")

    env.pop("TRAINHUB_GPU_SHARE")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from trainhub.metrics.gpushare import session_gpu; print(session_gpu())",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "None"


def test_the_cli_asks_for_a_share_and_one_machine_refuses_it(tmp_path: Path) -> None:
    """`trainhub submit --gpu-share 1/4` writes the spec's field; a local installation has no
    shared pool and says so, naming it."""
    parser = argparse.ArgumentParser()
    add_job_arguments(parser, runtime_help="")
    args = parser.parse_args(["--gpu-share", "1/4"])
    spec = build_spec("train.py", **job_keywords(args))
    assert spec["resources"]["gpu_share"] == "1/4" and spec["resources"]["gpus_per_worker"] == 0

    (tmp_path / "train.py").write_text("print('hi')\n")
    backend = LocalBackend(tmp_path / "home")
    service = JobService(backend, workspace_root=tmp_path, jobs_root=tmp_path / "jobs")
    try:
        with pytest.raises(SpecError) as info:
            service.submit(spec, user="ada")
    finally:
        backend.close()
    assert info.value.errors[0].field == "resources.gpu_share"
    assert "here jobs get whole GPUs" in info.value.errors[0].message


def test_a_share_counts_its_fraction_of_gpu_time() -> None:
    """A 1/4 share held for 400 s is 100 GPU-seconds; its GPU's samples (the whole GPU it is
    on) count for their quarter."""
    record = job(gpu_share="1/4").model_copy(
        update={"state": JobState.SUCCEEDED, "started_at": 1000.0, "finished_at": 1400.0}
    )
    samples = [{"time": 1000.0 + t, "gpu": 0, "utilization": 90} for t in range(10, 401, 10)]
    row = usage_row(record, [], samples, threshold_pct=10)
    assert (row.gpus, row.gpu_allocated_s) == (0.25, 100.0)
    assert row.gpu_busy_s == pytest.approx(100.0 * 0.9, rel=0.05)
    whole = usage_row(
        record.model_copy(update={"spec": job(gpus_per_worker=2).spec, "gpus": 2}),
        [],
        [],
        threshold_pct=10,
    )
    assert (whole.gpus, whole.gpu_allocated_s) == (2, 800.0)


def test_the_doctor_looks_for_a_shared_pools_own_resource() -> None:
    teams = shared_teams()
    pool = {"trainhub.io/pool": "t4-shared"}
    whole_only = Seen(nodes=[(pool, {"nvidia.com/gpu": 4})])
    assert (
        "pool t4-shared: its nodes (trainhub.io/pool=t4-shared) offer no nvidia.com/gpu.shared: "
        "is the GPU device plugin running on them, sharing its GPUs with renameByDefault?"
    ) in findings(teams, whole_only)
    shared = Seen(nodes=[(pool, {"nvidia.com/gpu.shared": 16})])
    assert not any(f.startswith("pool t4-shared") for f in findings(teams, shared))
