"""Golden files of the cluster objects rendered from a teams file and of one job's objects.

Regenerate after an intended change:
TRAINHUB_UPDATE_GOLDEN=1 pytest tests/unit/test_k8s_manifests.py
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainhub import __version__
from trainhub.backends.kubernetes import manifests, render
from trainhub.cli import main
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState
from trainhub.teams import load_teams

GOLDEN = Path(__file__).parent / "golden"
TEAMS = load_teams(GOLDEN / "teams.yaml")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TRAINHUB_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with TRAINHUB_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from the golden file"


def record(**spec_overrides) -> JobRecord:
    spec = parse_spec(
        {
            "name": "resnet",
            "source": {"path": "train.ipynb"},
            "team": "vision",
            "priority": "high",
            "resources": {"workers": 2, "gpus_per_worker": 4, "cpu": 16, "memory": "64Gi"},
            "max_runtime": "2h",
            "env": {"EPOCHS": "3"},
            "datasets": [
                {"name": "imagenet", "path": "/datasets/imagenet", "catalog": True},
                {"name": "coco", "path": "/datasets/coco", "catalog": True},
            ],
            **spec_overrides,
        }
    )
    return JobRecord(
        id="resnet-0a1b2c3d",
        name="resnet",
        user="ada@example.org",
        team="vision",
        priority=2,
        state=JobState.QUEUED,
        spec=spec,
        job_dir="/shared/vision/jobs/resnet-0a1b2c3d",
        gpus=8,
        created_at=1700000000.0,
    )


def test_cluster_objects_golden() -> None:
    check_golden("cluster.yaml", render.to_yaml(render.render(TEAMS)))


def test_helm_values_carry_the_rendered_objects(capsys: pytest.CaptureFixture[str]) -> None:
    """`trainhub admin render --helm-values`: the chart's values (charts/trainhub), with the
    objects exactly as rendered, the release that rendered them and the teams file's digest."""
    assert main(["admin", "render", str(GOLDEN / "teams.yaml"), "--helm-values"]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    digest = hashlib.sha256((GOLDEN / "teams.yaml").read_bytes()).hexdigest()
    assert values == {
        "teams": {"renderedBy": __version__, "sha256": digest, "objects": render.render(TEAMS)}
    }


def test_job_objects_golden() -> None:
    rec = record()
    team, pool = TEAMS.team("vision"), TEAMS.pool("a100")
    job = manifests.job_manifest(rec, team=team, pool=pool, image=TEAMS.image("pytorch").image)
    check_golden("job.yaml", render.to_yaml([manifests.service_manifest(rec, team), job]))


def by_kind(kind: str, namespace: str | None = None) -> list[dict]:
    return [
        o
        for o in render.render(TEAMS)
        if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]


def test_namespaces_enforce_restricted_pod_security() -> None:
    for ns in by_kind("Namespace"):
        labels = ns["metadata"]["labels"]
        for mode in ("enforce", "audit", "warn"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"


def test_quota_is_nominal_plus_what_the_cohort_can_lend() -> None:
    # vision: a100 8 + t4 4 nominal; nlp may lend all its t4 (4) but vision has a100 lending
    # capped at 4, and nlp's a100 borrowing capped at 4 -> nlp reaches 8+4 + 4+4 = 20 GPUs.
    quotas = {q["metadata"]["namespace"]: q["spec"]["hard"] for q in by_kind("ResourceQuota")}
    assert quotas["team-nlp"]["requests.nvidia.com/gpu"] == "20"
    assert quotas["team-vision"]["requests.nvidia.com/gpu"] == "24"  # 12 own + nlp's 8 + 4
    assert quotas["team-vision"]["requests.cpu"] == str(96 + 32 + 96 + 32)


def test_limit_range_gives_no_gpu_default() -> None:
    for lr in by_kind("LimitRange"):
        text = yaml.safe_dump(lr)
        assert "nvidia.com/gpu" not in text
        assert set(lr["spec"]["limits"][0]["defaultRequest"]) == {"cpu", "memory"}


def test_cluster_queue_carries_cohort_limits_and_preemption() -> None:
    cq = next(o for o in by_kind("ClusterQueue") if o["metadata"]["name"] == "nlp")
    assert cq["spec"]["cohortName"] == "research"
    a100 = cq["spec"]["resourceGroups"][0]["flavors"][0]
    gpu = next(r for r in a100["resources"] if r["name"] == "nvidia.com/gpu")
    assert gpu == {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4"}
    assert cq["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert cq["spec"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "team-nlp"
    }


def test_job_pod_is_restricted_and_asks_gpus_as_requests_and_limits() -> None:
    rec = record()
    job = manifests.job_manifest(
        rec, team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="img:1"
    )
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert (
        c["resources"]["requests"]["nvidia.com/gpu"]
        == c["resources"]["limits"]["nvidia.com/gpu"]
        == "4"
    )
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["automountServiceAccountToken"] is False
    assert job["spec"]["suspend"] is True and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 2
    assert job["spec"]["activeDeadlineSeconds"] == 7200
    assert "--master-addr=resnet-0a1b2c3d-0.resnet-0a1b2c3d" in c["command"]
    assert pod["subdomain"] == "resnet-0a1b2c3d"
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["TRAINHUB_DATASET_IMAGENET"] == "/datasets/imagenet"
    assert env["TRAINHUB_DATASET_COCO"] == "/datasets/coco"
    ds = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert (
        ds["/datasets/imagenet"]["readOnly"] and ds["/datasets/imagenet"]["subPath"] == "ILSVRC2012"
    )
    assert ds["/datasets/coco"] == {
        "name": "shared",
        "mountPath": "/datasets/coco",
        "readOnly": True,
        "subPath": "datasets/coco",
    }
    assert job["metadata"]["labels"]["trainhub.io/user"] == "ada-40example-2eorg"
    assert job["metadata"]["annotations"]["trainhub.io/user"] == "ada@example.org"


def test_single_worker_cpu_job_has_no_gpu_and_rendezvous_on_loopback() -> None:
    rec = record(resources={"workers": 1, "processes_per_worker": 2}, max_runtime=None, datasets=[])
    job = manifests.job_manifest(
        rec, team=TEAMS.team("vision"), pool=TEAMS.pool("t4"), image="img:1"
    )
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in yaml.safe_dump(c["resources"])
    assert c["resources"]["requests"]["cpu"] == "2"
    assert "--master-addr=127.0.0.1" in c["command"]
    assert "activeDeadlineSeconds" not in job["spec"]
    # The pool's nodes are tainted for GPU jobs; a CPU-only pod without the toleration could
    # never be scheduled there.
    assert job["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_job_dir_off_the_shared_volume_is_refused() -> None:
    rec = record().model_copy(update={"job_dir": "/elsewhere/resnet-0a1b2c3d"})
    with pytest.raises(ValueError, match="not on team vision's shared volume"):
        manifests.job_manifest(
            rec, team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="img:1"
        )


# --- status: Kubernetes objects -> states, sentences, verdicts ------------------------------------
from trainhub.backends.kubernetes import status  # noqa: E402
from trainhub.jobs.states import FailureClass  # noqa: E402
from trainhub.lifecycle.results import Evidence  # noqa: E402

CQ = {
    "metadata": {"name": "vision"},
    "spec": {
        "resourceGroups": [
            {
                "flavors": [
                    {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}
                ]
            }
        ]
    },
    "status": {
        "flavorsReservation": [
            {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "6"}]}
        ]
    },
}


def workload(message: str) -> dict:
    return {
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": message,
                }
            ]
        }
    }


