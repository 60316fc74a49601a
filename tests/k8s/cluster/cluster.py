#!/usr/bin/env python3
"""A real Kubernetes control plane with Kueue and kwok GPU nodes, on 127.0.0.1.

    python tests/k8s/cluster/cluster.py start --dir DIR [--real-node]  # prints the kubeconfig
    python tests/k8s/cluster/cluster.py status --dir DIR
    python tests/k8s/cluster/cluster.py import-image --dir DIR ARCHIVE [--base-name NAME]
    python tests/k8s/cluster/cluster.py stop --dir DIR [--clean]

--real-node adds one real node (containerd, kubelet, kube-proxy, CoreDNS, a fake-GPU
device plugin; see node.py) beside the kwok nodes.

Components (binaries built by build.sh into the cache, see README.md): etcd,
kube-apiserver (own CA, client-cert admin, RBAC+Node authorization, service-account
token signing), kube-controller-manager (per-controller service-account credentials),
kube-scheduler, kwok (fake nodes with nvidia.com/gpu in two pools) and the Kueue
manager (CRDs applied; its admission and conversion webhooks served on 127.0.0.1 with
this cluster's CA and registered by URL).

Everything lives under DIR: pki/, *.kubeconfig, logs/<component>.log, etcd/,
state.json (ports and PIDs). Every port is picked free on 127.0.0.1, so several
clusters can run side by side. Python: stdlib + PyYAML + cryptography.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import functools
import importlib.util
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HERE = Path(__file__).resolve().parent
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
KUEUE_NAMESPACE = "kueue-system"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# kwok's own stages used as they are (copied by build.sh); the pod completion and
# deletion stages are ours, in kwok-stages.yaml.
KWOK_UPSTREAM_STAGES = ("node-initialize.yaml", "node-heartbeat-with-lease.yaml", "pod-ready.yaml")
# Stopped last to first.
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kueue",
)

# The fake GPU fleet: (pool, count, gpus per node, cpu, memory, gpu product label).
NODE_POOLS = (
    ("a100", 2, 8, "96", "1Ti", "NVIDIA-A100-SXM4-80GB"),
    ("t4", 2, 4, "32", "128Gi", "Tesla-T4"),
)


class ClusterError(RuntimeError):
    """The control plane could not be started; the message names the component."""


def _load_node() -> Any:
    """node.py, loaded by path like this file (tests load cluster.py by path too)."""
    name = "trainhub_tests_k8s_node"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "node.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


# --------------------------------------------------------------------------- helpers


def read_versions() -> dict[str, str]:
    versions = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            versions[k.strip()] = v.strip()
    return versions


def cache_root() -> Path:
    """trainhub's cache of heavy build outputs (TRAINHUB_CACHE, or ~/.cache/trainhub)."""
    return Path(os.environ.get("TRAINHUB_CACHE") or Path.home() / ".cache" / "trainhub")


def cache_dir() -> Path:
    """<cache>/k8s/<key>, the same directory build.sh builds into."""
    v = read_versions()
    key = f"k8s-{v['K8S_VERSION']}_kueue-{v['KUEUE_VERSION']}_kwok-{v['KWOK_VERSION']}"
    return cache_root() / "k8s" / key


def curated_images_index() -> Path:
    """images/build.sh's index of the curated images it built (images/README.md)."""
    return cache_root() / "images" / "index.json"


def curated_image(name: str) -> dict[str, str] | None:
    """The index entry of the curated image ``name`` (its ``reference`` and docker
    ``archive``), or None when it is not built, or its archive is gone."""
    index_file = curated_images_index()
    index = json.loads(index_file.read_text()) if index_file.exists() else {}
    entry = index.get("images", {}).get(name)
    return entry if entry is not None and Path(entry["archive"]).is_file() else None


