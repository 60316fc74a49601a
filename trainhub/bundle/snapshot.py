"""A workspace frozen for later compiles: the code every trial of a sweep, every step of a
pipeline run and every run of a schedule runs.

:func:`freeze` takes, once, what the bundle compiler takes from the workspace for each entry —
the entry and the files next to it, by the same walk, ignore rules and size cap
(:func:`trainhub.bundle.compile.bundle_files`) — and the lineage read from the workspace (its
git state), and writes them into a new folder on the jobs' volume::

    <folder>/source/...     the files, at their paths relative to the workspace root
    <folder>/lineage.json   trainhub.jobs.lineage.workspace_lineage, as it was then

:func:`thawed` copies them back into a private temporary folder for one or more compiles
(``compile_bundle(..., frozen=True)``), in whichever process submits: it needs no workspace.

The folder lies on a volume the jobs' own code can write, and the process that thaws it may
hold rights no job has (the cluster's controller): both ways go through
:mod:`trainhub.jobs.confined` (no link followed, only regular files and real folders), a copy
is compiled only from the private folder, never from the shared one, and a source whose files
differ from the digest taken when it was frozen is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from trainhub.bundle.compile import bundle_files, resolve_entry
from trainhub.bundle.errors import BundleError
from trainhub.bundle.hashing import copy_stream_hashed
from trainhub.bundle.workspace import check_size
from trainhub.jobs import confined, ownership
from trainhub.jobs.lineage import workspace_lineage
from trainhub.jobs.spec import JobSpec

SOURCE = "source"
LINEAGE = "lineage.json"
_MAX_LINEAGE_BYTES = 4 * 2**20  # a git diff is cut at 1 MiB (trainhub.jobs.lineage)


@dataclass(frozen=True)
class Frozen:
    """What was frozen, kept with whoever owns the folder (a sweep's or a pipeline run's
    record): a thaw finds
    exactly these files and bytes, or refuses."""

    digest: str  # sha256 over the files' paths and hashes and the lineage
    files: int
    bytes: int


@dataclass(frozen=True)
class Snapshot:
    """A thawed workspace: ``root`` holds the frozen files at their workspace paths (the ignore
    rules already applied); ``lineage`` is the workspace's lineage as it was frozen, and the
    frozen workspace's digest."""

    root: Path
    lineage: dict[str, Any]


def freeze(
    specs: JobSpec | Sequence[JobSpec],
    workspace_root: Path,
    base: Path,
    folder: str,
    *,
    max_workspace_bytes: int,
    lineage: dict[str, Any] | None = None,
) -> Frozen:
    """Freeze what the bundles of ``specs`` (a sweep's one, a pipeline's steps) take from
    ``workspace_root`` into ``base/folder``, a new folder (``base`` is made when missing; its
    parent is trusted); the lineage is read beside the first one's entry. Each entry's files
    are held to the size cap, as its compile will be. ``lineage``: the one to keep instead
    (``workspace_root`` is a thawed copy, whose lineage is the one it was frozen with).
    Nothing is left behind when it fails."""
    specs = [specs] if isinstance(specs, JobSpec) else list(specs)
    root = Path(workspace_root).resolve()
    files: dict[str, Path] = {}
    lineage_dir = None
    for spec in specs:
        entry = resolve_entry(root, spec.source.path)
        taken = bundle_files(spec, root, entry, warnings=[])
        check_size(taken, max_workspace_bytes, entry.parent.relative_to(root).as_posix())
        taken[entry.relative_to(root).as_posix()] = entry  # a notebook too: trials inject into it
        files.update(taken)
        lineage_dir = lineage_dir or entry.parent
    assert lineage_dir is not None, "nothing to freeze"
    lineage = workspace_lineage(lineage_dir) if lineage is None else lineage
    base.mkdir(parents=True, exist_ok=True)
    confined.make_dir(base, folder)  # refused when anything is there already
    if ownership.guarded(base):  # a team volume where members own their files: the code is theirs
        ownership.make_private(base / folder)
    try:
        hashes = _write(files, base, f"{folder}/{SOURCE}")
        confined.replace(base, f"{folder}/{LINEAGE}", json.dumps(lineage).encode())
    except BaseException:
        remove(base, folder)
        raise
    return Frozen(
        digest=_digest(hashes, lineage),
        files=len(hashes),
        bytes=sum(size for _, size in hashes.values()),
    )


