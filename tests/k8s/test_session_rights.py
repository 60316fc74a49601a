"""A session's rights are a boundary, on a real API server with Kueue and the controller: each
user's session runs as its own ServiceAccount (made with the hub's rights, as the spawner does),
and bo's, with its own token, is refused every change to ada's job (RBAC, or the admission
policy's sentence) while ada's submit, suspend (through the controller), resume and cancel
work. kwok plays the pods."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import glob
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_asyncio.config
import pytest
import yaml
from kubernetes import client, config

from tests.fixtures.k8s import reachable_by_all
from tests.k8s.test_backend import Team, wait_for
from tests.k8s.test_controller import (  # noqa: F401 - the fixture
    Deployment,
    controller_kubeconfig,
    recorded,
    world,
)
from trainhub.backends.kubernetes.apply import apply_objects
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.backends.kubernetes.identity import USER_LABEL, session_account
from trainhub.backends.kubernetes.status import SUSPEND_ANNOTATION
from trainhub.errors import NotFound
from trainhub.jobs import ownership
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.ownership import RunAs
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState
from trainhub_spawner.accounts import ensure_session_account
from trainhub_spawner.hub_objects import hub_objects
from trainhub_spawner.user_ids import ensure_user_id

KUEUE = ("kueue.x-k8s.io", "v1beta2")
FIRST_ID = 100000  # the teams file's controller.first_user_id, by default


class Session:
    """A user's session: the trainhub service as the server extension runs it, and the raw
    API clients, all with the user's own ServiceAccount token."""

    def __init__(self, team: Team, user: str, kubeconfig: Path, workspace: Path, uid: int):
        self.user, self.ns, self.kubeconfig, self.uid = user, team.ns, kubeconfig, uid
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.batch, self.core = client.BatchV1Api(self.api), client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.backend = KubernetesBackend(
            team.backend.teams, team.ns, api_client=self.api, run_as=RunAs(uid, uid)
        )
        self.service = JobService(
            self.backend, workspace_root=workspace, jobs_root=self.backend.jobs_root
        )

    def member(self) -> contextlib.AbstractContextManager[None]:
        """Files touched as the session's process touches them: as its member's ids."""
        return ownership.acting_as(RunAs(self.uid, self.uid))

    def submit(self, name: str) -> str:
        spec = {
            "name": name,
            "source": {"path": "train.py"},
            "team": self.ns,
            "resources": {"workers": 2, "gpus_per_worker": 1},
        }
        with self.member():
            return self.service.submit(spec, user=self.user).id


@pytest.fixture
def hub_ns(k8s_namespace: Any) -> Iterator[str]:
    core = client.CoreV1Api(k8s_namespace.api)
    name = f"{k8s_namespace.name}-hub"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_service_account(name, {"metadata": {"name": "hub"}})
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def sessions_made_by_the_hub(
    team: Team, deployment: Deployment, hub_ns: str, users: list[str], tmp: Path
) -> list[Session]:
    """The hub's objects applied, then each user's account and id made by the spawner's steps
    with the hub's token."""
    admin = deployment.k8s
    apply_objects(admin.api, hub_objects(deployment.teams, hub_ns))
    hub = controller_kubeconfig(admin.api, admin.kubeconfig, hub_ns, tmp / "hub", "hub")
    first = deployment.teams.controller.first_user_id  # type: ignore[union-attr]

    async def spawner_step(user: str) -> int:
        api = await kubernetes_asyncio.config.new_client_from_config(config_file=str(hub))
        async with api:
            ids = []
            for _ in range(2):  # a second spawn keeps what the first made
                await ensure_session_account(api, team.backend.team, user)
                ids.append(await ensure_user_id(api, team.backend.team, user, first))
            assert ids[0] == ids[1], ids
            return ids[0]

    sessions = []
    for user in users:
        uid = asyncio.run(spawner_step(user))
        kubeconfig = controller_kubeconfig(
            admin.api, admin.kubeconfig, team.ns, tmp / user, session_account(user)
        )
        ca_readable_by_members(kubeconfig)
        sessions.append(Session(team, user, kubeconfig, tmp / "workspace", uid))
    return sessions


