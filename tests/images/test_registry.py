"""`images/build.py --push`: a built image goes to a registry under its content tag, and comes
back from it byte for byte, as a cluster's nodes pull it. The registry is distribution's, built
by tests/k8s/cluster/build.sh and started here on loopback; the image is the chain's root
(images/debian) made from a one-file root filesystem instead of mmdebstrap's, so that the test
takes seconds and no network."""

from __future__ import annotations

import hashlib
import io
import json
import secrets
import shutil
import tarfile
import urllib.request
from pathlib import Path

import pytest

from .test_build import build

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)


def registry_get(url: str, accept: tuple[str, ...] = ()) -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Accept": ", ".join(accept)} if accept else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read(), dict(r.headers)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_pushed_image_comes_back_by_digest(
    registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not shutil.which("buildah"):
        pytest.fail("buildah is needed: images/build.sh installs it")
    token = secrets.token_hex(8).encode()

    def one_file_rootfs(self: build.Builder, target: Path) -> None:
        with tarfile.open(target, "w") as tar:
            info = tarfile.TarInfo("hello.txt")
            info.size = len(token)
            tar.addfile(info, io.BytesIO(token))

    monkeypatch.setattr(build.Builder, "rootfs", one_file_rootfs)
    monkeypatch.setenv("TRAINHUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRAINHUB_IMAGES_STORAGE_DRIVER", "vfs")
    target = f"{registry}/trainhub"
    assert build.main(["debian", "--push", target, "--insecure-registry"]) == 0

    paths = build.Paths.from_env()
    entry = json.loads(paths.index.read_text())["images"]["debian"]
    tag = entry["local_reference"].rsplit(":", 1)[1]
    assert tag == entry["content_hash"][:16]  # tagged by content, here and in the registry
    pinned = entry["pushed"][target]
    repository, digest = pinned.split("@")
    assert repository == f"{registry}/trainhub/debian"

    # What the registry serves under the content tag is the pushed manifest, and every blob it
    # names has the digest it is named by.
    url = f"http://{registry}/v2/trainhub/debian"
    body, headers = registry_get(f"{url}/manifests/{tag}", MANIFEST_TYPES)
    assert sha256(body) == digest == headers["Docker-Content-Digest"]
    manifest = json.loads(body)
    assert len(manifest["layers"]) == 1
    for descriptor in (manifest["config"], *manifest["layers"]):
        blob, _ = registry_get(f"{url}/blobs/{descriptor['digest']}")
        assert sha256(blob) == descriptor["digest"] and len(blob) == descriptor["size"]

    # Pulled by digest into another store, it is the same image, with the same file.
    other = build.Buildah(build.Paths(cache=tmp_path / "pulled", wheels=paths.wheels))
    other.run("pull", "--quiet", "--tls-verify=false", f"docker://{pinned}", quiet=True)
    ids = [
        b.run("inspect", "--type", "image", "--format", "{{.FromImageID}}", ref, quiet=True)
        for b, ref in ((build.Buildah(paths), entry["local_reference"]), (other, pinned))
    ]
    assert ids[0].stdout.strip() == ids[1].stdout.strip() == manifest["config"]["digest"][7:]
    container = other.run("from", "--pull=never", pinned, quiet=True).stdout.strip()
    try:
        mount = Path(other.run("mount", container, quiet=True).stdout.strip())
        assert (mount / "hello.txt").read_bytes() == token
    finally:
        other.run("rm", container, quiet=True)