class Workspaces(Protocol):
    """Where a service's jobs take their code from, and how much of it they may take."""

    workspace_root: Path | None
    max_workspace_bytes: int


@contextmanager
def freezing(
    specs: JobSpec | Sequence[JobSpec],
    service: Workspaces,
    base: Path,
    folder: str,
    *,
    source: Snapshot | None = None,
) -> Iterator[Frozen]:
    """:func:`freeze` from ``service``'s workspace (or from ``source``, a thawed one, with its
    lineage) for the block that records who owns the folder: when the block fails, the folder
    goes too, so no frozen source outlives a record that was never made."""
    workspace = source.root if source is not None else service.workspace_root
    assert workspace is not None  # a service without a workspace is refused before this
    frozen = freeze(
        specs,
        workspace,
        base,
        folder,
        max_workspace_bytes=service.max_workspace_bytes,
        lineage=source.lineage if source is not None else None,
    )
    try:
        yield frozen
    except BaseException:
        remove(base, folder)
        raise


def _write(files: dict[str, Path], base: Path, top: str) -> dict[str, tuple[str, int]]:
    """Copy ``files`` below ``base/top``, every folder and file made new, none through a link."""
    folders = {top}
    for rel in files:
        parts = rel.split("/")[:-1]
        folders.update("/".join([top, *parts[: i + 1]]) for i in range(len(parts)))
    for name in sorted(folders):  # a folder sorts before what it holds
        confined.make_dir(base, name)
    hashes = {}
    for rel, path in sorted(files.items()):
        mode = path.stat().st_mode & 0o755 | 0o600
        with open(path, "rb") as fin, confined.created(base, f"{top}/{rel}", mode=mode) as fout:
            hashes[rel] = copy_stream_hashed(fin, fout)
    return hashes


@contextmanager
def thawed(base: Path, folder: str, frozen: Frozen) -> Iterator[Snapshot]:
    """The source frozen in ``base/folder``, copied into a private temporary folder for the
    block; BundleError when it is missing or is not what was frozen."""
    with tempfile.TemporaryDirectory(prefix="trainhub-frozen-") as tmp:
        root = Path(tmp) / "workspace"
        root.mkdir()
        hashes = _read(base, f"{folder}/{SOURCE}", root, frozen)
        try:
            lineage = json.loads(
                confined.read_bytes(base, f"{folder}/{LINEAGE}", limit=_MAX_LINEAGE_BYTES)
            )
        except FileNotFoundError:
            lineage = None
        if not hashes or _digest(hashes, lineage) != frozen.digest:
            raise BundleError(
                f"the workspace frozen in {folder} is missing or was changed after it was "
                "frozen; its files are not the ones it was created with"
            )
        # A trial's or run's lineage says its code is the frozen workspace of this digest.
        yield Snapshot(root=root, lineage={**lineage, "frozen_workspace": frozen.digest})


def _read(base: Path, top: str, root: Path, frozen: Frozen) -> dict[str, tuple[str, int]]:
    """Copy the regular files and real folders below ``base/top`` into ``root``, stopping
    at more files or bytes than were frozen (a folder that grew is refused anyway)."""
    hashes: dict[str, tuple[str, int]] = {}
    total = 0
    for rel, st in confined.walk(base, top, limit=2 * frozen.files + 1000):
        target = root / rel
        if stat.S_ISDIR(st.st_mode):
            target.mkdir()
            continue
        with confined.opened(base, f"{top}/{rel}") as fin, open(target, "xb") as fout:
            hashes[rel] = copy_stream_hashed(fin, fout)  # type: ignore[arg-type]
        os.chmod(target, st.st_mode & 0o755 | 0o600)
        total += hashes[rel][1]
        if len(hashes) > frozen.files or total > frozen.bytes:
            break
    return hashes


def remove(base: Path, folder: str) -> None:
    """Delete a frozen source (gone already is fine); links inside are removed, not followed."""
    with suppress(FileNotFoundError):
        confined.remove_tree(base, folder)


def _digest(hashes: dict[str, tuple[str, int]], lineage: Any) -> str:
    document = {"files": sorted((rel, sha) for rel, (sha, _) in hashes.items()), "lineage": lineage}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