def ca_readable_by_members(kubeconfig: Path) -> None:
    """The cluster's CA where a connection made as a member reads it (a session pod's is its
    service account's, readable by its user); the test cluster's lies in root's folder."""
    config_data = yaml.safe_load(kubeconfig.read_text())
    for entry in config_data["clusters"]:
        ca = Path(entry["cluster"]["certificate-authority"])
        copy_ = kubeconfig.with_name(kubeconfig.name + ".ca.crt")
        copy_.write_bytes(ca.read_bytes())
        copy_.chmod(0o444)
        entry["cluster"]["certificate-authority"] = str(copy_)
    kubeconfig.write_text(yaml.safe_dump(config_data))


def refused(what: str, call: Callable[[], Any], says: str | None = None) -> str:
    """``call`` answers 403 (saying ``says``, when given); the refusal's body."""
    with pytest.raises(client.ApiException) as raised:
        call()
    assert raised.value.status == 403, (what, raised.value.status, raised.value.body)
    if says is not None:
        assert says in raised.value.body, (what, raised.value.body)
    return raised.value.body


def kubectl() -> str | None:
    cached = glob.glob(os.path.expanduser("~/.cache/trainhub/k8s/*/bin/kubectl"))
    return cached[0] if cached else shutil.which("kubectl")


