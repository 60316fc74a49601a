"""Notebook (or script) -> bundle: the orchestration of one compile.

``compile_bundle`` reads the notebook's cells (trainhub.bundle.cells), takes the ``%pip``
lines out (trainhub.bundle.requirements), collects the workspace files
(trainhub.bundle.workspace), copies and hashes everything (trainhub.bundle.hashing) and
writes the files named in trainhub.bundle.layout, in the schema of trainhub.bundle.schema.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from trainhub.bundle.cells import inject_parameters, read_notebook, select_cells
from trainhub.bundle.errors import BundleError
from trainhub.bundle.hashing import content_hash
from trainhub.bundle.layout import CELLS, MANIFEST, NOTEBOOK, REQUIREMENTS, WORKSPACE
from trainhub.bundle.requirements import (
    PendingRequirement,
    extract_pip,
    resolve_requirement,
    write_requirement_files,
)
from trainhub.bundle.schema import BundleCell, BundleManifest
from trainhub.bundle.workspace import (
    DEFAULT_MAX_WORKSPACE_BYTES,
    check_size,
    collect_workspace,
    copy_workspace,
)
from trainhub.jobs.directory import write_json_atomic
from trainhub.jobs.sources import NotebookSource
from trainhub.jobs.spec import JobSpec


def compile_bundle(
    spec: JobSpec,
    workspace_root: Path,
    bundle_dir: Path,
    *,
    pip_refused: str | None = None,
    max_workspace_bytes: int = DEFAULT_MAX_WORKSPACE_BYTES,
    frozen: bool = False,
) -> BundleManifest:
    """Write the bundle of ``spec`` into ``bundle_dir`` (absent or empty); return its manifest.
    ``pip_refused``: why the notebook's ``%pip`` lines may not run
    (:func:`~trainhub.bundle.requirements.pip_refusal`), None where they may. ``frozen``:
    ``workspace_root`` is a snapshot taken earlier (trainhub.bundle.snapshot), whose every file
    travels: the ignore rules were applied when it was taken."""
    root = Path(workspace_root).resolve()
    entry = resolve_entry(root, spec.source.path)
    bundle_dir = Path(bundle_dir)
    if bundle_dir.exists() and any(bundle_dir.iterdir()):
        raise BundleError(f"the bundle directory {bundle_dir.name} is not empty")
    entry_rel = entry.relative_to(root).as_posix()
    workdir = entry.relative_to(root).parent.as_posix()
    warnings: list[str] = []

    cells: list[BundleCell] = []
    requirements: list[PendingRequirement] = []
    notebook_sha256 = None
    notebook: dict | None = None
    if isinstance(spec.source, NotebookSource):
        notebook_sha256, notebook, cells, requirements = _compile_cells(
            spec, entry, pip_refused=pip_refused, warnings=warnings
        )

    files = bundle_files(
        spec, root, entry, skip={bundle_dir.resolve()}, warnings=warnings, frozen=frozen
    )
    check_size(files, max_workspace_bytes, workdir)
    resolved = [resolve_requirement(r, root, entry.parent, files) for r in requirements]

    bundle_dir.mkdir(parents=True, exist_ok=True)
    file_hashes = copy_workspace(files, bundle_dir / WORKSPACE)
    # The runner starts in the entry's directory, which exists even when nothing was copied.
    (bundle_dir / WORKSPACE / workdir).mkdir(parents=True, exist_ok=True)
    req_records, req_hashes = write_requirement_files(resolved, bundle_dir)
    write_json_atomic(bundle_dir / REQUIREMENTS, [r.to_json() for r in req_records])
    if cells:
        write_json_atomic(bundle_dir / CELLS, [c.to_json() for c in cells])
    if notebook is not None:
        write_json_atomic(bundle_dir / NOTEBOOK, notebook)

    args = list(getattr(spec.source, "args", []))
    digest = content_hash(
        kind=spec.source.kind,
        entry=entry_rel,
        args=args,
        cells=cells,
        parameters=spec.parameters,
        requirements=req_records,
        requirement_files=req_hashes,
        files=file_hashes,
    )
    manifest = BundleManifest(
        kind=spec.source.kind,
        entry=entry_rel,
        args=args,
        workdir=workdir,
        selection=(
            spec.source.cells.model_dump(mode="json")
            if isinstance(spec.source, NotebookSource)
            else None
        ),
        cell_indices=[c.cell_index for c in cells if c.cell_index is not None],
        parameters=spec.parameters,
        notebook_sha256=notebook_sha256,
        content_hash=digest,
        requirements=len(req_records),
        file_count=len(files),
        total_bytes=sum(size for _, size in file_hashes.values()),
        warnings=warnings,
    )
    write_json_atomic(bundle_dir / MANIFEST, manifest.to_json())
    return manifest


def bundle_files(
    spec: JobSpec,
    root: Path,
    entry: Path,
    *,
    skip: set[Path] | None = None,
    warnings: list[str],
    frozen: bool = False,
) -> dict[str, Path]:
    """The workspace files the bundle of ``spec`` carries, by path relative to ``root``: those
    next to the entry (trainhub.bundle.workspace), a notebook itself left out (its cells
    travel in cells.json), a script always in (run even if ignored)."""
    entry_rel = entry.relative_to(root).as_posix()
    files = collect_workspace(
        root, entry.parent, skip=skip or set(), warnings=warnings, ignore_rules=not frozen
    )
    if isinstance(spec.source, NotebookSource):
        files.pop(entry_rel, None)
    else:
        files.setdefault(entry_rel, entry)
    return files


def _compile_cells(
    spec: JobSpec, entry: Path, *, pip_refused: str | None, warnings: list[str]
) -> tuple[str, dict, list[BundleCell], list[PendingRequirement]]:
    """The notebook's hash, the notebook (nbformat 4), the cells to run and the pip lines
    taken out of them."""
    assert isinstance(spec.source, NotebookSource)
    raw = entry.read_bytes()
    notebook = read_notebook(entry, raw)
    selected = select_cells(notebook, spec.source.cells, spec.source.path, warnings)
    cells, requirements = extract_pip(selected, pip_refused=pip_refused, warnings=warnings)
    cells = inject_parameters(
        notebook, cells, spec.parameters, warnings, allow_new=spec.allow_new_parameters
    )
    return hashlib.sha256(raw).hexdigest(), notebook.doc, cells, requirements


def resolve_entry(root: Path, relative: str) -> Path:
    if Path(relative).is_absolute():
        raise BundleError(f"source.path {relative!r} must be relative to the workspace root")
    entry = (root / relative).resolve()
    if not entry.is_relative_to(root):
        raise BundleError(f"source.path {relative!r} is outside the workspace")
    if not entry.is_file():
        raise BundleError(f"source.path {relative!r}: no such file in the workspace")
    return entry
