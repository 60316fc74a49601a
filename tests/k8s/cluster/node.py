"""One real Kubernetes node beside the kwok nodes: containerd + runc + CNI bridge, kubelet,
kube-proxy, CoreDNS (cluster DNS on the node's bridge) and a device plugin advertising fake
``nvidia.com/gpu`` devices backed by the fake NVML library of tests/fixtures/fake_nvml.

Everything lives under ``<cluster dir>/node`` (containerd's state and socket, the kubelet's
root, CNI config and IPAM, configs, the per-container fake NVML state) except containerd's
root, the machine's image store (``store_dir``: one node runs at a time, and importing the
curated images takes minutes a node), and what the kernel keeps: the bridge, the pods'
network namespaces (mounted under containerd's state dir), iptables rules, cgroups under
``/<cgroup hierarchy>/trainhub-node-<n>`` and the sysctls the kubelet sets. ``stop`` removes
each of them and ``leftovers`` says what is still there.

kube-proxy's iptables chains have fixed names (KUBE-*), so one real node runs per machine:
a lock (held by the node's processes through an inherited file descriptor) says whose it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NODE_NAME = "real-0"
NODE_LABELS = {
    "type": "real",
    "trainhub.io/pool": "real",
    "nvidia.com/gpu.product": "Fake-NVML-GPU",
}
# Only pods that tolerate this land on the real node; kwok nodes keep every other pod.
NODE_TAINT = {"key": "trainhub.io/real-node", "value": "true", "effect": "NoSchedule"}
GPU_RESOURCE = "nvidia.com/gpu"
GPU_COUNT = 2
# One more fake GPU, shared as a pool's `sharing` says, the way NVIDIA's device plugin does
# with time-slicing and renameByDefault: `replicas` units of nvidia.com/gpu.shared. The whole
# GPUs stay whole; only pods that request the shared resource get a replica.
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
SHARED_SHARING = {"strategy": "time-slicing", "replicas": 4}
CONTAINERD_NAMESPACE = "k8s.io"  # the namespace the CRI plugin (and so the kubelet) uses
CLUSTER_DOMAIN = "cluster.local"
CNI_BIN = Path("/usr/lib/cni")
# Pod subnets 10.250.<n>.0/24, bridge thub<n>; n is picked free on this machine.
SUBNET_RANGE = range(1, 250)
LOCK_FILE = Path("/run/trainhub-k8s-real-node.lock")
# What the kubelet writes when protectKernelDefaults is false, and CNI's gateway forwarding.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
)
# Stopped last to first; containerd outlives its clients so their pods can be torn down.
NODE_COMPONENTS = (
    "containerd",
    "kubelet",
    "kube-proxy",
    "coredns",
    "api-forward",
    "device-plugin",
    "device-plugin-shared",
)
NODE_BINARIES = ("kubelet", "kube-proxy", "coredns", "pause", "trainhub-device-plugin")
HOST_TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip", "busybox")
# Unix socket paths are limited to 108 bytes.
MAX_SOCKET_PATH = 100
# The kubelet's device manager serves its registration socket at this fixed path (not under
# --root-dir), so the device plugin's socket and the kubelet's checkpoint live there too.
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
MACHINE_DIRS = tuple(
    Path(d)
    for d in (
        "/var/lib/kubelet",  # the kubelet
        "/var/log/containers",  # the kubelet's links to container logs
        "/run/containerd",  # containerd: its shims' sockets
        "/run/containerd/s",
        "/var/lib/cni",  # containerd's CNI library: its result cache
        "/var/lib/cni/results",
    )
)


def store_dir(base: Path) -> Path:
    """containerd's root (content, snapshots, metadata) kept from node to node on this machine:
    each node would otherwise import the curated images again (pytorch-cpu: 6 GB, ~90 s)."""
    return base.parent / "node-store"


def archive_images(archive: Path) -> dict[str, str]:
    """{image reference: image ID (its config's digest)} a docker archive holds (manifest.json);
    {} for an OCI archive, which names no references."""
    with tarfile.open(archive) as tar:
        try:
            member = tar.extractfile("manifest.json")
        except KeyError:
            return {}
        assert member is not None
        manifest = json.load(member)
    return {
        ref: "sha256:" + Path(entry["Config"]).name.removesuffix(".json")
        for entry in manifest
        for ref in entry.get("RepoTags") or []
    }


def registry_hosts(node_dir: Path) -> Path:
    """The node's containerd hosts directory (``<host:port>/hosts.toml`` per registry)."""
    return node_dir / "containerd" / "certs.d"


def trust_registry(node_dir: Path, address: str) -> None:
    """Let the node's kubelet pull from the registry at ``address`` over plain HTTP (a registry
    on loopback has no certificate), as a cluster's admin configures a private registry."""
    hosts = registry_hosts(node_dir) / address
    hosts.mkdir(parents=True, exist_ok=True)
    hosts.joinpath("hosts.toml").write_text(
        f'server = "http://{address}"\n\n[host."http://{address}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
    )


class NodeError(RuntimeError):
    """The real node could not be started or cleaned up; the message says which part."""


def _load(name: str, path: Path) -> Any:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


images = _load("trainhub_tests_k8s_images", HERE / "images.py")


def fake_nvml_library(cache: Path) -> Path:
    """The fake libnvidia-ml.so.1 the tests build (tests/fixtures/fake_nvml/build.py)."""
    build = _load("trainhub_tests_fake_nvml_build", REPO / "tests/fixtures/fake_nvml/build.py")
    return build.build_library(cache) / build.SONAME


def deviceplugin_hash() -> str:
    """The hash build.sh records for the device plugin source (same listing, same digest)."""
    src = HERE / "deviceplugin"
    files = sorted(
        (str(p.relative_to(src)) for p in src.rglob("*") if p.is_file()),
        key=lambda s: s.encode(),
    )
    listing = "".join(
        f"{hashlib.sha256((src / f).read_bytes()).hexdigest()}  ./{f}\n" for f in files
    )
    return hashlib.sha256(listing.encode()).hexdigest()[:16]


def sharing_flags(sharing: dict[str, Any]) -> list[str]:
    """The device plugin's flags that share its GPUs as a pool's ``sharing`` says (the teams
    file's ``pools[i].sharing``); time-slicing only: a fake GPU has no MIG partitions."""
    if sharing.get("strategy") != "time-slicing":
        raise NodeError(f"the fake device plugin time-slices GPUs only, not {sharing!r}")
    return [f"-resource={SHARED_GPU_RESOURCE}", f"-replicas={int(sharing['replicas'])}"]


def fake_gpu_lines(indices: range) -> list[str]:
    """A fake NVML state file's lines naming these GPUs (their index in the file from 0)."""
    lines = ["driver_version=550.54.15", f"gpu_count={len(indices)}"]
    for n, i in enumerate(indices):
        lines += [
            f"gpu{n}.name=Fake NVML GPU",
            f"gpu{n}.uuid=GPU-{i:08x}-7e57-4000-8000-{i:012x}",
            f"gpu{n}.memory_total={80 << 30}",
            f"gpu{n}.memory_used={i << 30}",
        ]
    return lines


def missing_node_parts(base: Path) -> list[str]:
    """What build.sh (binaries) or its apt step (host tools) has not provided yet."""
    missing = [b for b in NODE_BINARIES if not os.access(base / "bin" / b, os.X_OK)]
    stamp = base / "bin" / "trainhub-device-plugin.source"
    if "trainhub-device-plugin" not in missing and (
        not stamp.exists() or stamp.read_text().strip() != deviceplugin_hash()
    ):
        missing.append("trainhub-device-plugin (source changed)")
    missing += [t for t in HOST_TOOLS if shutil.which(t) is None]
    if not (CNI_BIN / "bridge").exists():
        missing.append(str(CNI_BIN / "bridge"))
    return missing


def _run(argv: list[str], check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and proc.returncode != 0:
        raise NodeError(f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def _accepts(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name


def _cgroup_hierarchies() -> list[Path]:
    """The mounted cgroup hierarchies (v1 controllers, and the unified one of hybrid mode)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.split()[0] in ("cgroup", "cgroup2"):
            out.append(Path(pre.split()[4]))
    return out


def _mounts_under(root: Path) -> list[Path]:
    """Mount points at or below root, deepest first."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = Path(line.split()[4].encode().decode("unicode_escape"))
        if point == root or point.is_relative_to(root):
            found.append(point)
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def _iptables_chains(tool: str) -> dict[str, list[str]]:
    """table -> its `-S` lines, for the tables that exist."""
    out = {}
    for table in ("filter", "nat", "mangle", "raw"):
        proc = _run([tool, "-w", "-t", table, "-S"], check=False)
        if proc.returncode == 0:
            out[table] = proc.stdout.splitlines()
    return out


class RealNode:
    """The real node of one cluster; its state lives in the cluster's state.json ("node")."""

    def __init__(self, cluster: Any):  # cluster.Cluster: its processes, PKI and API
        self.cluster = cluster
        self.dir = cluster.dir / "node"
        self.bin = cluster.bin
        self.sock = self.dir / "run" / "containerd.sock"
        self.kubelet_root = self.dir / "kubelet"
        self.store = store_dir(cluster.base)
        self.plugin_dir = DEVICE_PLUGIN_DIR

    @property
    def state(self) -> dict[str, Any]:
        return self.cluster.state.setdefault("node", {})

    # ---- start

    def start(self, deadline: float, gpus: int = GPU_COUNT) -> None:
        missing = missing_node_parts(self.cluster.base)
        if missing:
            raise NodeError(
                f"the real node is not built (missing: {', '.join(missing)}); "
                "run: bash tests/k8s/cluster/build.sh"
            )
        longest = Path(str(self.sock) + ".ttrpc")
        if len(str(longest)) > MAX_SOCKET_PATH:
            raise NodeError(f"cluster directory too deep for unix sockets: {longest}")
        mounted = self._mounts()
        if mounted:
            raise NodeError(f"{mounted[0]} is still mounted: stop the previous node first")
        lock = self._lock()
        try:
            shutil.rmtree(self.dir, ignore_errors=True)
            for sub in ("run", "containerd", "cni/net.d", "cni/ipam", "kubelet", "nvml/alloc"):
                (self.dir / sub).mkdir(parents=True, exist_ok=True)
            self._network()
            self._kernel_settings()
            self._start_containerd(deadline, lock)
            self._import_images()
            self._write_cni()
            self._credentials()
            self._start_kubelet(deadline, lock)
            self._start_kube_proxy(deadline)
            self._start_coredns(deadline)
            self._publish_api(deadline)
            self._start_device_plugin(deadline, gpus)
        finally:
            os.close(lock)  # the node's processes hold it from here on
        self.state["ready"] = True
        self.cluster._save()

    def _mounts(self) -> list[Path]:
        """What is mounted under the node's directory or its image store, deepest first."""
        return _mounts_under(self.dir) + _mounts_under(self.store)

    def _lock(self) -> int:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = Path(str(LOCK_FILE) + ".owner")
            who = owner.read_text().strip() if owner.exists() else "another cluster"
            os.close(fd)
            raise NodeError(
                f"this machine's real node is in use by {who} (kube-proxy's iptables chains "
                "are per machine); stop that cluster first"
            ) from None
        Path(str(LOCK_FILE) + ".owner").write_text(f"{self.cluster.dir}\n")
        return fd

    def _network(self) -> None:
        taken = set()
        for line in _run(["ip", "-o", "-4", "addr", "show"]).stdout.splitlines():
            taken.add(ipaddress.ip_interface(line.split()[3]).network)
        for line in _run(["ip", "-o", "-4", "route", "show"]).stdout.splitlines():
            dst = line.split()[0]
            if dst != "default":
                taken.add(ipaddress.ip_network(dst, strict=False))
        links = {
            line.split(":")[1].strip().split("@")[0]
            for line in _run(["ip", "-o", "link", "show"]).stdout.splitlines()
        }
        for n in SUBNET_RANGE:
            subnet = ipaddress.ip_network(f"10.250.{n}.0/24")
            bridge = f"thub{n}"
            if bridge not in links and not any(subnet.overlaps(t) for t in taken):
                break
        else:
            raise NodeError("no free 10.250.<n>.0/24 subnet for the node's bridge")
        gateway = str(subnet[1])
        self.state.update(
            bridge=bridge,
            subnet=str(subnet),
            gateway=gateway,
            cgroup_root=f"/trainhub-node-{n}",
            network=f"trainhub-{n}",
        )
        self.cluster._save()
        # Made here, not by the CNI plugin at the first pod: CoreDNS binds to its address.
        _run(["ip", "link", "add", bridge, "type", "bridge"])
        _run(["ip", "addr", "add", f"{gateway}/{subnet.prefixlen}", "dev", bridge])
        _run(["ip", "link", "set", bridge, "up"])

    def _kernel_settings(self) -> None:
        # Directories of the machine the kubelet and containerd create whatever their
        # configuration says; stop removes those this node made (once empty).
        self.state["made_dirs"] = [
            str(d) for d in (*MACHINE_DIRS, DEVICE_PLUGIN_DIR) if not d.exists()
        ]
        self.state["sysctls"] = {
            name: _sysctl_path(name).read_text().strip()
            for name in SYSCTLS
            if _sysctl_path(name).exists()
        }
        root = self.state["cgroup_root"].lstrip("/")
        for h in _cgroup_hierarchies():
            d = h / root
            d.mkdir(exist_ok=True)
            if (h / "cpuset.cpus").exists():  # a v1 cpuset child starts empty
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (d / f).write_text((h / f).read_text())
        self.cluster._save()

    def _start_containerd(self, deadline: float, lock: int) -> None:
        c = self.dir / "containerd"
        cri = {
            "sandbox_image": "",  # set below, once the pause image is known
            "stream_server_address": "127.0.0.1",
            "stream_server_port": "0",
            "enable_selinux": False,
            "netns_mounts_under_state_dir": True,
            # Root here lacks CAP_SYS_RESOURCE: no container may ask for an oom_score_adj
            # below containerd's own (the kubelet asks -998 for sandboxes).
            "restrict_oom_score_adj": True,
            "containerd": {
                "snapshotter": "overlayfs",
                "default_runtime_name": "runc",
                "runtimes": {
                    "runc": {
                        "runtime_type": "io.containerd.runc.v2",
                        # runc's state beside containerd's, not in /run/containerd/runc.
                        "options": {"SystemdCgroup": False, "Root": str(c / "runc")},
                    }
                },
            },
            "cni": {"bin_dir": str(CNI_BIN), "conf_dir": str(self.dir / "cni" / "net.d")},
            # Registries as containerd's hosts directory describes them, read at each pull:
            # trust_registry adds one (a test's registry on loopback, plain HTTP).
            "registry": {"config_path": str(registry_hosts(self.dir))},
        }
        pause_version = (self.cluster.base / "pause.version").read_text().strip()
        archive, ref = images.pause_image(
            self.cluster.base.parent / "images", self.bin / "pause", pause_version
        )
        cri["sandbox_image"] = ref
        self.state["images"] = {"pause": ref}
        self.state["pause_archive"] = str(archive)
        config = {
            "version": 2,
            "root": str(self.store),
            "state": str(c / "state"),
            "grpc": {"address": str(self.sock)},
            "ttrpc": {"address": str(self.sock) + ".ttrpc"},
            "disabled_plugins": [
                "io.containerd.snapshotter.v1.btrfs",
                "io.containerd.snapshotter.v1.zfs",
                "io.containerd.snapshotter.v1.aufs",
                "io.containerd.snapshotter.v1.devmapper",
                "io.containerd.tracing.processor.v1.otlp",
                "io.containerd.internal.v1.tracing",
            ],
            "plugins": {
                "io.containerd.grpc.v1.cri": cri,
                "io.containerd.internal.v1.opt": {"path": str(c / "opt")},
            },
        }
        path = c / "config.toml"
        path.write_text(_toml(config))
        # For image builders: where to import images so that the kubelet sees them.
        self.state["containerd"] = {"address": str(self.sock), "namespace": CONTAINERD_NAMESPACE}
        self.store.mkdir(parents=True, exist_ok=True)
        self._spawn_containerd(path, deadline, lock)
        if self._ctr("containers", "list", "--quiet").stdout.split():
            # A node that died without stopping left its pods in the store, and the CRI
            # plugin has loaded them: start again from an empty store.
            self.cluster._stop_process("containerd", self.cluster.state["processes"]["containerd"])
            self._kill_shims()
            shutil.rmtree(self.store)
            self.store.mkdir()
            self._spawn_containerd(path, deadline, lock)

    def _spawn_containerd(self, config: Path, deadline: float, lock: int) -> None:
        self.cluster._spawn(
            "containerd",
            [shutil.which("containerd") or "containerd", f"--config={config}", "--log-level=info"],
            pass_fds=(lock,),
        )
        self.cluster._wait(
            "containerd",
            lambda: self._ctr("version", check=False).returncode == 0,
            deadline,
            what="containerd answering on its socket",
        )

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(
            ["ctr", "--address", str(self.sock), "--namespace", CONTAINERD_NAMESPACE, *args],
            check=check,
        )

    def import_image(
        self, archive: str | os.PathLike[str], base_name: str | None = None
    ) -> list[str]:
        """Import an OCI or docker archive into the node's containerd; the names it holds.

        A docker archive names its images (RepoTags); an OCI archive whose
        ``org.opencontainers.image.ref.name`` is only a tag needs ``base_name``
        (e.g. ``trainhub.test/runtime``, giving ``trainhub.test/runtime:<tag>``)."""
        archive = Path(archive)
        if not archive.is_file():
            raise NodeError(f"{archive}: no such image archive")
        if not self.sock.exists():
            raise NodeError(f"no real node running in {self.cluster.dir} ({self.sock} is absent)")
        held = archive_images(archive)
        if held and all(self._image_id(ref) == image_id for ref, image_id in held.items()):
            return list(held)  # the store has these very images
        self._forget_older_builds(held)
        extra = ["--base-name", base_name] if base_name else []
        out = self._ctr("images", "import", *extra, str(archive)).stdout
        # ctr prints "unpacking <name> (sha256:...)...done" for each image it imported.
        names = [line.split()[1] for line in out.splitlines() if line.startswith("unpacking ")]
        self._forget_other_tags(names)
        return names

    def _forget_other_tags(self, names: list[str]) -> None:
        """Remove the store's other tags of these repositories, so that containerd collects
        their layers: each build of a curated image is also tagged with its content hash, and
        the store outlives nodes (a pytorch-cpu build is ~13 GB there)."""
        repositories = {name.rsplit(":", 1)[0] for name in names}
        listed = self._ctr("images", "list", "--quiet").stdout.split()
        stale = [r for r in listed if r.rsplit(":", 1)[0] in repositories and r not in names]
        if stale:
            self._ctr("images", "remove", *stale)

    def _forget_older_builds(self, held: dict[str, str]) -> None:
        """Before an import, remove the store's other builds of the archive's repositories and
        wait for containerd to collect their layers: the store then never holds two builds of
        a curated image (~13 GB each for pytorch-cpu) at once, which a small disk cannot."""
        repositories = {ref.rsplit(":", 1)[0] for ref in held}
        listed = self._ctr("images", "list", "--quiet").stdout.split()
        older = [
            r
            for r in listed
            if r.rsplit(":", 1)[0] in repositories and self._image_id(r) != held.get(r)
        ]
        if older:
            self._ctr("images", "remove", "--sync", *older)

    def _image_id(self, ref: str) -> str | None:
        """The image ID (config digest) of ref in the store, or None when it is not there."""
        listed = self._ctr("images", "list", f"name=={ref}").stdout.splitlines()[1:]
        if not listed:
            return None
        target = json.loads(self._ctr("content", "get", listed[0].split()[2]).stdout)
        if "manifests" in target:  # an index: its first manifest
            digest = target["manifests"][0]["digest"]
            target = json.loads(self._ctr("content", "get", digest).stdout)
        return target["config"]["digest"]

    def _import_images(self) -> None:
        self.import_image(self.state["pause_archive"])
        archive, ref = images.busybox_image(self.cluster.base.parent / "images")
        self.import_image(archive)
        self.state["images"]["busybox"] = ref
        self.state["busybox_archive"] = str(archive)
        self.cluster._save()

    def _write_cni(self) -> None:
        s = self.state
        conf = {
            "cniVersion": "1.0.0",
            "name": s["network"],
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": s["bridge"],
                    "isGateway": True,
                    "ipMasq": True,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": s["subnet"], "gateway": s["gateway"]}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.dir / "cni" / "ipam"),
                    },
                },
                {"type": "loopback"},
            ],
        }
        (self.dir / "cni" / "net.d" / "10-trainhub.conflist").write_text(json.dumps(conf, indent=2))

    def _credentials(self) -> None:
        """Client certificates (kubelet, kube-proxy, CoreDNS), kubelet serving certificate."""
        c, pki = self.cluster, self.cluster.pki
        users = {
            "kubelet": (f"system:node:{NODE_NAME}", "system:nodes"),
            "kube-proxy": ("system:kube-proxy", None),  # bound to system:node-proxier
            "coredns": ("trainhub-test:coredns", None),
        }
        for name, (cn, org) in users.items():
            crt, key = pki.issue(name, cn, org, client=True)
            c._write_kubeconfig(self.dir / f"{name}.kubeconfig", crt, key, cn)
        pki.issue(
            "kubelet-serving",
            f"system:node:{NODE_NAME}",
            server_names=(self.state["gateway"], NODE_NAME),
        )
        rules = [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {
                "apiGroups": ["discovery.k8s.io"],
                "resources": ["endpointslices"],
                "verbs": ["list", "watch"],
            },
        ]
        api = "rbac.authorization.k8s.io/v1"
        rbac = f"/apis/{api}"
        meta = {"name": "trainhub-test:coredns"}
        c._create(
            f"{rbac}/clusterroles",
            {"apiVersion": api, "kind": "ClusterRole", "metadata": meta, "rules": rules},
        )
        c._create(
            f"{rbac}/clusterrolebindings",
            {
                "apiVersion": api,
                "kind": "ClusterRoleBinding",
                "metadata": meta,
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": meta["name"],
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "trainhub-test:coredns",
                    }
                ],
            },
        )

    def _start_kubelet(self, deadline: float, lock: int) -> None:
        c, p, pki = self.cluster, self.cluster.state["ports"], self.cluster.pki_dir
        for name in ("kubelet", "kubelet-healthz", "kube-proxy-healthz", "kube-proxy-metrics"):
            p[name] = c._free_port()
        p["coredns-health"], p["coredns-ready"] = c._free_port(), c._free_port()
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # The kubelet refuses a loopback node IP: the node's address is its bridge's.
            "address": self.state["gateway"],
            "port": p["kubelet"],
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": p["kubelet-healthz"],
            "tlsCertFile": str(pki / "kubelet-serving.crt"),
            "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(pki / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            # This machine has cgroup v1 (/sys/fs/cgroup is a tmpfs of v1 hierarchies) and
            # no systemd: cgroupfs, and kubelet >= 1.35 refuses v1 unless told not to.
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "cgroupRoot": self.state["cgroup_root"],
            "cgroupsPerQOS": True,
            "failSwapOn": False,
            "clusterDNS": [self.state["gateway"]],
            "clusterDomain": CLUSTER_DOMAIN,
            "registerWithTaints": [NODE_TAINT],
            # Shared disk: the test images are imported, never pulled, so neither image GC
            # nor disk-pressure eviction may take them or the node away.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "maxPods": 32,
            "oomScoreAdj": 0,  # -999 needs CAP_SYS_RESOURCE, which root lacks here
            "serializeImagePulls": False,
            "volumePluginDir": str(self.kubelet_root / "volume-plugins"),
            "podLogsDir": str(self.dir / "pod-logs"),
            "shutdownGracePeriod": "0s",
            "nodeStatusReportFrequency": "10s",
        }
        cfg = self.dir / "kubelet.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        labels = {**NODE_LABELS, "nvidia.com/gpu.count": str(GPU_COUNT)}
        c._spawn(
            "kubelet",
            [
                str(self.bin / "kubelet"),
                f"--config={cfg}",
                f"--kubeconfig={self.dir / 'kubelet.kubeconfig'}",
                f"--root-dir={self.kubelet_root}",
                f"--cert-dir={self.kubelet_root / 'pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.state['gateway']}",
                "--node-labels=" + ",".join(f"{k}={v}" for k, v in labels.items()),
                "--v=2",
            ],
            pass_fds=(lock,),
        )
        c._wait(
            "kubelet",
            functools.partial(c._node_ready, NODE_NAME),
            deadline,
            what=f"node {NODE_NAME} Ready",
        )

    def _start_kube_proxy(self, deadline: float) -> None:
        p = self.cluster.state["ports"]
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.dir / "kube-proxy.kubeconfig")},
            "hostnameOverride": NODE_NAME,
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{p['kube-proxy-healthz']}",
            "metricsBindAddress": f"127.0.0.1:{p['kube-proxy-metrics']}",
            "mode": "iptables",
            "clusterCIDR": self.state["subnet"],
            # No br_netfilter: a pod reaching a Service backed by a pod on the same bridge
            # gets its reply back through the host only when the request was masqueraded.
            "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
            # Leave the machine's conntrack settings alone.
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "nodePortAddresses": [self.state["subnet"]],
            "oomScoreAdj": 0,
        }
        cfg = self.dir / "kube-proxy.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        self.cluster._spawn("kube-proxy", [str(self.bin / "kube-proxy"), f"--config={cfg}"])
        self.cluster._wait(
            "kube-proxy",
            lambda: self.cluster._http_ok(f"http://127.0.0.1:{p['kube-proxy-healthz']}/healthz"),
            deadline,
        )

    def _start_coredns(self, deadline: float) -> None:
        p, gw = self.cluster.state["ports"], self.state["gateway"]
        corefile = f"""\
{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {gw}
    errors
    health 127.0.0.1:{p["coredns-health"]}
    ready 127.0.0.1:{p["coredns-ready"]}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self.dir / "coredns.kubeconfig"} trainhub-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
"""
        path = self.dir / "Corefile"
        path.write_text(corefile)
        self.cluster._spawn("coredns", [str(self.bin / "coredns"), "-conf", str(path)])
        self.cluster._wait(
            "coredns",
            lambda: self.cluster._http_ok(f"http://127.0.0.1:{p['coredns-ready']}/ready"),
            deadline,
            what="CoreDNS ready (its Kubernetes informers synced)",
        )

    def _publish_api(self, deadline: float) -> None:
        """The API server for pods: a relay on the gateway (apiforward.py) as the endpoint of
        the ``kubernetes`` Service, which the API server itself leaves without one."""
        c, gw = self.cluster, self.state["gateway"]
        port = c.state["ports"]["api-forward"] = c._free_port()
        c._spawn(
            "api-forward",
            [
                sys.executable,
                str(HERE / "apiforward.py"),
                gw,
                str(port),
                "127.0.0.1",
                str(c.state["ports"]["apiserver"]),
            ],
        )
        c._wait("api-forward", lambda: _accepts(gw, port), deadline)
        slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
        c._request("DELETE", f"{slices}/kubernetes")  # a previous node's gateway
        c._create(
            slices,
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kubernetes",
                    "labels": {
                        "kubernetes.io/service-name": "kubernetes",
                        "endpointslice.kubernetes.io/managed-by": "trainhub-test-node",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [gw], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            },
        )

    def _start_device_plugin(self, deadline: float, gpus: int) -> None:
        library = fake_nvml_library(self.cluster.base.parent / "fake-nvml")
        state, shared = self.dir / "nvml" / "state", self.dir / "nvml" / "shared-state"
        state.write_text("\n".join(fake_gpu_lines(range(gpus))) + "\n")
        shared.write_text("\n".join(fake_gpu_lines(range(gpus, gpus + 1))) + "\n")
        self.state["nvml_state"] = str(state)
        self.state["nvml_shared_state"] = str(shared)
        self.state["nvml_library"] = str(library)
        replicas = int(SHARED_SHARING["replicas"])
        for name, flags, resource, count in (
            (
                "device-plugin",
                [f"-resource={GPU_RESOURCE}", f"-nvml-state={state}"],
                GPU_RESOURCE,
                gpus,
            ),
            (
                "device-plugin-shared",
                [
                    *sharing_flags(SHARED_SHARING),
                    f"-nvml-state={shared}",
                    "-endpoint=trainhub-gpu-shared.sock",
                ],
                SHARED_GPU_RESOURCE,
                replicas,
            ),
        ):
            self.cluster._spawn(
                name,
                [
                    str(self.bin / "trainhub-device-plugin"),
                    f"-socket-dir={self.plugin_dir}",
                    f"-nvml-library={library}",
                    f"-alloc-dir={self.dir / 'nvml' / 'alloc'}",
                    *flags,
                ],
            )
            self.cluster._wait(
                name,
                lambda resource=resource, count=count: self._allocatable(resource) == str(count),
                deadline,
                what=f"{count} {resource} allocatable on {NODE_NAME}",
            )

    def _allocatable(self, resource: str) -> str | None:
        status, node = self.cluster._request("GET", f"/api/v1/nodes/{NODE_NAME}")
        if status != 200:
            return None
        return node.get("status", {}).get("allocatable", {}).get(resource)

    # ---- stop

    def stop(self) -> list[str]:
        """Stop the node and remove what it made; returns what could not be removed."""
        s = self.state
        if not s:
            return []
        procs = self.cluster.state.get("processes", {})
        for name in reversed(NODE_COMPONENTS[1:]):  # everything but containerd
            self.cluster._stop_process(name, procs.get(name))
        if self.sock.exists():
            self._remove_pods()
        self.cluster._stop_process("containerd", procs.get("containerd"))
        self._kill_shims()
        for point in self._mounts():
            if _run(["umount", str(point)], check=False).returncode != 0:
                _run(["umount", "-l", str(point)], check=False)
        self._remove_iptables()
        if s.get("bridge") and Path(f"/sys/class/net/{s['bridge']}").exists():
            _run(["ip", "link", "del", s["bridge"]], check=False)
        self._remove_cgroups()
        self._restore_sysctls()
        self._remove_log_links()
        self._remove_device_plugin_files()
        left = self.leftovers()
        self.cluster.state.pop("node", None)
        for name in NODE_COMPONENTS:
            procs.pop(name, None)
        self.cluster._save()
        return left

    def _remove_pods(self) -> None:
        """Kill every container, tear down each pod's network as the CRI plugin would."""
        out = self._ctr("containers", "list", "--quiet", check=False).stdout.split()
        sandboxes = []
        for cid in out:
            info = self._ctr("containers", "info", cid, check=False)
            if info.returncode != 0:
                continue
            labels = json.loads(info.stdout).get("Labels") or {}
            spec = self._ctr("containers", "info", "--spec", cid, check=False)
            if labels.get("io.cri-containerd.kind") == "sandbox" and spec.returncode == 0:
                for ns in json.loads(spec.stdout).get("linux", {}).get("namespaces", []):
                    if ns.get("type") == "network" and ns.get("path"):
                        sandboxes.append((cid, ns["path"]))
            self._ctr("tasks", "kill", "--all", "--signal", "SIGKILL", cid, check=False)
        for cid in out:
            for _ in range(50):
                if self._ctr("tasks", "delete", "--force", cid, check=False).returncode != 0:
                    break  # no task (left)
                time.sleep(0.1)
            self._ctr("containers", "delete", cid, check=False)
        for cid, netns in sandboxes:
            self._cni_del(cid, netns)
            if Path(netns).exists():
                _run(["umount", netns], check=False)
                Path(netns).unlink(missing_ok=True)

    def _cni_del(self, container_id: str, netns: str) -> None:
        conflist = json.loads((self.dir / "cni" / "net.d" / "10-trainhub.conflist").read_text())
        for plugin in reversed(conflist["plugins"]):
            conf = {"cniVersion": conflist["cniVersion"], "name": conflist["name"], **plugin}
            env = dict(
                os.environ,
                CNI_COMMAND="DEL",
                CNI_CONTAINERID=container_id,
                CNI_NETNS=netns if Path(netns).exists() else "",
                CNI_IFNAME="eth0",
                CNI_PATH=str(CNI_BIN),
            )
            subprocess.run(
                [str(CNI_BIN / plugin["type"])],
                input=json.dumps(conf),
                env=env,
                capture_output=True,
                text=True,
            )
        # containerd's CNI library caches each result, the pod's loopback one included.
        for network in (conflist["name"], "cni-loopback"):
            for cached in Path("/var/lib/cni/results").glob(f"{network}-{container_id}-*"):
                cached.unlink(missing_ok=True)

    def _shim_pids(self) -> list[int]:
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"containerd-shim" in argv[0] and str(self.sock).encode() in argv:
                pids.append(int(proc.name))
        return pids

    def _kill_shims(self) -> None:
        for pid in self._shim_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _remove_iptables(self) -> None:
        """kube-proxy's own cleanup, then the kubelet's chains and this network's CNI rules."""
        if os.access(self.bin / "kube-proxy", os.X_OK):
            _run([str(self.bin / "kube-proxy"), "--cleanup"], check=False)
        network = self.state.get("network", "")
        for tool in ("iptables", "ip6tables"):
            if shutil.which(tool) is None:
                continue
            for table, lines in _iptables_chains(tool).items():
                ours = {
                    line.split()[1]
                    for line in lines
                    if line.startswith("-N ") and line.split()[1].startswith("KUBE-")
                }
                for line in lines:
                    if not line.startswith("-A "):
                        continue
                    args = shlex.split(line)
                    target = args[args.index("-j") + 1] if "-j" in args else ""
                    if network and f'name: "{network}"' in line and target.startswith("CNI-"):
                        ours.add(target)
                    if target in ours or (network and f'name: "{network}"' in line):
                        _run([tool, "-w", "-t", table, "-D", *args[1:]], check=False)
                for chain in ours:
                    _run([tool, "-w", "-t", table, "-F", chain], check=False)
                for chain in ours:
                    _run([tool, "-w", "-t", table, "-X", chain], check=False)

    def _cgroup_dirs(self) -> list[Path]:
        root = self.state.get("cgroup_root", "").lstrip("/")
        if not root:
            return []
        found = []
        for h in _cgroup_hierarchies():
            top = h / root
            if top.is_dir():
                found += [Path(d) for d, _, _ in os.walk(top)]
        return sorted(found, key=lambda p: len(p.parts), reverse=True)

    def _remove_cgroups(self) -> None:
        for _ in range(20):
            dirs = self._cgroup_dirs()
            for d in dirs:
                with contextlib.suppress(OSError):
                    d.rmdir()
            if not self._cgroup_dirs():
                return
            time.sleep(0.25)  # the last processes of a cgroup may still be exiting

    def _restore_sysctls(self) -> None:
        for name, value in self.state.get("sysctls", {}).items():
            with contextlib.suppress(OSError):
                if _sysctl_path(name).read_text().strip() != value:
                    _sysctl_path(name).write_text(value + "\n")

    def _remove_log_links(self) -> None:
        """The kubelet links each container log into /var/log/containers."""
        logs = Path("/var/log/containers")
        if logs.is_dir():
            for link in logs.iterdir():
                with contextlib.suppress(OSError):
                    if link.is_symlink() and Path(os.readlink(link)).is_relative_to(self.dir):
                        link.unlink()

    def _device_plugin_files(self) -> list[Path]:
        names = (
            "kubelet.sock",
            "kubelet_internal_checkpoint",
            "trainhub-gpu.sock",
            "trainhub-gpu-shared.sock",
        )
        return [DEVICE_PLUGIN_DIR / n for n in names if (DEVICE_PLUGIN_DIR / n).exists()]

    def _remove_device_plugin_files(self) -> None:
        for f in self._device_plugin_files():
            f.unlink(missing_ok=True)
        for d in reversed(self.state.get("made_dirs", [])):
            with contextlib.suppress(OSError):
                Path(d).rmdir()

    def leftovers(self) -> list[str]:
        """Whatever of this node is still on the machine (processes, mounts, network, ...)."""
        s, left = self.state, []
        procs = self.cluster.state.get("processes", {})
        for name in NODE_COMPONENTS:
            p = procs.get(name)
            if p and self.cluster._alive(p):
                left.append(f"process {name} ({p['pid']})")
        left += [f"containerd shim {pid}" for pid in self._shim_pids()]
        left += [f"mount {m}" for m in self._mounts()]
        if s.get("bridge") and Path(f"/sys/class/net/{s['bridge']}").exists():
            left.append(f"bridge {s['bridge']}")
        left += [f"cgroup {d}" for d in self._cgroup_dirs()]
        left += [f"file {f}" for f in self._device_plugin_files()]
        left += [f"directory {d}" for d in s.get("made_dirs", []) if Path(d).exists()]
        network = s.get("network")
        for tool in ("iptables", "ip6tables"):
            if shutil.which(tool) is None:
                continue
            for table, lines in _iptables_chains(tool).items():
                for line in lines:
                    if line.startswith("-N KUBE-") or (network and f'name: "{network}"' in line):
                        left.append(f"{tool} -t {table}: {line}")
        return left


def _toml(doc: dict[str, Any], prefix: str = "") -> str:
    """The TOML subset containerd's config needs: tables, strings, ints, bools, lists."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))

    scalars = [f"{k} = {value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars
    text = "\n".join(out) + ("\n\n" if out else "")
    for k, v in doc.items():
        if isinstance(v, dict):
            key = json.dumps(k) if "." in k else k
            text += _toml(v, f"{prefix}.{key}" if prefix else key)
    return text
