"""The real node beside the kwok nodes: containerd + kubelet run pods, kube-proxy and CoreDNS
serve Services, the device plugin hands out fake GPUs, and Kueue admits onto it."""

from __future__ import annotations

import hashlib
import io
import json
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes import client

from images import build
from tests.fixtures.k8s import CLUSTER_PY, _cluster_module
from tests.k8s.test_cluster import _condition, _workloads, kueue_queues, wait_for

if TYPE_CHECKING:
    from tests.fixtures.k8s import K8sNamespace, RealNode


def real_pod(node: RealNode, name: str, script: str, gpus: int = 0, **spec: Any) -> dict[str, Any]:
    """A busybox pod meant for the real node (its selector and toleration) running `script`."""
    resources: dict[str, Any] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "nodeSelector": {"type": node.labels["type"]},
            "tolerations": [node.toleration],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": node.images["busybox"],
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", script],
                    "resources": resources,
                }
            ],
            **spec,
        },
    }


def finished(core: client.CoreV1Api, ns: str, name: str, timeout: float = 90.0) -> Any:
    """The pod once it Succeeded (its events in the failure message otherwise)."""

    def done() -> Any:
        pod = core.read_namespaced_pod(name, ns)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    try:
        pod = wait_for(f"pod {name} to finish", done, timeout=timeout)
    except AssertionError:
        events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}")
        raise AssertionError(
            f"pod {name} did not finish: " + "; ".join(e.message or "" for e in events.items)
        ) from None
    log = core.read_namespaced_pod_log(name, ns)
    assert pod.status.phase == "Succeeded", f"pod {name} {pod.status.phase}; log:\n{log}"
    return pod, log