def missing_binaries(base: Path | None = None) -> list[str]:
    """Names of the binaries (or manifests) build.sh has not produced yet."""
    base = base or cache_dir()
    missing = [c for c in COMPONENTS if not os.access(base / "bin" / c, os.X_OK)]
    if not (base / ".complete").exists():
        missing.append(".complete")
    return missing


def built_tool(name: str) -> Path | None:
    """A tool build.sh builds at its pinned version (``helm``, ``registry``), or None when it is
    not built, or built at another version."""
    pinned = {"helm": "HELM_VERSION", "registry": "DISTRIBUTION_VERSION"}[name]
    path = cache_dir() / "bin" / name
    stamp = path.with_name(f"{name}.version")
    built = stamp.read_text().strip() if stamp.exists() else None
    return path if os.access(path, os.X_OK) and built == read_versions()[pinned] else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_bytes()[-16384:].decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(data.splitlines()[-lines:])


def pid_alive(pid: int, argv0: str | None = None) -> bool:
    """True when pid runs and (if given) its executable is argv0: PIDs get reused."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # zombie: exited, not reaped
        return False
    return argv0 is None or raw.split(b"\0", 1)[0].decode() == argv0


# ----------------------------------------------------------------------------- PKI


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


_KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def _key_usage(*allowed: str) -> x509.KeyUsage:
    return x509.KeyUsage(**{usage: usage in allowed for usage in _KEY_USAGES})


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


class PKI:
    """One CA signing the serving and client certificates of one cluster."""

    def __init__(self, root: Path, name: str = "ca"):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name(f"trainhub-test-{name}"))
            .issuer_name(_name(f"trainhub-test-{name}"))
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                _key_usage("digital_signature", "key_cert_sign", "crl_sign"),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False
            )
            .sign(self.ca_key, hashes.SHA256())
        )
        self.ca_crt = root / f"{name}.crt"
        self.ca_crt.write_bytes(self.ca_cert.public_bytes(serialization.Encoding.PEM))
        _write_key(root / f"{name}.key", self.ca_key)

    def issue(
        self,
        name: str,
        cn: str,
        org: str | None = None,
        *,
        server_names: tuple[str, ...] = (),
        client: bool = False,
    ) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                _key_usage("digital_signature", "key_encipherment"),
                critical=True,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                critical=False,
            )
        )
        if server_names:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            sans: list[x509.GeneralName] = []
            for n in server_names:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(n)))
                except ValueError:
                    sans.append(x509.DNSName(n))
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        cert = b.sign(self.ca_key, hashes.SHA256())
        crt, keyf = self.root / f"{name}.crt", self.root / f"{name}.key"
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(keyf, key)
        return crt, keyf

    def signing_key(self, name: str) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        priv, pub = self.root / f"{name}.key", self.root / f"{name}.pub"
        _write_key(priv, key)
        pub.write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return priv, pub


def write_kubeconfig(path: Path, server: str, ca: Path, crt: Path, key: Path, user: str) -> None:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "trainhub-test",
                "cluster": {"server": server, "certificate-authority": str(ca)},
            }
        ],
        "users": [{"name": user, "user": {"client-certificate": str(crt), "client-key": str(key)}}],
        "contexts": [
            {"name": "trainhub-test", "context": {"cluster": "trainhub-test", "user": user}}
        ],
        "current-context": "trainhub-test",
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)


# ------------------------------------------------------------------------- cluster


class Cluster:
    """Start/stop one control plane in `dir`; state.json makes stop work from another process."""

    def __init__(
        self,
        dir: str | os.PathLike[str],
        bin_base: Path | None = None,
        die_with_parent: bool = False,
        controller_manager_qps: int | None = None,
    ):
        """die_with_parent: the components get SIGKILL when this process dies (Linux),
        so a test session that is killed does not leave a control plane behind.
        controller_manager_qps: its API client's rate (burst twice that); None: Kubernetes'
        default of 20/s, which the test command runs with (one run of it at 100/s took 1029 s,
        one at 20/s 874 s)."""
        self.dir = Path(dir).resolve()
        self.die_with_parent = die_with_parent
        self.controller_manager_qps = controller_manager_qps
        self.base = bin_base or cache_dir()
        self.bin = self.base / "bin"
        self.state_file = self.dir / "state.json"
        self.logs = self.dir / "logs"
        self.pki_dir = self.dir / "pki"
        self.kubeconfig = self.dir / "admin.kubeconfig"
        self.state: dict[str, Any] = {"processes": {}, "ports": {}}
        self._popen: dict[str, subprocess.Popen[bytes]] = {}
        self._ssl: ssl.SSLContext | None = None

    def _controller_manager_rate(self) -> list[str]:
        qps = self.controller_manager_qps
        return [] if qps is None else [f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"]

    # ---- public API

    def start(self, timeout: float = 180.0, real_node: bool = False) -> Path:
        """Start the control plane (and, with real_node, the real node); the kubeconfig."""
        missing = missing_binaries(self.base)
        if missing:
            raise ClusterError(
                f"test control plane not built in {self.base} (missing: {', '.join(missing)}); "
                "run: bash tests/k8s/cluster/build.sh"
            )
        if self.state_file.exists():
            old = json.loads(self.state_file.read_text())
            if any(pid_alive(p["pid"], p["argv0"]) for p in old.get("processes", {}).values()):
                raise ClusterError(f"a cluster is already running in {self.dir}; stop it first")
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ("logs", "pki", "etcd", "kueue", "kwok"):
            shutil.rmtree(self.dir / sub, ignore_errors=True)
        self.logs.mkdir()
        deadline = time.monotonic() + timeout
        try:
            self._prepare()
            self._start_etcd(deadline)
            self._start_apiserver(deadline)
            self._start_controllers(deadline)
            self._install_kueue_api()
            self._start_kwok(deadline)
            self._start_kueue(deadline)
            if real_node:
                self._start_node(deadline)
        except BaseException:
            self.stop()
            raise
        self.state["ready"] = True
        self._save()
        return self.kubeconfig

    def start_node(self, timeout: float = 180.0) -> None:
        """Add the real node to this running control plane (started by this object)."""
        try:
            self._start_node(time.monotonic() + timeout)
        except BaseException:
            self.stop_node()
            raise

    def stop_node(self) -> list[str]:
        """Stop the real node; what it left on the machine (empty when all is gone)."""
        if not self.state.get("node") and self.state_file.exists():
            self.state = json.loads(self.state_file.read_text())
        return _load_node().RealNode(self).stop()

    def node_leftovers(self) -> list[str]:
        return _load_node().RealNode(self).leftovers()

    def import_image(
        self, archive: str | os.PathLike[str], base_name: str | None = None
    ) -> list[str]:
        """Import an OCI/docker image archive into the real node's containerd; its image names."""
        try:
            return _load_node().RealNode(self).import_image(archive, base_name)
        except _load_node().NodeError as e:
            raise ClusterError(str(e)) from None

    def _start_node(self, deadline: float) -> None:
        node = _load_node()
        try:
            node.RealNode(self).start(deadline)
        except node.NodeError as e:
            raise ClusterError(str(e)) from None

    def stop(self, clean: bool = False) -> None:
        if not self.state.get("processes") and self.state_file.exists():
            self.state = json.loads(self.state_file.read_text())
        if self.state.get("node"):
            left = self.stop_node()
            if left:
                print(
                    "cluster.py: the real node left behind:\n  " + "\n  ".join(left),
                    file=sys.stderr,
                )
        procs = self.state.get("processes", {})
        for name in reversed(COMPONENTS):
            self._stop_process(name, procs.get(name))
        self.state["processes"] = {}
        self.state["ready"] = False
        if self.dir.exists():
            self._save()
        if clean:
            shutil.rmtree(self.dir, ignore_errors=True)

    def status(self) -> dict[str, Any]:
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        return {
            "kubeconfig": state.get("kubeconfig"),
            "ready": state.get("ready", False),
            "processes": {
                n: {"pid": p["pid"], "running": pid_alive(p["pid"], p["argv0"])}
                for n, p in state.get("processes", {}).items()
            },
            "ports": state.get("ports", {}),
            "node": state.get("node"),
        }

    # ---- steps

    def _prepare(self) -> None:
        ports = {
            name: free_port()
            for name in (
                "etcd",
                "etcd-peer",
                "apiserver",
                "controller-manager",
                "scheduler",
                "kwok",
                "kueue-webhook",
                "kueue-health",
                "kueue-metrics",
                "kueue-visibility",
            )
        }
        self.state = {
            "processes": {},
            "ports": ports,
            "kubeconfig": str(self.kubeconfig),
            "ready": False,
        }
        self.server = f"https://127.0.0.1:{ports['apiserver']}"
        pki = self.pki = PKI(self.pki_dir)
        loopback = ("127.0.0.1", "localhost")
        pki.issue(
            "apiserver",
            "kube-apiserver",
            server_names=(
                *loopback,
                SERVICE_IP,
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
        )
        pki.issue(
            "apiserver-kubelet-client",
            "kube-apiserver-kubelet-client",
            "system:masters",
            client=True,
        )
        pki.signing_key("service-account")
        # Request-header authentication (front proxy), as kubeadm sets it up, so
        # delegating servers (controller-manager, scheduler, Kueue's visibility API)
        # find a complete extension-apiserver-authentication ConfigMap.
        PKI(self.pki_dir, "front-proxy-ca").issue(
            "front-proxy-client", "front-proxy-client", client=True
        )
        # Kueue serves its webhooks, metrics and visibility API with one loopback cert.
        kueue_certs = self.dir / "kueue" / "certs"
        kueue_certs.mkdir(parents=True)
        crt, key = pki.issue("kueue-webhook", "kueue-webhook", server_names=loopback)
        shutil.copy(crt, kueue_certs / "tls.crt")
        shutil.copy(key, kueue_certs / "tls.key")
        shutil.copy(pki.ca_crt, kueue_certs / "ca.crt")
        users = {
            "admin": ("trainhub-test-admin", "system:masters"),
            "controller-manager": ("system:kube-controller-manager", None),
            "scheduler": ("system:kube-scheduler", None),
        }
        for name, (cn, org) in users.items():
            crt, key = pki.issue(name, cn, org, client=True)
            path = self.kubeconfig if name == "admin" else self.dir / f"{name}.kubeconfig"
            write_kubeconfig(path, self.server, pki.ca_crt, crt, key, cn)
        self._save()

    def _start_etcd(self, deadline: float) -> None:
        p = self.state["ports"]
        url = f"http://127.0.0.1:{p['etcd']}"
        peer = f"http://127.0.0.1:{p['etcd-peer']}"
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                "--name=trainhub-test",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls={url}",
                f"--advertise-client-urls={url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=trainhub-test={peer}",
                "--unsafe-no-fsync=true",  # test data: durability is not needed, speed is
                "--quota-backend-bytes=8589934592",
                "--log-level=warn",
            ],
        )
        self._wait("etcd", lambda: self._http_ok(f"{url}/health"), deadline)

    def _start_apiserver(self, deadline: float) -> None:
        p, pki = self.state["ports"], self.pki_dir
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p['apiserver']}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
                # The real node's hostname does not resolve; its InternalIP does.
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                "--authorization-mode=Node,RBAC",
                "--anonymous-auth=false",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'service-account.pub'}",
                f"--service-account-signing-key-file={pki / 'service-account.key'}",
                "--allow-privileged=true",
                # The kubernetes Service cannot have a loopback endpoint: the real node names
                # its relay on the bridge instead (node.py, apiforward.py).
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                f"--cert-dir={pki}",
            ],
        )
        self._wait("kube-apiserver", lambda: self._api_ok("/readyz"), deadline)

    def restart_apiserver(self, timeout: float = 120.0) -> None:
        """Stop the API server and start it again on the same port and etcd: every watch and
        connection of its clients ends, as on an upgrade of the control plane."""
        self._stop_process("kube-apiserver", self.state["processes"].get("kube-apiserver"))
        self._start_apiserver(time.monotonic() + timeout)

    def _start_controllers(self, deadline: float) -> None:
        p, pki = self.state["ports"], self.pki_dir
        kcm = self.dir / "controller-manager.kubeconfig"
        sched = self.dir / "scheduler.kubeconfig"
        self._spawn(
            "kube-controller-manager",
            [
                str(self.bin / "kube-controller-manager"),
                f"--kubeconfig={kcm}",
                f"--authentication-kubeconfig={kcm}",
                f"--authorization-kubeconfig={kcm}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['controller-manager']}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'service-account.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--controllers=*,bootstrapsigner,tokencleaner",
                *self._controller_manager_rate(),
                "--profiling=false",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                str(self.bin / "kube-scheduler"),
                f"--kubeconfig={sched}",
                f"--authentication-kubeconfig={sched}",
                f"--authorization-kubeconfig={sched}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['scheduler']}",
                "--leader-elect=false",
                "--profiling=false",
            ],
        )
        self._wait(
            "kube-controller-manager",
            lambda: self._http_ok(
                f"https://127.0.0.1:{p['controller-manager']}/healthz", insecure=True
            ),
            deadline,
        )
        self._wait(
            "kube-scheduler",
            lambda: self._http_ok(f"https://127.0.0.1:{p['scheduler']}/healthz", insecure=True),
            deadline,
        )
        # ServiceAccount admission refuses pods until the "default" account exists.
        self._wait(
            "kube-controller-manager",
            lambda: self._api_ok("/api/v1/namespaces/default/serviceaccounts/default"),
            deadline,
            what="the default ServiceAccount",
        )

    def _install_kueue_api(self) -> None:
        """Kueue's namespace and CRDs, conversion webhooks pointed at 127.0.0.1."""
        self._create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}},
        )
        conversion: dict[str, dict[str, Any]] = {}
        for patch in sorted((self.base / "kueue" / "crd-patches").glob("*.yaml")):
            doc = yaml.safe_load(patch.read_text())
            conversion[doc["metadata"]["name"]] = doc["spec"]["conversion"]
        for f in sorted((self.base / "kueue" / "crds").glob("*.yaml")):
            crd = yaml.safe_load(f.read_text())
            conv = conversion.get(crd["metadata"]["name"])
            if conv:
                cc = conv["webhook"]["clientConfig"]
                path = cc.pop("service")["path"]
                cc["url"] = self._kueue_url(path)
                cc["caBundle"] = self._ca_b64()
                crd["spec"]["conversion"] = conv
            self._create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        for f in sorted((self.base / "kueue" / "crds").glob("*.yaml")):
            name = yaml.safe_load(f.read_text())["metadata"]["name"]
            self._wait(
                "kube-apiserver",
                functools.partial(self._crd_established, name),
                time.monotonic() + 60,
                what=f"CRD {name} Established",
            )

    def _start_kwok(self, deadline: float) -> None:
        p = self.state["ports"]
        stages = [self.base / "kwok" / "stages" / f for f in KWOK_UPSTREAM_STAGES]
        # Only Stage documents: options go on the command line, so kwok keeps its
        # defaults for everything else (a partial KwokConfiguration would zero them).
        text = "\n---\n".join(f.read_text() for f in [*stages, HERE / "kwok-stages.yaml"])
        config = self.dir / "kwok" / "kwok.yaml"
        config.parent.mkdir(exist_ok=True)
        config.write_text(text)
        self._spawn(
            "kwok",
            [
                str(self.bin / "kwok"),
                f"--config={config}",
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={'='.join(KWOK_NODE_ANNOTATION)}",
                f"--server-address=127.0.0.1:{p['kwok']}",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.0.0.1",
                "--node-lease-duration-seconds=40",
            ],
        )
        names = []
        for pool, count, gpus, cpu, memory, product in NODE_POOLS:
            for i in range(count):
                name = f"kwok-{pool}-{i}"
                names.append(name)
                self._create("/api/v1/nodes", node_manifest(name, pool, gpus, cpu, memory, product))
        for name in names:
            self._wait(
                "kwok",
                functools.partial(self._node_ready, name),
                deadline,
                what=f"node {name} Ready",
            )

    def _start_kueue(self, deadline: float) -> None:
        p = self.state["ports"]
        certs = self.dir / "kueue" / "certs"
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": KUEUE_NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{p['kueue-health']}"},
            "metrics": {"bindAddress": f"127.0.0.1:{p['kueue-metrics']}"},
            "webhook": {"host": "127.0.0.1", "port": p["kueue-webhook"], "certDir": str(certs)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "visibilityServer": {"bindAddress": "127.0.0.1", "bindPort": p["kueue-visibility"]},
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": ["batch/job", "pod"]},
            "clientConnection": {"qps": 100, "burst": 200},
            # Elastic jobs (resources.min_workers): a resized Job's Workload is admitted as a
            # new slice, in place, not evicted and requeued (alpha in Kueue 0.13 to 0.17).
            "featureGates": {"ElasticJobsViaWorkloadSlices": True},
        }
        cfg_path = self.dir / "kueue" / "config.yaml"
        cfg_path.write_text(yaml.safe_dump(config, sort_keys=False))
        env = dict(
            os.environ, KUEUE_METRICS_CERT_DIR=str(certs), KUEUE_VISIBILITY_CERT_DIR=str(certs)
        )
        self._spawn(
            "kueue",
            [
                str(self.bin / "kueue"),
                f"--config={cfg_path}",
                f"--kubeconfig={self.kubeconfig}",
                f"--visibility-server-port={p['kueue-visibility']}",
            ],
            env=env,
        )
        for doc in self._kueue_webhook_configs():
            kind = doc["kind"].lower() + "s"
            self._create(f"/apis/admissionregistration.k8s.io/v1/{kind}", doc)
        self._wait(
            "kueue",
            lambda: self._http_ok(f"http://127.0.0.1:{p['kueue-health']}/readyz"),
            deadline,
        )
        # The whole path apiserver -> webhook (TLS, CA bundle, URL) must answer.
        rf = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "trainhub-readiness-probe"},
        }
        self._wait(
            "kueue",
            lambda: self._api_ok("/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All", rf),
            deadline,
            what="Kueue webhooks answering through the apiserver",
        )

    # ---- Kueue manifests

    def _kueue_url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.state['ports']['kueue-webhook']}{path}"

    def _ca_b64(self) -> str:
        return base64.b64encode((self.pki_dir / "ca.crt").read_bytes()).decode()

    def _kueue_webhook_configs(self) -> list[dict[str, Any]]:
        """Kueue's webhook configurations for the enabled integrations, served by URL."""
        not_system = {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", KUEUE_NAMESPACE],
                }
            ]
        }
        out = []
        for doc in yaml.safe_load_all((self.base / "kueue" / "webhook.yaml").read_text()):
            if not doc:
                continue
            keep = []
            for wh in doc["webhooks"]:
                groups = {g for r in wh["rules"] for g in r["apiGroups"]}
                resources = {x.split("/")[0] for r in wh["rules"] for x in r["resources"]}
                if groups == {""} and resources == {"pods"}:
                    wh["namespaceSelector"] = not_system  # as Kueue's kustomization does
                elif not (
                    groups == {"kueue.x-k8s.io"} or (groups == {"batch"} and resources == {"jobs"})
                ):
                    continue  # an integration that is not enabled: nothing serves that path
                path = wh["clientConfig"]["service"]["path"]
                wh["clientConfig"] = {"url": self._kueue_url(path), "caBundle": self._ca_b64()}
                keep.append(wh)
            doc["webhooks"] = keep
            doc["metadata"] = {"name": "kueue-" + doc["metadata"]["name"]}
            out.append(doc)
        return out

    # ---- processes

    def _spawn(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        with open(self.logs / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                env=env,
                start_new_session=True,  # outlives the CLI; stop() ends it by PID
                preexec_fn=_parent_death_signal if self.die_with_parent else None,
                pass_fds=pass_fds,
            )
        self._popen[name] = proc
        self.state["processes"][name] = {"pid": proc.pid, "argv0": argv[0]}
        self._save()

    def _alive(self, p: dict[str, Any]) -> bool:
        return pid_alive(p["pid"], p["argv0"])

    def _stop_process(self, name: str, p: dict[str, Any] | None) -> None:
        if p and pid_alive(p["pid"], p["argv0"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p["pid"], signal.SIGTERM)
            self._wait_exit(name, p, 15.0)

    @staticmethod
    def _free_port() -> int:
        return free_port()

    def _write_kubeconfig(self, path: Path, crt: Path, key: Path, user: str) -> None:
        write_kubeconfig(path, self.server, self.pki.ca_crt, crt, key, user)

    def _wait_exit(self, name: str, p: dict[str, Any], grace: float) -> None:
        proc = self._popen.get(name)
        end = time.monotonic() + grace
        while time.monotonic() < end:
            if proc is not None and proc.poll() is not None:
                return
            if proc is None and not pid_alive(p["pid"], p["argv0"]):
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(p["pid"], signal.SIGKILL)
        if proc is not None:
            proc.wait(5)

    def _wait(
        self, component: str, check: Callable[[], bool], deadline: float, what: str | None = None
    ) -> None:
        what = what or f"{component} ready"
        last_err = ""
        while True:
            proc = self._popen.get(component)
            if proc is not None and proc.poll() is not None:
                raise ClusterError(
                    f"{component} exited with status {proc.returncode} while waiting for {what}; "
                    f"last lines of {self.logs / (component + '.log')}:\n"
                    f"{tail(self.logs / (component + '.log'))}"
                )
            try:
                if check():
                    return
            except Exception as e:
                last_err = f"{type(e).__name__}: {e}"
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"timed out waiting for {what}"
                    + (f" (last error: {last_err})" if last_err else "")
                    + f"; last lines of {self.logs / (component + '.log')}:\n"
                    f"{tail(self.logs / (component + '.log'))}"
                )
            time.sleep(0.25)

    def _save(self) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2))
        tmp.replace(self.state_file)

    # ---- HTTP

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            ctx = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
            ctx.load_cert_chain(str(self.pki_dir / "admin.crt"), str(self.pki_dir / "admin.key"))
            self._ssl = ctx
        return self._ssl

    def _http_ok(self, url: str, insecure: bool = False) -> bool:
        ctx = None
        if url.startswith("https"):
            ctx = ssl._create_unverified_context() if insecure else self._context()
        try:
            with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30, context=self._context()) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw.strip().startswith(b"{") else raw.decode()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode("utf-8", "replace")

    def _api_ok(self, path: str, body: Any = None) -> bool:
        status, resp = self._request("POST" if body is not None else "GET", path, body)
        if status >= 400:
            raise RuntimeError(
                f"{status}: {resp.get('message') if isinstance(resp, dict) else resp}"
            )
        return True

    def _create(self, path: str, obj: dict[str, Any]) -> None:
        status, resp = self._request("POST", path, obj)
        if status == 409:
            return
        if status >= 300:
            msg = resp.get("message") if isinstance(resp, dict) else resp
            raise ClusterError(
                f"creating {obj['kind']} {obj['metadata']['name']} failed: {status} {msg}"
            )

    def _crd_established(self, name: str) -> bool:
        status, crd = self._request(
            "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        )
        if status != 200:
            return False
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in crd.get("status", {}).get("conditions", [])
        )

    def _node_ready(self, name: str) -> bool:
        status, node = self._request("GET", f"/api/v1/nodes/{name}")
        if status != 200:
            return False
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in node.get("status", {}).get("conditions", [])
        )


