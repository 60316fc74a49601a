"""Fixtures for tests against a real control plane (kube-apiserver, controller-manager,
scheduler, kwok GPU nodes, Kueue) on 127.0.0.1.

- ``TRAINHUB_TEST_KUBECONFIG=/path`` uses an already running cluster (e.g. one started
  with ``python tests/k8s/cluster/cluster.py start --dir DIR``).
- Otherwise one cluster is started for the session and stopped at its end; its files
  (logs/, state.json) are under pytest's basetemp.
- The tests are skipped only when the binaries have not been built
  (``bash tests/k8s/cluster/build.sh``); a cluster that fails to start is an error.
"""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CLUSTER_PY = Path(__file__).parent / "cluster" / "cluster.py"


def _cluster_module() -> Any:
    name = "trainhub_tests_k8s_cluster"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, CLUSTER_PY)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@dataclass
class K8sCluster:
    kubeconfig: Path
    dir: Path | None  # None when the cluster was given by TRAINHUB_TEST_KUBECONFIG

    def api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


@pytest.fixture(scope="session")
def k8s_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[K8sCluster]:
    given = os.environ.get("TRAINHUB_TEST_KUBECONFIG")
    if given:
        yield K8sCluster(kubeconfig=Path(given), dir=None)
        return
    mod = _cluster_module()
    missing = mod.missing_binaries()
    if missing:
        pytest.skip(
            "k8s test control plane not built (missing in "
            f"{mod.cache_dir()}: {', '.join(missing)}); run: bash tests/k8s/cluster/build.sh"
        )
    cluster = mod.Cluster(tmp_path_factory.mktemp("k8s-cluster"), die_with_parent=True)
    try:
        kubeconfig = cluster.start()
    except mod.ClusterError as e:
        pytest.fail(f"could not start the k8s test control plane: {e}", pytrace=False)
    try:
        yield K8sCluster(kubeconfig=kubeconfig, dir=cluster.dir)
    finally:
        cluster.stop()


def _label_value(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value) or "test"


@dataclass
class K8sNamespace:
    """A fresh namespace for one test, and an admin client for the cluster."""

    name: str
    kubeconfig: Path
    api: Any  # kubernetes.client.ApiClient
    _cleanups: list[Callable[[], None]] = field(default_factory=list)

    def delete_cluster_object(self, group: str, version: str, plural: str, name: str) -> None:
        """Delete a cluster-scoped custom object (e.g. a ClusterQueue) after the test."""
        from kubernetes import client

        def cleanup() -> None:
            try:
                client.CustomObjectsApi(self.api).delete_cluster_custom_object(
                    group, version, plural, name
                )
            except client.ApiException as e:
                if e.status != 404:
                    raise

        self._cleanups.append(cleanup)


@pytest.fixture
def k8s_namespace(
    k8s_cluster: K8sCluster, request: pytest.FixtureRequest
) -> Iterator[K8sNamespace]:
    from kubernetes import client

    api = k8s_cluster.api_client()
    test = _label_value(request.node.name)
    name = f"t-{re.sub(r'[^a-z0-9-]+', '-', test.lower())[:40].strip('-')}-{secrets.token_hex(3)}"
    client.CoreV1Api(api).create_namespace(
        client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name, labels={"trainhub.io/test": test})
        )
    )
    # ServiceAccount admission needs the namespace's "default" account.
    deadline = time.monotonic() + 30
    while True:
        try:
            client.CoreV1Api(api).read_namespaced_service_account("default", name)
            break
        except client.ApiException as e:
            if e.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    ns = K8sNamespace(name=name, kubeconfig=k8s_cluster.kubeconfig, api=api)
    try:
        yield ns
    finally:
        client.CoreV1Api(api).delete_namespace(name, propagation_policy="Background")
        for cleanup in reversed(ns._cleanups):
            cleanup()
        api.close()