def test_wait_reason_names_the_short_quota_with_figures() -> None:
    wl = workload(
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor a100, 2 more needed"
    )
    assert (
        status.wait_reason(wl, CQ)
        == "waiting for 2 nvidia.com/gpu in pool a100 in ClusterQueue vision (6 of 8 in use)"
    )


def test_wait_reason_for_a_job_that_can_never_fit() -> None:
    wl = workload(
        "couldn't assign flavors to pod set main: "
        "insufficient quota for nvidia.com/gpu in flavor a100, "
        "previously considered podsets requests (0) + current podset request (32) "
        "> maximum capacity (16)"
    )
    assert status.wait_reason(wl, CQ) == (
        "asks for 32 nvidia.com/gpu in pool a100, "
        "more than ClusterQueue vision can ever get (16); ask for less"
    )


def test_wait_reason_is_none_once_admitted() -> None:
    wl = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}}
    assert status.wait_reason(wl, CQ) is None
    assert status.wait_reason(workload("a new message"), None) == "waiting for Kueue: a new message"


def test_job_state_follows_suspend_pods_and_conditions() -> None:
    job = {"spec": {"suspend": True}, "status": {}}
    assert status.job_state(job, []) == JobState.QUEUED
    job["spec"]["suspend"] = False
    assert (
        status.job_state(job, [{"metadata": {}, "status": {"phase": "Pending"}}])
        == JobState.STARTING
    )
    assert (
        status.job_state(job, [{"metadata": {}, "status": {"phase": "Running"}}])
        == JobState.RUNNING
    )
    # Pods done, the Job not yet marked Complete: still running, never back to starting.
    done = [{"metadata": {}, "status": {"phase": "Succeeded"}}] * 2
    assert status.job_state(job, done) == JobState.RUNNING
    job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    assert status.job_state(job, []) == JobState.SUCCEEDED


