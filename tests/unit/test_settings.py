import pytest

from trainhub import settings
from trainhub.backends import factory


def test_backend_follows_trainhub_backend(monkeypatch):
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub.backends.local.backend import LocalBackend

    monkeypatch.delenv("TRAINHUB_BACKEND", raising=False)
    assert factory.backend_class() is LocalBackend
    monkeypatch.setenv("TRAINHUB_BACKEND", "kubernetes")
    assert factory.backend_class() is KubernetesBackend
    monkeypatch.setenv("TRAINHUB_BACKEND", "slurm")
    with pytest.raises(ValueError, match="TRAINHUB_BACKEND='slurm'"):
        factory.backend_class()


def test_server_extension_takes_the_same_default(monkeypatch):
    from trainhub.backends.kubernetes.backend import KubernetesBackend
    from trainhub_server.app import TrainhubExtension

    monkeypatch.setenv("TRAINHUB_BACKEND", "kubernetes")
    assert TrainhubExtension().backend_class is KubernetesBackend


def test_allow_pip_flag(monkeypatch):
    monkeypatch.setenv("TRAINHUB_ALLOW_PIP", "0")
    assert settings.allow_pip() is False
    monkeypatch.setenv("TRAINHUB_ALLOW_PIP", "yes")
    assert settings.allow_pip() is True
