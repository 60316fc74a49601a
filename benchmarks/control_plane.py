"""The test control plane (tests/k8s/cluster) for the benchmarks that need Kubernetes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cluster_module() -> Any:
    """tests/k8s/cluster/cluster.py, which is no package."""
    spec = importlib.util.spec_from_file_location("cluster", ROOT / "tests/k8s/cluster/cluster.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def start_or_reuse(
    kubeconfig: str | None, work: Path, controller_manager_qps: int | None = None
) -> tuple[Path, Any]:
    """(kubeconfig, cluster to stop afterwards, or None when reusing ``kubeconfig``);
    ``controller_manager_qps``: its API client's rate (default Kubernetes' 20/s)."""
    if kubeconfig:
        return Path(kubeconfig), None
    mod = cluster_module()
    missing = mod.missing_binaries()
    if missing:
        sys.exit(
            f"the test control plane is not built ({', '.join(missing)}): "
            "bash tests/k8s/cluster/build.sh"
        )
    cluster = mod.Cluster(
        work / "cluster", die_with_parent=True, controller_manager_qps=controller_manager_qps
    )
    return cluster.start(), cluster


def real_node_state(cluster_dir: Path) -> dict[str, Any]:
    """The real node's entry of the cluster's state (its gateway, containerd...); exits when the
    cluster runs none."""
    state = json.loads((cluster_dir / "state.json").read_text()).get("node") or {}
    if not state.get("ready"):
        sys.exit(f"no real node runs in the cluster of {cluster_dir}")
    return state


def import_curated_image(cluster_dir: Path, name: str) -> str:
    """images/build.sh's image ``name``, imported into the real node's containerd; its
    reference."""
    mod = cluster_module()
    entry = mod.curated_image(name)
    if entry is None:
        index_file = mod.curated_images_index()
        sys.exit(f"the curated image {name} is not built ({index_file}): bash images/build.sh")
    mod.import_image(cluster_dir, entry["archive"])
    return entry["reference"]
