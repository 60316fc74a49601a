"""What a rank's container really sees on a kubelet: the Kubernetes backend's job manifest,
rendered while the server holds its tokens, gives the container the spec's env and trainhub's
variables and nothing of the server's. The local backend's counterpart is
tests/local/test_environment.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubernetes import client

from tests.k8s.test_real_node import finished, real_pod
from tests.unit.test_k8s_manifests import TEAMS, record
from trainhub.backends.kubernetes import manifests
from trainhub.jobs.environment import is_credential_name

if TYPE_CHECKING:
    from tests.fixtures.k8s import K8sNamespace, RealNode

SERVER_SECRETS = {
    "JUPYTER_TOKEN": "server-token",
    "JUPYTERHUB_API_TOKEN": "hub-token",
    "AWS_SECRET_ACCESS_KEY": "server-key",
}
# What the kubelet itself adds to every container: the default Service's address and the
# container's host name. Neither is a credential.
KUBELET_ADDED = ("KUBERNETES_", "HOSTNAME", "HOME", "PATH", "SHLVL", "PWD", "TERM")


def test_a_rank_container_gets_the_spec_env_and_no_server_credential(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace, monkeypatch
) -> None:
    for name, value in SERVER_SECRETS.items():
        monkeypatch.setenv(name, value)
    rec = record(env={"EPOCHS": "3", "MY_TOKEN": "the user's own"}, datasets=[])
    job = manifests.job_manifest(
        rec, team=TEAMS.team("vision"), pool=TEAMS.pool("a100"), image="img", resume_from=None
    )
    rendered = job["spec"]["template"]["spec"]["containers"][0]["env"]

    pod = real_pod(k8s_real_node, "rank-env", "env")
    pod["spec"]["containers"][0]["env"] = rendered
    pod["spec"]["enableServiceLinks"] = job["spec"]["template"]["spec"].get(
        "enableServiceLinks", True
    )
    core = client.CoreV1Api(k8s_namespace.api)
    core.create_namespaced_pod(k8s_namespace.name, pod)
    _, log = finished(core, k8s_namespace.name, "rank-env")
    seen = dict(line.split("=", 1) for line in log.splitlines() if "=" in line)

    assert seen["EPOCHS"] == "3" and seen["MY_TOKEN"] == "the user's own"
    assert seen["TRAINHUB_JOB_ID"] == rec.id
    assert not set(SERVER_SECRETS) & set(seen)
    assert not any(value in log for value in SERVER_SECRETS.values())
    # Past what the spec asked for and what the kubelet adds, only trainhub's own variables.
    others = {
        name for name in seen if name not in rec.spec.env and not name.startswith(KUBELET_ADDED)
    }
    assert not [name for name in others if is_credential_name(name)], sorted(others)
