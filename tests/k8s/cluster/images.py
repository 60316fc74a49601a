"""Tiny container images for the real node, made from files on this machine.

An image is a docker-archive tar (``docker save`` layout: manifest.json, one config, one
layer), which ``ctr images import`` reads. Each archive is cached by the content that
defines it, so it is made once per busybox or pause binary.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

# Bump when the layout of an archive changes: the cache key includes it.
ARCHIVE_FORMAT = "1"
REGISTRY = "trainhub.test"


def _layer(files: dict[str, bytes], links: dict[str, str], dirs: tuple[str, ...]) -> bytes:
    """An uncompressed, reproducible layer tar: fixed owner, mode and mtime."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for name, target in sorted(links.items()):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(info)
    return buf.getvalue()


def _archive(path: Path, ref: str, layer: bytes, entrypoint: list[str], cmd: list[str]) -> None:
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": entrypoint,
            "Cmd": cmd,
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "tests/k8s/cluster/images.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    layer_name = diff_id.split(":")[1] + "/layer.tar"
    manifest = [{"Config": config_name, "RepoTags": [ref], "Layers": [layer_name]}]
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    with tarfile.open(partial, "w") as tar:
        for name, data in (
            ("manifest.json", json.dumps(manifest).encode()),
            (config_name, config_bytes),
            (layer_name, layer),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(partial, path)  # whole or absent, also for concurrent makers


def _cached(cache: Path, name: str, *parts: bytes) -> tuple[Path, str]:
    digest = hashlib.sha256(ARCHIVE_FORMAT.encode() + b"\0" + b"\0".join(parts)).hexdigest()
    cache.mkdir(parents=True, exist_ok=True)
    return cache / f"{name}-{digest[:16]}.tar", f"{REGISTRY}/{name}:{digest[:12]}"


def busybox_image(cache: Path, busybox: str | None = None) -> tuple[Path, str]:
    """(archive, image reference) of a busybox image: Debian's busybox-static and its applets."""
    binary = Path(busybox or shutil.which("busybox") or "/bin/busybox")
    if not binary.exists():
        raise FileNotFoundError(f"{binary}: install Debian's busybox-static")
    data = binary.read_bytes()
    path, ref = _cached(cache, "busybox", data)
    if not path.exists():
        applets = subprocess.run(
            [str(binary), "--list"], check=True, capture_output=True, text=True
        ).stdout.split()
        links = {f"bin/{a}": "busybox" for a in applets if a != "busybox"}
        layer = _layer({"bin/busybox": data}, links, ("bin", "etc", "tmp", "root"))
        _archive(path, ref, layer, [], ["/bin/sh"])
    return path, ref


def pause_image(cache: Path, pause: Path, version: str) -> tuple[Path, str]:
    """(archive, image reference) of the sandbox image holding Kubernetes' pause binary."""
    data = pause.read_bytes()
    path, _ = _cached(cache, "pause", data, version.encode())
    ref = f"{REGISTRY}/pause:{version}"
    if not path.exists():
        _archive(path, ref, _layer({"pause": data}, {}, ()), ["/pause"], [])
    return path, ref
