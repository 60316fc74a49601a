"""A backend's optional abilities are capabilities (trainhub.backends.capabilities), asked with
isinstance where they are used: the local backend has its machine and its store, the cluster's
the others."""

from __future__ import annotations

from pathlib import Path

from trainhub.backends import capabilities
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.backends.local.backend import LocalBackend


def test_optional_abilities_are_capabilities(tmp_path: Path) -> None:
    local = LocalBackend(tmp_path)
    assert isinstance(local, capabilities.OneMachine) and isinstance(local, capabilities.KeepsStore)
    for other in (
        capabilities.Pools,
        capabilities.MountsDatasets,
        capabilities.WatchFedReads,
        capabilities.TouchesAsOwner,
    ):
        assert not isinstance(local, other)
        # The cluster's backend has each of them (its methods, whatever the instance).
        names = _methods(other)
        assert names and all(callable(getattr(KubernetesBackend, n, None)) for n in names)
    assert not any(callable(getattr(KubernetesBackend, n, None)) for n in ("capacity", "slots"))
    local.close()


def _methods(protocol: type) -> list[str]:
    return [n for n in vars(protocol) if not n.startswith("_") and callable(vars(protocol)[n])]