def test_real_node_is_ready_beside_kwok_nodes(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    node = core.read_node(k8s_real_node.name)
    assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
    assert node.status.node_info.kubelet_version == "v1.35.3"
    assert node.status.node_info.container_runtime_version.startswith("containerd://")
    assert node.status.allocatable["nvidia.com/gpu"] == "2"
    assert [(t.key, t.effect) for t in node.spec.taints] == [
        ("trainhub.io/real-node", "NoSchedule")
    ]
    assert {k: node.metadata.labels[k] for k in k8s_real_node.labels} == k8s_real_node.labels
    kwok = core.list_node(label_selector="type=kwok").items
    assert sorted(n.metadata.name for n in kwok) == [
        "kwok-a100-0",
        "kwok-a100-1",
        "kwok-t4-0",
        "kwok-t4-1",
    ]


def test_pod_runs_to_completion_and_its_log_is_read_through_the_apiserver(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    core.create_namespaced_pod(
        ns, real_pod(k8s_real_node, "hello", 'echo "hello from $(hostname)"; cat /proc/1/cgroup')
    )
    pod, log = finished(core, ns, "hello")
    assert pod.spec.node_name == k8s_real_node.name
    assert "hello from hello" in log
    # cgroup v1 with the cgroupfs driver: the container sits under the node's cgroup root.
    assert re.search(r"^\d+:memory:/trainhub-node-\d+/kubepods/", log, re.M), log
    prefix = k8s_real_node.subnet.rsplit(".", 1)[0] + "."
    assert pod.status.pod_ip.startswith(prefix)


def test_untolerating_pods_stay_off_the_real_node(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    body = real_pod(k8s_real_node, "no-toleration", "true")
    del body["spec"]["tolerations"]
    core.create_namespaced_pod(k8s_namespace.name, body)

    def unschedulable() -> Any:
        pod = core.read_namespaced_pod("no-toleration", k8s_namespace.name)
        return [c for c in pod.status.conditions or [] if c.reason == "Unschedulable"]

    (cond,) = wait_for("scheduler to refuse the pod", unschedulable)
    assert "untolerated taint" in cond.message


def test_pod_reaches_a_service_by_name_through_cluster_dns_and_kube_proxy(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    server = real_pod(
        k8s_real_node,
        "web",
        "mkdir -p /www && echo served-by-web > /www/index.html && httpd -f -p 8080 -h /www",
    )
    server["spec"]["restartPolicy"] = "Always"
    core.create_namespaced_pod(ns, server)
    core.create_namespaced_service(
        ns,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    cluster_ip = core.read_namespaced_service("web", ns).spec.cluster_ip
    wait_for(
        "web Running",
        lambda: core.read_namespaced_pod("web", ns).status.phase == "Running",
    )
    # busybox-static cannot use glibc's resolver (no NSS modules in the image): nslookup
    # asks the nameserver itself, and wget connects to the address (and port: no service
    # name lookup either) it found; its -T option crashes that build, hence timeout.
    script = (
        "cat /etc/resolv.conf; nslookup web > /tmp/ns; cat /tmp/ns; "
        "ip=$(awk '/^Address: /{a=$2} END{print a}' /tmp/ns); "
        "for i in $(seq 1 20); do timeout 5 wget -q -O- http://$ip:80/ && exit 0; sleep 1; done; "
        "exit 1"
    )
    core.create_namespaced_pod(ns, real_pod(k8s_real_node, "client", script))
    _, log = finished(core, ns, "client")
    assert f"nameserver {k8s_real_node.gateway}" in log
    assert f"search {ns}.svc.cluster.local svc.cluster.local cluster.local" in log
    assert re.search(rf"Name:\s+web\.{ns}\.svc\.cluster\.local\s+Address: {cluster_ip}", log), log
    assert "served-by-web" in log  # through the ClusterIP: kube-proxy's rules


def test_gpu_pod_gets_its_device_and_the_fake_nvml_library(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    core.create_namespaced_resource_quota(
        ns,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
        },
    )
    wait_for(
        "quota counted",
        lambda: core.read_namespaced_resource_quota("gpus", ns).status.hard,
    )
    script = (
        'echo "visible=$NVIDIA_VISIBLE_DEVICES cuda=$CUDA_VISIBLE_DEVICES"; '
        "wc -c < /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1; cat $FAKE_NVML_STATE; "
        "echo end-of-state; sleep 600"
    )
    core.create_namespaced_pod(ns, real_pod(k8s_real_node, "gpu", script, gpus=1))

    def log_written() -> str:
        pod = core.read_namespaced_pod("gpu", ns)
        if pod.status.phase != "Running":
            return ""
        log = core.read_namespaced_pod_log("gpu", ns)
        return log if "end-of-state" in log else ""

    log = wait_for("the GPU pod's log", log_written, timeout=90)
    fleet = dict(line.split("=", 1) for line in k8s_real_node.nvml_state.read_text().splitlines())
    uuids = [fleet[f"gpu{i}.uuid"] for i in range(int(fleet["gpu_count"]))]
    visible = re.search(r"visible=(\S+) cuda=(\S+)", log)
    assert visible and visible.group(1) in uuids and visible.group(2) == "0", log
    assert f"\n{k8s_real_node.nvml_library.stat().st_size}\n" in log
    # NVML in the pod sees its own GPU only, with the node's values for it.
    assert "gpu_count=1" in log and f"gpu0.uuid={visible.group(1)}" in log

    # The quota counts the running pod's device: a second GPU pod is refused.
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod(ns, real_pod(k8s_real_node, "gpu2", "true", gpus=1))
    assert refused.value.status == 403 and "exceeded quota" in refused.value.body
    core.delete_namespaced_pod("gpu", ns, grace_period_seconds=0)


def test_kueue_admits_a_gpu_job_onto_the_real_node(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    batch = client.BatchV1Api(k8s_namespace.api)
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    real = {
        "nodeLabels": {"type": k8s_real_node.labels["type"]},
        "nodeTaints": [k8s_real_node.taint],
        "tolerations": [k8s_real_node.toleration],
    }
    queue = kueue_queues(k8s_namespace, "real", real, cpu="1", memory="1Gi", gpus=2)
    template = real_pod(k8s_real_node, "train", 'echo "gpus=$NVIDIA_VISIBLE_DEVICES"', gpus=2)
    # Kueue injects the flavor's node labels and tolerations: the Job names neither.
    del template["spec"]["nodeSelector"], template["spec"]["tolerations"]
    template.pop("apiVersion"), template.pop("kind")
    template["metadata"] = {"labels": {"app": "train"}}
    batch.create_namespaced_job(
        ns,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"suspend": True, "backoffLimit": 0, "template": template},
        },
    )
    wait_for(
        "Job Complete",
        lambda: any(
            c.type == "Complete" and c.status == "True"
            for c in (batch.read_namespaced_job("train", ns).status.conditions or [])
        ),
        timeout=120,
    )
    (pod,) = core.list_namespaced_pod(ns, label_selector="job-name=train").items
    assert pod.spec.node_name == k8s_real_node.name
    log = core.read_namespaced_pod_log(pod.metadata.name, ns)
    assert re.fullmatch(r"gpus=GPU-\S+,GPU-\S+\n", log), log
    wait_for(
        "Workload Finished",
        lambda: all(_condition(w, "Finished") for w in _workloads(k8s_namespace)),
    )


def test_an_image_archive_imported_with_cluster_py_runs_on_the_node(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace, tmp_path: Path
) -> None:
    ref = f"trainhub.test/imported:{k8s_namespace.name[-6:]}"
    archive = retagged(k8s_real_node.busybox_archive, tmp_path / "imported.tar", ref)
    cli = subprocess.run(
        [
            sys.executable,
            str(CLUSTER_PY),
            "import-image",
            "--dir",
            str(k8s_real_node.cluster_dir),
            str(archive),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.split() == [ref]
    core = client.CoreV1Api(k8s_namespace.api)
    body = real_pod(k8s_real_node, "imported", "echo imported-image-runs")
    body["spec"]["containers"][0]["image"] = ref
    core.create_namespaced_pod(k8s_namespace.name, body)
    _, log = finished(core, k8s_namespace.name, "imported")
    assert log == "imported-image-runs\n"

    missing = subprocess.run(
        [sys.executable, str(CLUSTER_PY), "import-image", "--dir", str(tmp_path), str(archive)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "no real node running" in missing.stderr


def test_the_node_pulls_an_image_pushed_to_a_registry(
    k8s_real_node: RealNode,
    k8s_namespace: K8sNamespace,
    registry: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """images/build.py --push puts an image into a registry (distribution's, on loopback, plain
    HTTP) and the kubelet pulls it from there by digest, as a cluster's nodes pull the curated
    images: nothing is imported into the node's store. The image is the chain's root made from
    busybox and a token instead of mmdebstrap's Debian (seconds, no network; a new digest each
    run, so the pull cannot be skipped)."""
    if k8s_real_node.cluster is None:
        pytest.skip("the cluster was given (TRAINHUB_TEST_KUBECONFIG): its node is not ours")
    token = secrets.token_hex(8)

    def busybox_rootfs(self: build.Builder, target: Path) -> None:
        with tarfile.open(target, "w") as tar:
            tar.add(shutil.which("busybox") or "/bin/busybox", "bin/busybox")
            link = tarfile.TarInfo("bin/sh")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
            info = tarfile.TarInfo("token")
            info.size = len(token)
            tar.addfile(info, io.BytesIO(token.encode()))

    monkeypatch.setattr(build.Builder, "rootfs", busybox_rootfs)
    monkeypatch.setenv("TRAINHUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRAINHUB_IMAGES_STORAGE_DRIVER", "vfs")
    target = f"{registry}/trainhub"
    assert build.main(["debian", "--push", target, "--insecure-registry"]) == 0
    pinned = json.loads(build.Paths.from_env().index.read_text())["images"]["debian"]["pushed"]
    image = pinned[target]  # <registry>/trainhub/debian@sha256:...

    node = _cluster_module()._load_node()
    node.trust_registry(k8s_real_node.cluster.dir / "node", registry)
    core = client.CoreV1Api(k8s_namespace.api)
    body = real_pod(k8s_real_node, "pulled", "cat /token")
    body["spec"]["containers"][0].update(image=image, imagePullPolicy="IfNotPresent")
    core.create_namespaced_pod(k8s_namespace.name, body)
    pod, log = finished(core, k8s_namespace.name, "pulled")
    assert log == token
    (status,) = pod.status.container_statuses
    assert status.image_id.endswith(image.split("@")[1]), status.image_id
    pulled = core.list_namespaced_event(
        k8s_namespace.name, field_selector="involvedObject.name=pulled,reason=Pulled"
    ).items
    assert pulled and "Successfully pulled" in (pulled[0].message or ""), [
        e.message for e in pulled
    ]


def retagged(source: Path, archive: Path, ref: str, cmd: list[str] | None = None) -> Path:
    """The docker archive source (one image) as ref, its config's Cmd replaced if given (a new
    image ID: the config's digest names the image)."""
    with tarfile.open(source) as tin, tarfile.open(archive, "w") as tout:
        manifest = json.loads(tin.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config_name = manifest[0]["Config"]
        config = json.loads(tin.extractfile(config_name).read())  # type: ignore[union-attr]
        if cmd is not None:
            config["config"]["Cmd"] = cmd
        config_bytes = json.dumps(config, sort_keys=True).encode()
        new_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        manifest[0].update(RepoTags=[ref], Config=new_name)
        for member in tin.getmembers():
            if member.name in ("manifest.json", config_name):
                continue
            tout.addfile(member, tin.extractfile(member))
        for name, data in (
            ("manifest.json", json.dumps(manifest).encode()),
            (new_name, config_bytes),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tout.addfile(info, io.BytesIO(data))
    return archive


def test_the_store_keeps_one_build_of_an_image_and_takes_a_changed_one(
    k8s_real_node: RealNode, tmp_path: Path
) -> None:
    """The node's image store outlives nodes: an archive whose images it holds is not imported
    again, one with the same tag but another image ID is, and a new tag of a repository (a
    new build of a curated image) takes the place of the earlier tags."""
    node = _cluster_module()._load_node()
    store = node.RealNode(k8s_real_node.cluster)
    repo = f"trainhub.test/rebuilt-{secrets.token_hex(3)}"
    busybox = k8s_real_node.busybox_archive
    first = retagged(busybox, tmp_path / "first.tar", f"{repo}:one", ["echo", "first"])
    changed = retagged(busybox, tmp_path / "changed.tar", f"{repo}:one", ["echo", "changed"])
    second = retagged(busybox, tmp_path / "second.tar", f"{repo}:two", ["echo", "second"])
    ids = {
        a: node.archive_images(a)[ref]
        for a, ref in ((first, f"{repo}:one"), (changed, f"{repo}:one"), (second, f"{repo}:two"))
    }
    assert len(set(ids.values())) == 3

    def tags() -> dict[str, str | None]:
        listed = subprocess.run(
            ["ctr", "--address", str(store.sock), "-n", "k8s.io", "images", "list", "-q"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        return {r: store._image_id(r) for r in listed if r.startswith(repo)}

    assert store.import_image(first) == [f"{repo}:one"]
    assert tags() == {f"{repo}:one": ids[first]}
    assert store.import_image(changed) == [f"{repo}:one"]
    assert tags() == {f"{repo}:one": ids[changed]}
    assert store.import_image(second) == [f"{repo}:two"]
    assert tags() == {f"{repo}:two": ids[second]}


def test_stopping_the_node_leaves_nothing_behind(
    k8s_real_node: RealNode, k8s_namespace: K8sNamespace
) -> None:
    cluster = k8s_real_node.cluster
    if cluster is None:
        pytest.skip("the cluster was given (TRAINHUB_TEST_KUBECONFIG): not ours to stop")
    core = client.CoreV1Api(k8s_namespace.api)
    ns = k8s_namespace.name
    # A pod still running when the node stops: its network, mounts and cgroups must go too.
    core.create_namespaced_pod(ns, real_pod(k8s_real_node, "sleeper", "sleep 3600"))
    wait_for(
        "sleeper Running",
        lambda: core.read_namespaced_pod("sleeper", ns).status.phase == "Running",
    )
    assert cluster.node_leftovers()  # the check sees a running node
    t0 = time.monotonic()
    assert cluster.stop_node() == []
    assert time.monotonic() - t0 < 60
    cluster.start_node()  # for the tests that follow in this package
    assert core.read_node(k8s_real_node.name).status.allocatable["nvidia.com/gpu"] == "2"