def ended_pod(name: str, code: int, finished: str, **status_fields: Any) -> dict:
    term = {"exitCode": code, "reason": "Error", "finishedAt": finished}
    return {
        "metadata": {"name": name},
        "status": {
            "phase": "Failed" if code else "Succeeded",
            "containerStatuses": [{"name": "trainer", "state": {"terminated": term}}],
            **status_fields,
        },
    }


def test_a_pod_whose_exit_fails_the_job_fails_it_before_the_job_controller_says_so() -> None:
    """The Job's podFailurePolicy, read from the pods: any non-zero exit but 143 fails it."""
    job = {"metadata": {}, "spec": {"suspend": False}, "status": {}}
    running = {"metadata": {"name": "j-1"}, "status": {"phase": "Running"}}
    first = ended_pod("j-0", 1, "2026-01-01T00:00:01Z")
    later = ended_pod("j-2", 137, "2026-01-01T00:00:05Z")
    assert status.failing_pod(job, [running, later, first]) is first
    assert status.job_state(job, [running, later, first]) == JobState.FAILED
    verdict = status.failure_verdict(job, [later, first], Evidence(), attempt=0)
    assert verdict.failure_class == FailureClass.INFRASTRUCTURE  # exit 1, no rank report

    # Left to the Job controller: a pod stopped from outside (143), one disrupted (preempted,
    # drained), one deleted, any pod of a suspended or deleted Job, and a pod that succeeded.
    stopped = ended_pod("j-0", 143, "2026-01-01T00:00:01Z")
    disruption = [{"type": "DisruptionTarget", "status": "True"}]
    disrupted = ended_pod("j-0", 1, "2026-01-01T00:00:01Z", conditions=disruption)
    deleted = ended_pod("j-0", 1, "2026-01-01T00:00:01Z")
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:02Z"
    done = ended_pod("j-0", 0, "2026-01-01T00:00:01Z")
    for pod in (stopped, disrupted, deleted, done):
        assert status.failing_pod(job, [pod, running]) is None, pod
        assert status.job_state(job, [pod, running]) == JobState.RUNNING, pod
    for held in ({"spec": {"suspend": True}}, {"metadata": {"deletionTimestamp": "now"}}):
        assert status.failing_pod({**job, **held}, [first]) is None


def failed_pod(index: int, code: int, reason: str = "Error") -> dict:
    return {
        "metadata": {"annotations": {"batch.kubernetes.io/job-completion-index": str(index)}},
        "status": {
            "containerStatuses": [{"state": {"terminated": {"exitCode": code, "reason": reason}}}]
        },
    }


