"""Content hashes: of a file, of a copy as it is written, and of a whole bundle."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from trainhub.bundle.schema import BundleCell, Requirement

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def copy_hashed(src: Path, dst: Path) -> tuple[str, int]:
    """Copy ``src`` to ``dst``; ``(sha256, size)`` of the bytes copied, so what is hashed is
    what was bundled even if the source changes meanwhile."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        copied = copy_stream_hashed(fin, fout)
    os.chmod(dst, src.stat().st_mode & 0o755 | 0o600)
    return copied


def copy_stream_hashed(fin: BinaryIO, fout: BinaryIO) -> tuple[str, int]:
    """Copy an open file into another; ``(sha256, size)`` of the bytes copied."""
    digest, size = hashlib.sha256(), 0
    while chunk := fin.read(_CHUNK):
        digest.update(chunk)
        fout.write(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def content_hash(
    *,
    kind: str,
    entry: str,
    args: list[str],
    cells: list[BundleCell],
    parameters: dict[str, Any],
    requirements: list[Requirement],
    requirement_files: dict[str, str],
    files: dict[str, tuple[str, int]],
) -> str:
    """sha256 over everything that decides what runs; mtimes and tags play no part."""
    document = {
        "kind": kind,
        "entry": entry,
        "args": args,
        "cells": [[c.cell_index, c.source, c.injected] for c in cells],
        "parameters": parameters,
        "requirements": [r.argv for r in requirements],
        "requirement_files": sorted(requirement_files.items()),
        "files": sorted((rel, sha) for rel, (sha, _) in files.items()),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