def import_image(
    cluster_dir: str | os.PathLike[str],
    archive: str | os.PathLike[str],
    base_name: str | None = None,
) -> list[str]:
    """Import an OCI/docker image archive into the real node of the cluster in cluster_dir.

    The node's containerd (state.json: node.containerd.address, namespace "k8s.io") is the
    one the kubelet uses; returns the image names imported."""
    return Cluster(cluster_dir).import_image(archive, base_name)


def containerd_endpoint(cluster_dir: str | os.PathLike[str]) -> dict[str, str]:
    """{"address": containerd's socket, "namespace": "k8s.io"} of the cluster's real node."""
    state_file = Path(cluster_dir) / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    endpoint = state.get("node", {}).get("containerd")
    if not endpoint:
        raise ClusterError(f"no real node running in {cluster_dir}")
    return endpoint


def _parent_death_signal() -> None:
    """In the child before exec: SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG).

    SIGKILL, not SIGTERM: with etcd gone the apiserver and Kueue take minutes over a
    graceful shutdown, and nobody is left to escalate."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def node_manifest(
    name: str,
    pool: str,
    gpus: int,
    cpu: str,
    memory: str,
    product: str,
    replicas: int | None = None,
) -> dict[str, Any]:
    """A kwok node as NVIDIA's device plugin and GPU feature discovery describe it. With
    ``replicas``, its GPUs are time-sliced that many ways and advertised renamed
    (``renameByDefault``): ``nvidia.com/gpu.shared``, ``gpus * replicas`` of it and no
    ``nvidia.com/gpu``, labelled with the replicas, the strategy and a ``-SHARED`` product."""
    capacity = {
        "cpu": cpu,
        "memory": memory,
        "pods": "110",
        "nvidia.com/gpu": str(gpus),
        "ephemeral-storage": "1Ti",
    }
    sharing: dict[str, str] = {}
    if replicas is not None:
        del capacity["nvidia.com/gpu"]
        capacity["nvidia.com/gpu.shared"] = str(gpus * replicas)
        product += "-SHARED"
        sharing = {
            "nvidia.com/gpu.replicas": str(replicas),
            "nvidia.com/gpu.sharing-strategy": "time-slicing",
        }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {
                KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1],
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "trainhub.io/pool": pool,
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpus),
                **sharing,
            },
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("start", "stop", "status", "import-image"):
        sp = sub.add_parser(name)
        sp.add_argument("--dir", required=True, help="working directory of this cluster")
        if name == "start":
            sp.add_argument(
                "--timeout", type=float, default=180.0, help="seconds to wait for readiness"
            )
            sp.add_argument(
                "--real-node", action="store_true", help="also start the real node (node.py)"
            )
        if name == "stop":
            sp.add_argument("--clean", action="store_true", help="also remove DIR")
        if name == "import-image":
            sp.add_argument("archive", help="OCI or docker image archive (tar)")
            sp.add_argument(
                "--base-name", help="image name for an OCI archive whose ref.name is a tag"
            )
    args = ap.parse_args(argv)
    cluster = Cluster(args.dir)
    if args.cmd == "start":
        t0 = time.monotonic()
        try:
            kubeconfig = cluster.start(timeout=args.timeout, real_node=args.real_node)
        except ClusterError as e:
            print(f"cluster.py: {e}", file=sys.stderr)
            return 1
        print(f"control plane ready in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        print(kubeconfig)
    elif args.cmd == "stop":
        cluster.stop(clean=args.clean)
    elif args.cmd == "import-image":
        try:
            names = cluster.import_image(args.archive, args.base_name)
        except ClusterError as e:
            print(f"cluster.py: {e}", file=sys.stderr)
            return 1
        print("\n".join(names))
    else:
        print(json.dumps(cluster.status(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
