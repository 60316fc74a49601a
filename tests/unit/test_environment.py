"""A job's environment: an allowlist of the submitter's, the spec's env, trainhub's own."""

from __future__ import annotations

from tests.unit.test_k8s_manifests import TEAMS, record
from trainhub.backends.kubernetes import manifests
from trainhub.backends.local.plan import attempt_of
from trainhub.backends.local.torchrun import rank_environment
from trainhub.jobs.environment import admin_allowed, inherited, is_credential_name, job_environment

# The part of SERVER that the allowlist passes on to a job.
ALLOWLISTED = {
    "PATH": "/usr/bin",
    "HOME": "/home/ada",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "NCCL_DEBUG": "INFO",
    "LD_LIBRARY_PATH": "/opt/lib",
    "VIRTUAL_ENV": "/venv",
}
SERVER = {
    **ALLOWLISTED,
    "JUPYTER_TOKEN": "server-token",
    "JUPYTERHUB_API_TOKEN": "hub-token",
    "JPY_API_TOKEN": "t",
    "JUPYTERHUB_SERVICE_PREFIX": "/user/ada/",
    "AWS_SECRET_ACCESS_KEY": "s",
    "GITHUB_TOKEN": "g",
    "CUDA_API_KEY": "k",
    "KUBECONFIG": "/home/ada/.kube/config",
    "RANDOM_SETTING": "x",
    "TRAINHUB_JOB_ID": "stale",
    "TORCHELASTIC_RUN_ID": "stale",
}


def test_only_allowlisted_names_are_inherited_and_never_a_credential():
    env = inherited(SERVER)
    assert env == ALLOWLISTED


def test_the_admin_extends_the_allowlist_but_not_to_credentials():
    extra = admin_allowed({"TRAINHUB_JOB_ENV_ALLOW": "RANDOM_SETTING, JUPYTER_TOKEN,"})
    assert extra == {"RANDOM_SETTING", "JUPYTER_TOKEN"}
    env = inherited(SERVER, extra)
    assert env["RANDOM_SETTING"] == "x" and "JUPYTER_TOKEN" not in env


def test_the_spec_env_reaches_ranks_and_trainhub_sets_its_own_after_it():
    env = job_environment(
        {"MY_TOKEN": "mine", "TRAINHUB_JOB_ID": "forged"},
        job_id="j1",
        job_dir="/jobs/j1",
        attempt=2,
        resume_from=None,
        dataset_paths={"image-net": "/data/in"},
    )
    assert env["MY_TOKEN"] == "mine"  # what the user sets is theirs to pass
    assert env["TRAINHUB_JOB_ID"] == "j1" and env["TRAINHUB_ATTEMPT"] == "2"
    assert env["TRAINHUB_DATASET_IMAGE_NET"] == "/data/in"
    assert "TRAINHUB_RESUME_FROM" not in env


def test_both_backends_give_a_rank_the_same_trainhub_variables():
    """The Kubernetes pod's env and the local rank's env agree on everything trainhub sets."""
    rec = record(env={"EPOCHS": "3", "MY_SETTING": "1"}, datasets=[])
    team, pool = TEAMS.team("vision"), TEAMS.pool("a100")
    job = manifests.job_manifest(rec, team=team, pool=pool, image="img", resume_from="/ckpt/10")
    container = job["spec"]["template"]["spec"]["containers"][0]
    pod_env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    local = rank_environment(
        attempt_of(rec, python="py", env=SERVER, port=1234, resume="/ckpt/10"), gpus=[0]
    )
    assert {k: v for k, v in local.items() if k in pod_env} == pod_env
    assert pod_env["MY_SETTING"] == "1" and pod_env["TRAINHUB_RESUME_FROM"] == "/ckpt/10"
    assert not any(is_credential_name(k) for k in [*pod_env, *local])


def test_where_pip_installs_is_the_jobs_layer_never_the_submitters_choice():
    submitter = {
        **SERVER,
        "PIP_INDEX_URL": "https://mirror/simple",  # how to find packages: theirs to pass
        "PIP_USER": "1",  # where to put them: never
        "PIP_PREFIX": "/home/ada/.local",
        "PIP_TARGET": "/shared",
        "PIP_ROOT": "/",
    }
    assert {k for k in inherited(submitter) if k.startswith("PIP_")} == {"PIP_INDEX_URL"}
    rec = record(env={}, datasets=[])
    rec.job_dir = "/jobs/j1"
    env = rank_environment(
        attempt_of(rec, python="py", env=submitter, port=1234, resume=None), gpus=[]
    )
    # A cell's own `pip install` goes into the layer already on the rank's path.
    assert (env["PIP_PREFIX"], env["PIP_USER"]) == ("/jobs/j1/env", "0")
    assert env["PYTHONPATH"].startswith("/jobs/j1/env/")