def test_failure_verdicts_from_exit_codes_rank_reports_and_deadlines() -> None:
    job = {
        "spec": {"activeDeadlineSeconds": 60},
        "status": {
            "conditions": [{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]
        },
    }
    oom = status.failure_verdict(job, [failed_pod(1, 137, "OOMKilled")], Evidence(), attempt=0)
    assert (oom.failure_class, oom.reason) == (
        FailureClass.INFRASTRUCTURE,
        "worker 1 was killed by the kernel's out-of-memory killer",
    )
    code = status.failure_verdict(
        job,
        [failed_pod(0, 1)],
        Evidence(
            {
                0: {
                    "outcome": "error",
                    "failure_class": "code",
                    "exception": "ZeroDivisionError",
                    "message": "division by zero",
                    "cell_index": 4,
                    "line": 2,
                }
            }
        ),
        attempt=1,
    )
    assert code.failure_class == FailureClass.CODE and code.reason.startswith(
        "ZeroDivisionError in cell 5, line 2"
    )
    # The time limit is a stop (cancelled, as on the local backend), in the local words: its
    # reason and the cell it stopped are test_endings.py's.
    job["status"]["conditions"][0]["reason"] = "DeadlineExceeded"
    late = status.ending_verdict(job, [], Evidence(), attempt=0)
    assert late is not None and late.failure_class == FailureClass.CANCELLED
    assert late.reason == "ran longer than its max runtime (0:01:00)"
    assert status.job_state(job, []) == JobState.CANCELLED


def test_preemptions_are_counted_from_scheduling_stats() -> None:
    wl = {
        "status": {
            "schedulingStats": {
                "evictions": [
                    {"reason": "Preempted", "count": 2},
                    {"reason": "PodsReadyTimeout", "count": 1},
                ]
            }
        }
    }
    assert status.preemptions(wl) == 2
    assert status.preemptions(None) == 0


def test_catalog_offers_the_teams_images_and_pools() -> None:
    from trainhub.backends.kubernetes.backend import KubernetesBackend

    team = TEAMS.teams[0]
    backend = KubernetesBackend(TEAMS, team.name, api_client=object())
    catalog = backend.catalog()
    assert [i["name"] for i in catalog["images"]] == team.images
    assert catalog["teams"] == [{"name": team.name, "queues": list(team.quota), "gpu_shares": []}]
    assert "pip_install" not in {f.value for f in backend.features}


def test_pip_in_notebooks_is_refused_where_the_backend_cannot_install(tmp_path: Path) -> None:
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.jobs.service import JobService

    backend = KubernetesBackend(TEAMS, TEAMS.teams[0].name, api_client=object())
    service = JobService(backend, workspace_root=tmp_path, jobs_root=tmp_path, allow_pip=True)
    assert service.allow_pip is False
    assert service.pip_refused is not None
    assert service.pip_refused.startswith("the kubernetes backend does not run %pip in jobs")


def test_elastic_job_starts_at_min_on_a_c10d_rendezvous() -> None:
    rec = record(resources={"workers": "1:3", "gpus_per_worker": 4})
    job = manifests.job_manifest(rec, team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="i")
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 1
    assert job["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    notes = job["metadata"]["annotations"]
    assert notes["kueue.x-k8s.io/elastic-job"] == "true"
    assert notes["trainhub.io/workers"] == "1:3"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    run = command[command.index("trainhub.rank.agent") :]  # torchrun, its rendezvous kept
    assert "--nnodes=1:3" in run and "--rdzv-backend=c10d" in run
    assert "--rdzv-endpoint=resnet-0a1b2c3d-0.resnet-0a1b2c3d:29500" in run
    assert not any(a.startswith(("--node-rank", "--master-addr")) for a in run)
    assert any(a.startswith("--max-restarts=") and a != "--max-restarts=0" for a in run)
    # each round's rank 0 publishes its own master address (a shared store would not)
    env = {
        e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"
    assert any(a.startswith("--rdzv-conf=") and "last_call_timeout=5" in a for a in run)
    # a fixed size keeps its static rendezvous and no elastic annotation
    fixed = manifests.job_manifest(
        record(), team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="i"
    )
    assert "kueue.x-k8s.io/elastic-job" not in fixed["metadata"]["annotations"]
    assert "successPolicy" not in fixed["spec"]
    assert "--rdzv-backend=static" in fixed["spec"]["template"]["spec"]["containers"][0]["command"]
    fixed_env = fixed["spec"]["template"]["spec"]["containers"][0]["env"]
    assert not any(e["name"] == "TORCH_DISABLE_SHARE_RDZV_TCP_STORE" for e in fixed_env)
