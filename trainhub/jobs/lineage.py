"""Lineage: which code, parameters, packages, image and data a job ran with.

Collected once at submission by the caller, who writes it to ``lineage.json``. Everything
here is cheap and has no side effects: git runs with a timeout, torch is not imported, and
datasets are fingerprinted from directory metadata, and read only when a declared dataset asks
for a content hash (streamed, bounded: :mod:`trainhub.datasets.fingerprint`).
"""

from __future__ import annotations

import ast
import contextlib
import getpass
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainhub.bundle.schema import BundleManifest
from trainhub.datasets.fingerprint import fingerprint
from trainhub.jobs.directory import write_json_atomic
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.specparts import Dataset

LINEAGE_FORMAT = 1
MAX_DIFF_BYTES = 1 << 20
MAX_DATASET_ENTRIES = 100_000  # beyond this a fingerprint says "truncated" instead of walking on
GIT_TIMEOUT_S = 10.0


def collect_lineage(
    spec: JobSpec,
    workspace_root: Path,
    manifest: BundleManifest,
    *,
    user: str | None = None,
    cache_dir: Path | None = None,
    dataset_views: Mapping[str, tuple[str | None, bool]] | None = None,
    ran_image: Mapping[str, Any] | None = None,
    workspace_facts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``dataset_views``: for each dataset asked for by name, where the submitting side sees it
    and whether it asks for a content hash. ``ran_image``: what the ranks run in, when the
    backend knows it at submit (locally: this machine's environment; on a cluster the
    reconcile adds the pods' image digest later). ``workspace_facts``: what
    :func:`workspace_lineage` said when the workspace was frozen (a sweep's), instead of
    reading ``workspace_root`` now."""
    views = dataset_views or {}
    if workspace_facts is None:
        root = Path(workspace_root).resolve()
        workspace_facts = workspace_lineage((root / manifest.entry).parent)
    return {
        "format": LINEAGE_FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "user": user or _current_user(),
        "host": socket.gethostname(),
        "team": spec.team,
        "image": spec.image,
        **({"ran_image": dict(ran_image)} if ran_image is not None else {}),
        "source": {
            "kind": manifest.kind,
            "path": manifest.entry,
            "args": manifest.args,
            "cells": manifest.cell_indices,
            "selection": manifest.selection,
        },
        "parameters": spec.parameters,
        # Which pipeline and run made this job's outputs (trainhub.pipelines).
        **({"pipeline": spec.pipeline.model_dump(mode="json")} if spec.pipeline else {}),
        "notebook_sha256": manifest.notebook_sha256,
        "content_hash": manifest.content_hash,
        **workspace_facts,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "description": platform.platform(),
        },
        "packages": installed_distributions(cache_dir),
        "torch": torch_versions(),
        "datasets": [
            dataset_fingerprint(
                d,
                view_path=views[d.name][0] if d.name in views else None,
                with_hash=views[d.name][1] if d.name in views else False,
            )
            for d in spec.datasets
        ],
    }


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        return None


def workspace_lineage(entry_dir: Path) -> dict[str, Any]:
    """The lineage read from the workspace itself (the repository holding the entry): kept
    with a frozen workspace, so that what it records is what the code was frozen from."""
    return {"git": git_state(entry_dir)}


# --- git ----------------------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def _git_diff(cwd: Path) -> tuple[str, bool]:
    """``git diff HEAD`` cut at MAX_DIFF_BYTES; reading stops there, so a huge diff is cheap."""
    try:
        proc = subprocess.Popen(
            ["git", "diff", "HEAD", "--no-color", "--no-ext-diff"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return "", False
    assert proc.stdout is not None
    data = proc.stdout.read(MAX_DIFF_BYTES + 1)
    truncated = len(data) > MAX_DIFF_BYTES
    proc.stdout.close()
    try:
        proc.wait(timeout=GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = data[:MAX_DIFF_BYTES].decode("utf-8", "replace")
    return text, truncated


def git_state(directory: Path) -> dict[str, Any] | None:
    """Commit, branch and uncommitted changes of the repository holding ``directory``.

    None when ``directory`` is in no repository (or git is missing).
    """
    top = _git(["rev-parse", "--show-toplevel"], directory)
    if top is None:
        return None
    repo = Path(top)
    status = _git(["status", "--porcelain", "--untracked-files=normal"], repo) or ""
    changed = status.splitlines()
    commit = _git(["rev-parse", "--verify", "HEAD"], repo)
    diff, truncated = _git_diff(repo) if commit else ("", False)
    return {
        "root": str(repo),
        "commit": commit,
        "branch": _git(["symbolic-ref", "--short", "-q", "HEAD"], repo),  # None when detached
        "remote": _git(["config", "--get", "remote.origin.url"], repo),
        "dirty": bool(changed),
        "untracked": [line[3:] for line in changed if line.startswith("??")][:200],
        "diff": diff,
        "diff_truncated": truncated,
    }


# --- packages -----------------------------------------------------------------------------------


def installed_distributions(cache_dir: Path | None = None) -> dict[str, str]:
    """Every installed distribution and its version, as ``pip freeze`` would list them.

    Reading every package's metadata costs a noticeable part of a second on each submit, so
    the list is kept in ``cache_dir`` under a key made of the import path's directories and
    their modification times: installing or removing a package changes its directory.
    """
    cache = None
    if cache_dir is not None:
        key = hashlib.sha256(json.dumps(_path_stamps()).encode()).hexdigest()[:24]
        cache = cache_dir / f"distributions-{key}.json"
        try:
            return dict(json.loads(cache.read_text()))
        except (OSError, ValueError):
            pass
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        meta = dist.metadata  # parsed once; dist.version would parse it again
        name = meta["Name"]
        if name and name not in found:  # the first on sys.path wins, as for imports
            found[name] = meta["Version"]
    result = dict(sorted(found.items(), key=lambda kv: kv[0].lower()))
    if cache is not None:
        with contextlib.suppress(OSError):
            write_json_atomic(cache, result)
    return result


def _path_stamps() -> list[tuple[str, int]]:
    stamps = []
    for entry in sys.path:
        with contextlib.suppress(OSError):
            stamps.append((entry, os.stat(entry or ".").st_mtime_ns))
    return stamps


def torch_versions() -> dict[str, Any] | None:
    """PyTorch, CUDA and HIP versions, read from torch/version.py without importing torch."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    version_file = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    values: dict[str, Any] = {}
    try:
        tree = ast.parse(version_file.read_text())
    except (OSError, SyntaxError):
        tree = ast.Module(body=[], type_ignores=[])
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            try:
                values[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    version = values.get("__version__")
    if version is None:
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return None
    return {
        "version": version,
        "cuda": values.get("cuda"),
        "hip": values.get("hip"),
        "git_version": values.get("git_version"),
    }


# --- datasets ----------------------------------------------------------------------------------


def dataset_fingerprint(
    dataset: Dataset, *, view_path: str | None = None, with_hash: bool = False
) -> dict[str, Any]:
    """Name, path and fingerprint (:func:`trainhub.datasets.fingerprint.fingerprint`) of one
    dataset, read at ``view_path`` where the submitting side sees it elsewhere than the ranks
    (a cluster's mount)."""
    record: dict[str, Any] = {
        "name": dataset.name,
        "path": dataset.path,
        "read_only": dataset.read_only,
        "by_name": dataset.catalog,
    }
    where = view_path or dataset.path
    if where is None:
        record["error"] = "not visible where the job was submitted"
        return record
    try:
        record["fingerprint"] = fingerprint(
            where, with_hash=with_hash, max_entries=MAX_DATASET_ENTRIES
        )
    except OSError as e:
        record["error"] = f"cannot read {dataset.path}: {e.strerror or e}"
    return record