def test_a_teammates_session_cannot_touch_a_users_job_which_the_user_runs_to_its_end(
    world: tuple[Team, Deployment],  # noqa: F811 - the fixture, imported above
    hub_ns: str,
    tmp_path: Path,
    environment_reachable_by_members: None,
) -> None:
    team, deployment = world
    reachable_by_all(tmp_path)  # the team volume and the workspace, as members reach them
    (tmp_path / "workspace").mkdir(exist_ok=True)
    deployment.start("solo")
    ada, bo = sessions_made_by_the_hub(team, deployment, hub_ns, ["ada", "bo"], tmp_path)
    assert ada.backend.controlled and bo.backend.controlled

    job_id = ada.submit("mine")
    recorded(team, job_id, JobState.RUNNING)
    job = ada.batch.read_namespaced_job(job_id, team.ns)
    assert job.metadata.labels[USER_LABEL] == "ada"
    selector = f"trainhub.io/job-id={job_id}"
    pod = ada.core.list_namespaced_pod(team.ns, label_selector=selector).items[0]
    workload = wait_for(
        "ada's Workload",
        lambda: ada.custom.list_namespaced_custom_object(
            *KUEUE,
            team.ns,
            "workloads",
            label_selector=f"kueue.x-k8s.io/job-uid={job.metadata.uid}",
        )["items"],
    )[0]

    # bo reads the team's jobs, and changes none of ada's.
    assert bo.batch.read_namespaced_job(job_id, team.ns).metadata.uid == job.metadata.uid
    policy = "belongs to trainhub.io/user=ada"
    refused("delete ada's Job", lambda: bo.batch.delete_namespaced_job(job_id, team.ns), policy)
    refused(
        "patch ada's Job",
        lambda: bo.batch.patch_namespaced_job(
            job_id, team.ns, {"metadata": {"annotations": {SUSPEND_ANNOTATION: "mine now"}}}
        ),
        policy,
    )
    refused(
        "relabel ada's Job as bo's",
        lambda: bo.batch.patch_namespaced_job(
            job_id, team.ns, {"metadata": {"labels": {USER_LABEL: "bo"}}}
        ),
        policy,
    )
    refused(
        "delete ada's Service", lambda: bo.core.delete_namespaced_service(job_id, team.ns), policy
    )
    refused(
        "suspend ada's job through trainhub's backend",
        lambda: bo.backend.suspend(job_id, "mine now"),
        policy,
    )

    as_ada = bo.api.sanitize_for_serialization(job)
    as_ada["metadata"] = {"name": "not-ada", "labels": job.metadata.labels}
    for key in ("selector", "manualSelector"):
        as_ada["spec"].pop(key, None)
    as_ada["spec"]["template"]["metadata"]["labels"] = {"trainhub.io/job-id": "not-ada"}
    refused(
        "create a Job labelled as ada's",
        lambda: bo.batch.create_namespaced_job(team.ns, as_ada),
        "trainhub.io/user=bo (its own user): not ada",
    )
    # bo's own Job in every other respect (its label, its member's ids), each change below
    # the one thing refused.
    mine = copy.deepcopy(as_ada)
    mine["metadata"]["labels"][USER_LABEL] = "bo"
    mine["spec"]["template"]["spec"]["securityContext"].update(runAsUser=bo.uid, runAsGroup=bo.uid)
    as_bo = copy.deepcopy(mine)
    as_bo["spec"]["template"]["spec"]["serviceAccountName"] = session_account("ada")
    refused(
        "create a Job whose pods hold ada's token",
        lambda: bo.batch.create_namespaced_job(team.ns, as_bo),
        "run as the namespace's default ServiceAccount",
    )

    # Each member's Jobs run as the member's own ids, which the hub gave in turn: bo's Job
    # may take neither ada's nor any group that would reach another member's files.
    assert (ada.uid, bo.uid) == (FIRST_ID, FIRST_ID + 1)
    assert job.spec.template.spec.security_context.run_as_user == ada.uid
    for what, change, says in (
        ("as ada", {"runAsUser": ada.uid}, f"runAsUser and runAsGroup {bo.uid}"),
        ("in ada's group", {"runAsGroup": ada.uid}, f"runAsUser and runAsGroup {bo.uid}"),
        ("with ada's group beside", {"supplementalGroups": [ada.uid]}, "supplementary group"),
        ("with an fsGroup", {"fsGroup": ada.uid}, "no fsGroup"),
    ):
        sneaky = copy.deepcopy(mine)
        sneaky["spec"]["template"]["spec"]["securityContext"].update(change)
        refused(
            f"create a Job of bo's {what}",
            lambda sneaky=sneaky: bo.batch.create_namespaced_job(team.ns, sneaky),
            says,
        )
    container_as_ada = copy.deepcopy(mine)
    container_as_ada["spec"]["template"]["spec"]["containers"][0]["securityContext"].update(
        runAsUser=ada.uid
    )
    refused(
        "create a Job of bo's whose container runs as ada",
        lambda: bo.batch.create_namespaced_job(team.ns, container_as_ada),
        "every container",
    )

    # bo's own Job may say whatever it likes in its annotations: it is no job of ada's.
    posing = copy.deepcopy(mine)
    posing["metadata"]["annotations"] = {
        **job.metadata.annotations,
        "trainhub.io/job-dir": str(bo.backend.jobs_root / "not-ada"),
    }
    bo.batch.create_namespaced_job(team.ns, posing)
    with pytest.raises(NotAJobFile, match=r"trainhub\.io/user label is not its user's"):
        bo.backend.get("not-ada")
    bo.batch.delete_namespaced_job("not-ada", team.ns, propagation_policy="Background")

    refused("delete ada's pod", lambda: bo.core.delete_namespaced_pod(pod.metadata.name, team.ns))
    refused(
        "patch ada's pod",
        lambda: bo.core.patch_namespaced_pod(
            pod.metadata.name, team.ns, {"metadata": {"labels": {"x": "y"}}}
        ),
    )
    refused(
        "deactivate ada's Workload",
        lambda: bo.custom.patch_namespaced_custom_object(
            *KUEUE, team.ns, "workloads", workload["metadata"]["name"], {"spec": {"active": False}}
        ),
    )
    if (binary := kubectl()) is not None:
        done = subprocess.run(
            [binary, f"--kubeconfig={bo.kubeconfig}", "-n", team.ns, "delete", "job", job_id],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0 and policy in done.stderr, done
    assert ada.batch.read_namespaced_job(job_id, team.ns).metadata.uid == job.metadata.uid

    # ada's own: suspend (the session marks its Job, the controller deactivates the Workload),
    # resume, cancel.
    with ada.member():
        ada.service.suspend(job_id, user="ada", reason="lunch")
    recorded(team, job_id, JobState.SUSPENDED)
    with ada.member():
        ada.service.resume(job_id, user="ada")
    recorded(team, job_id, JobState.RUNNING)
    with ada.member():
        assert ada.service.describe(job_id, user="ada").attempt == 1
        ada.service.cancel(job_id, user="ada", reason="enough")
    wait_for(
        "ada's Job gone",
        lambda: not ada.batch.list_namespaced_job(team.ns, label_selector=selector).items,
    )
    with ada.member():
        assert ada.service.describe(job_id, user="ada").state == JobState.CANCELLED
    # Its directory is ada's alone: the controller wrote there as ada, bo reads nothing of it.
    jobdir = team.backend.jobs_root / job_id
    assert {ownership.owner_of(p).user for p in [jobdir, *jobdir.rglob("*")]} == {ada.uid}
    with bo.member(), pytest.raises(PermissionError):
        (jobdir / "events.jsonl").read_bytes()
    with bo.member(), pytest.raises(NotFound):  # to bo, no such job
        bo.service.describe(job_id, user="bo")
