"""Notebook (or script) -> bundle: the code snapshot every rank of a job runs.

A bundle is a directory::

    manifest.json       BundleManifest: what was compiled, content hash, warnings
    cells.json          notebook jobs: the cells to run, in order (magics kept)
    requirements.json   pip installs taken out of the cells, run once before them
    requirements/       copies of the requirement files those installs name (-r/-c)
    workspace/          the files next to the entry, at their paths relative to the workspace root

Cell indices are 0-based positions in the notebook's cell list, markdown cells included
(JupyterLab's activeCellIndex); messages say "cell {index+1}".
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from math import isfinite
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainhub.bundle.layout import CELLS, MANIFEST, REQUIREMENTS, WORKSPACE, cell_label
from trainhub.jobs.directory import write_json_atomic
from trainhub.jobs.spec import CellSelection, JobSpec, NotebookSource

SKIP_TAG = "trainhub:skip"
PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"
REQUIREMENT_FILES = "requirements"
DEFAULT_MAX_WORKSPACE_BYTES = 200 * 2**20

# Never copied: version control, caches, Jupyter's autosaves.
_ALWAYS_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints"})
_GIT_TIMEOUT_S = 30


class BundleError(ValueError):
    """The notebook or its workspace cannot become a job; the message names the file or cell."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BundleCell(_Model):
    cell_index: int | None = Field(
        description="Position in the notebook; None for the injected parameters"
    )
    source: str
    tags: list[str] = Field(default_factory=list)
    injected: bool = False


class Requirement(_Model):
    cell_index: int
    line: int = Field(description="1-based line inside the cell")
    source: str = Field(description="The line as written in the notebook")
    argv: list[str] = Field(
        description="Arguments after 'pip install', paths relative to the bundle"
    )


class BundleManifest(_Model):
    format: int = 1
    kind: Literal["notebook", "script"]
    entry: str = Field(description="Notebook or script path, relative to the workspace root")
    args: list[str] = Field(default_factory=list)
    workdir: str = Field(description="Directory the code runs in, relative to bundle/workspace")
    selection: CellSelection | None = None
    cell_indices: list[int] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    notebook_sha256: str | None = None
    content_hash: str
    requirements: int = 0
    file_count: int
    total_bytes: int
    warnings: list[str] = Field(default_factory=list)

    @classmethod
    def load(cls, bundle_dir: Path) -> BundleManifest:
        return cls.model_validate_json((Path(bundle_dir) / MANIFEST).read_text())


def load_cells(bundle_dir: Path) -> list[BundleCell]:
    return [
        BundleCell.model_validate(c) for c in json.loads((Path(bundle_dir) / CELLS).read_text())
    ]


def load_requirements(bundle_dir: Path) -> list[Requirement]:
    path = Path(bundle_dir) / REQUIREMENTS
    if not path.exists():
        return []
    return [Requirement.model_validate(r) for r in json.loads(path.read_text())]


# --- compile ------------------------------------------------------------------------------


def compile_bundle(
    spec: JobSpec,
    workspace_root: Path,
    bundle_dir: Path,
    *,
    allow_pip: bool = True,
    max_workspace_bytes: int = DEFAULT_MAX_WORKSPACE_BYTES,
) -> BundleManifest:
    """Write the bundle of ``spec`` into ``bundle_dir`` (absent or empty); return its manifest."""
    root = Path(workspace_root).resolve()
    entry = _resolve_entry(root, spec.source.path)
    bundle_dir = Path(bundle_dir)
    if bundle_dir.exists() and any(bundle_dir.iterdir()):
        raise BundleError(f"bundle directory {bundle_dir} is not empty")
    entry_rel = entry.relative_to(root).as_posix()
    workdir = entry.relative_to(root).parent.as_posix()
    warnings: list[str] = []

    cells: list[BundleCell] = []
    requirements: list[_PendingRequirement] = []
    notebook_sha256 = None
    if isinstance(spec.source, NotebookSource):
        notebook_sha256, cells, requirements = _compile_cells(
            spec, entry, allow_pip=allow_pip, warnings=warnings
        )

    files = collect_workspace(root, entry.parent, skip={bundle_dir.resolve()}, warnings=warnings)
    if isinstance(spec.source, NotebookSource):
        files.pop(entry_rel, None)  # its cells are in cells.json
    else:
        files.setdefault(entry_rel, entry)  # run it even if ignored
    _check_size(files, max_workspace_bytes, workdir)
    resolved = [_resolve_requirement(r, root, entry.parent, files) for r in requirements]

    bundle_dir.mkdir(parents=True, exist_ok=True)
    file_hashes = _copy_workspace(files, bundle_dir / WORKSPACE)
    # The runner starts in the entry's directory, which exists even when nothing was copied.
    (bundle_dir / WORKSPACE / workdir).mkdir(parents=True, exist_ok=True)
    req_records, req_hashes = _write_requirement_files(resolved, bundle_dir)
    write_json_atomic(bundle_dir / REQUIREMENTS, [r.model_dump() for r in req_records])
    if cells:
        write_json_atomic(bundle_dir / CELLS, [c.model_dump() for c in cells])

    args = list(getattr(spec.source, "args", []))
    content_hash = _content_hash(
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
        selection=spec.source.cells if isinstance(spec.source, NotebookSource) else None,
        cell_indices=[c.cell_index for c in cells if c.cell_index is not None],
        parameters=spec.parameters,
        notebook_sha256=notebook_sha256,
        content_hash=content_hash,
        requirements=len(req_records),
        file_count=len(files),
        total_bytes=sum(size for _, size in file_hashes.values()),
        warnings=warnings,
    )
    write_json_atomic(bundle_dir / MANIFEST, manifest.model_dump(mode="json"))
    return manifest


def _compile_cells(
    spec: JobSpec, entry: Path, *, allow_pip: bool, warnings: list[str]
) -> tuple[str, list[BundleCell], list[_PendingRequirement]]:
    """The notebook's hash, the cells to run and the pip lines taken out of them."""
    assert isinstance(spec.source, NotebookSource)
    raw = entry.read_bytes()
    notebook = read_notebook(entry, raw)
    selected = select_cells(notebook, spec.source.cells, spec.source.path, warnings)
    cells, requirements = extract_pip(selected, spec.source.path, allow_pip=allow_pip)
    cells = inject_parameters(notebook, cells, spec.parameters, warnings)
    return hashlib.sha256(raw).hexdigest(), cells, requirements


def _resolve_entry(root: Path, relative: str) -> Path:
    if Path(relative).is_absolute():
        raise BundleError(f"source.path {relative!r} must be relative to the workspace root")
    entry = (root / relative).resolve()
    if not entry.is_relative_to(root):
        raise BundleError(f"source.path {relative!r} is outside the workspace {root}")
    if not entry.is_file():
        raise BundleError(f"source.path {relative!r}: no such file in the workspace {root}")
    return entry


@dataclass(frozen=True)
class Notebook:
    """The parts of an .ipynb a bundle needs."""

    cells: list[dict[str, Any]]
    nbformat: int


def read_notebook(path: Path, raw: bytes | None = None) -> Notebook:
    """Read the notebook's JSON directly.

    nbformat's full schema validation loads jsonschema's format checkers, which costs seconds
    on every submit; a bundle needs only the cells, so check just what it relies on.
    """
    try:
        doc = json.loads((path.read_bytes() if raw is None else raw).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{path.name} is not a readable notebook: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise BundleError(f"{path.name} is not a readable notebook: it has no list of cells")
    major = doc.get("nbformat")
    if major != 4:
        raise BundleError(f"{path.name} is nbformat {major}; save it with JupyterLab (nbformat 4)")
    for index, cell in enumerate(doc["cells"]):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise BundleError(f"{path.name}: {cell_label(index)} (index {index}) is not a valid cell")
        source = cell.get("source", "")
        if not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(x, str) for x in source))):
            raise BundleError(f"{path.name}: {cell_label(index)} (index {index}) has an invalid source")
    return Notebook(cells=doc["cells"], nbformat=major)


# --- cell selection -----------------------------------------------------------------------


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def select_cells(
    notebook: Any, selection: CellSelection, notebook_path: str, warnings: list[str]
) -> list[BundleCell]:
    """The code cells ``selection`` picks, in notebook order; ``trainhub:skip`` always excluded."""
    nb_cells = notebook.cells
    if selection.mode == "indices":
        for index in selection.indices:
            if index >= len(nb_cells):
                raise BundleError(
                    f"{notebook_path}: cell index {index} ({cell_label(index)}) does not exist; "
                    f"the notebook has {len(nb_cells)} cells (indices 0-{len(nb_cells) - 1})"
                )
            kind = nb_cells[index].get("cell_type")
            if kind != "code":
                raise BundleError(
                    f"{notebook_path}: {cell_label(index)} (index {index}) is a {kind} cell, "
                    "not a code cell"
                )
        candidates = sorted(set(selection.indices))
    elif selection.mode == "tags":
        wanted = set(selection.tags)
        candidates = [
            i
            for i, c in enumerate(nb_cells)
            if c.get("cell_type") == "code" and wanted & set(_tags(c))
        ]
        if not candidates:
            raise BundleError(
                f"{notebook_path}: no code cell is tagged {', '.join(sorted(wanted))}"
            )
    else:
        candidates = [i for i, c in enumerate(nb_cells) if c.get("cell_type") == "code"]

    chosen = []
    for i in candidates:
        tags = _tags(nb_cells[i])
        if SKIP_TAG in tags:
            if selection.mode == "indices":
                warnings.append(f"{cell_label(i)} is tagged {SKIP_TAG} and was left out")
            continue
        source = _source(nb_cells[i])
        if source.strip():
            chosen.append(BundleCell(cell_index=i, source=source, tags=tags))
    if not chosen:
        raise BundleError(f"{notebook_path}: the selection contains no code to run")
    return chosen


# --- parameters ---------------------------------------------------------------------------


def _parameters_cell(notebook: Any) -> int | None:
    for i, cell in enumerate(notebook.cells):
        if cell.get("cell_type") == "code" and PARAMETERS_TAG in _tags(cell):
            return i
    return None


def _literal(name: str, value: Any) -> str:
    if isinstance(value, float) and not isfinite(value):
        return f"float({str(value)!r})"
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise BundleError(f"parameters.{name}: {text} is not a Python literal") from None
    return text


def parameters_source(parameters: dict[str, Any]) -> str:
    lines = ["# Parameters injected by trainhub"]
    lines += [f"{name} = {_literal(name, value)}" for name, value in parameters.items()]
    return "\n".join(lines) + "\n"


def assigned_names(source: str) -> set[str] | None:
    """Names a cell assigns at top level; None when it cannot be parsed."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None
    names: set[str] = set()
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


def inject_parameters(
    notebook: Any, cells: list[BundleCell], parameters: dict[str, Any], warnings: list[str]
) -> list[BundleCell]:
    """Insert the parameters cell right after the cell tagged ``parameters`` (papermill's rule)."""
    if not parameters:
        return cells
    injected = BundleCell(
        cell_index=None, source=parameters_source(parameters), tags=[INJECTED_TAG], injected=True
    )
    at = _parameters_cell(notebook)
    if at is None:
        warnings.append(
            f"no cell is tagged '{PARAMETERS_TAG}'; the parameters "
            f"({', '.join(parameters)}) are set before the first cell"
        )
        return [injected, *cells]
    if all(c.cell_index != at for c in cells):
        warnings.append(
            f"{cell_label(at)}, tagged '{PARAMETERS_TAG}', is not selected; "
            "the parameters are set where it would have run"
        )
    known = assigned_names(_source(notebook.cells[at]))
    if known is None:
        warnings.append(
            f"{cell_label(at)} (parameters) could not be parsed to check parameter names"
        )
    else:
        for name in parameters:
            if name not in known:
                warnings.append(
                    f"parameter '{name}' is not assigned in {cell_label(at)} (parameters); "
                    "it is set anyway"
                )
    position = next(
        (k for k, c in enumerate(cells) if c.cell_index is not None and c.cell_index > at),
        len(cells),
    )
    return [*cells[:position], injected, *cells[position:]]


# --- %pip ---------------------------------------------------------------------------------

_PIP_INSTALL = re.compile(
    r"^(?P<indent>[ \t]*)"
    r"(?:%pip|!\s*pip3?|!\s*(?:python3?|\{sys\.executable\})\s+-m\s+pip)"
    r"\s+install(?:\s+(?P<args>.*))?$"
)
_FILE_OPTIONS = {"-r": "--requirement", "-c": "--constraint"}
_LONG_FILE_OPTIONS = {"--requirement", "--constraint"}
_EDITABLE = {"-e", "--editable"}


@dataclass
class _PendingRequirement:
    cell_index: int
    line: int
    source: str
    argv: list[str]
    files: list[tuple[int, Path]] = field(default_factory=list)  # argv position -> file to copy


def _pip_refused(cell_index: int, line: int, text: str) -> BundleError:
    return BundleError(
        f"{cell_label(cell_index)}, line {line}: `{text.strip()}` installs packages, and the "
        "administrator has disabled %pip in jobs. Use an image that already has these packages "
        "(ask your administrator to add them to a curated image), or remove the line."
    )


def extract_pip(
    cells: list[BundleCell], notebook_path: str, *, allow_pip: bool
) -> tuple[list[BundleCell], list[_PendingRequirement]]:
    """Take ``%pip install`` / ``!pip install`` lines out of the cells.

    Each one is replaced by a line of the same indentation that does nothing, so line numbers
    in tracebacks still match the notebook.
    """
    out: list[BundleCell] = []
    found: list[_PendingRequirement] = []
    for cell in cells:
        assert cell.cell_index is not None
        lines = cell.source.split("\n")
        i = 0
        while i < len(lines):
            m = _PIP_INSTALL.match(lines[i])
            if not m:
                i += 1
                continue
            end = i
            while lines[end].rstrip().endswith("\\") and end + 1 < len(lines):
                end += 1
            text = " ".join(ln.rstrip().rstrip("\\").strip() for ln in lines[i : end + 1])
            if not allow_pip:
                raise _pip_refused(cell.cell_index, i + 1, text)
            argv = _pip_args(text, cell.cell_index, i + 1)
            found.append(_PendingRequirement(cell.cell_index, i + 1, text, argv))
            indent = m.group("indent")
            for k in range(i, end + 1):
                note = f"# trainhub: installed before the cells ran: {lines[k].strip()}"
                lines[k] = f"{indent}pass  {note}" if indent else note
            i = end + 1
        out.append(cell.model_copy(update={"source": "\n".join(lines)}))
    return out, found


def _pip_args(text: str, cell_index: int, line: int) -> list[str]:
    m = _PIP_INSTALL.match(text)
    assert m is not None
    args = m.group("args") or ""
    where = f"{cell_label(cell_index)}, line {line}"
    if "$" in args or re.search(r"\{[^}]*\}", args):
        raise BundleError(
            f"{where}: `{text}` uses variable expansion; write the package names literally"
        )
    try:
        argv = shlex.split(args, comments=True)
    except ValueError as e:
        raise BundleError(f"{where}: cannot parse `{text}`: {e}") from None
    if not argv:
        raise BundleError(f"{where}: `{text}` names no package")
    return argv


def _is_local_path(arg: str) -> bool:
    return "://" not in arg and (
        arg.startswith(("./", "../", "/", "~"))
        or arg in (".", "..")
        or arg.endswith((".whl", ".tar.gz", ".zip"))
    )


def _resolve_requirement(
    req: _PendingRequirement, root: Path, top: Path, files: dict[str, Path]
) -> _PendingRequirement:
    """Check every path a pip line names and point it into the bundle.

    pip runs with the bundle directory as its working directory: requirement and constraint
    files are copied to ``requirements/``; local packages must be among the workspace files.
    """
    where = f"{cell_label(req.cell_index)}, line {req.line}"

    def inside(path_text: str) -> Path:
        path = (top / Path(path_text).expanduser()).resolve()
        if not path.is_relative_to(root):
            raise BundleError(f"{where}: {path_text!r} is outside the workspace {root}")
        return path

    argv: list[str] = []
    copies: list[tuple[int, Path]] = []
    args = iter(req.argv)
    for arg in args:
        option, value = arg, None
        if arg in _FILE_OPTIONS or arg in _LONG_FILE_OPTIONS or arg in _EDITABLE:
            value = next(args, None)
            if value is None:
                raise BundleError(f"{where}: {arg} needs a value")
        elif arg.startswith(("--requirement=", "--constraint=", "--editable=")):
            option, value = arg.split("=", 1)
        elif arg[:2] in _FILE_OPTIONS and len(arg) > 2:
            option, value = arg[:2], arg[2:]
        if value is None:
            if _is_local_path(arg):
                argv.append(_bundled_path(inside(arg), root, top, files, where, arg))
            else:
                argv.append(arg)
            continue
        if option in _FILE_OPTIONS or option in _LONG_FILE_OPTIONS:
            path = inside(value)
            if not path.is_file():
                raise BundleError(f"{where}: requirement file {value!r} does not exist")
            argv.append(option)
            copies.append((len(argv), path))
            argv.append(path.name)  # rewritten when copied
        elif _is_local_path(value):
            argv += [option, _bundled_path(inside(value), root, top, files, where, value)]
        else:
            argv += [option, value]
    return _PendingRequirement(req.cell_index, req.line, req.source, argv, copies)


def _bundled_path(
    path: Path, root: Path, top: Path, files: dict[str, Path], where: str, text: str
) -> str:
    rel = path.relative_to(root).as_posix()
    copied = rel in files or any(f.startswith(rel + "/") for f in files)
    if not path.is_relative_to(top) or not copied:
        raise BundleError(
            f"{where}: {text!r} is not among the files copied with the notebook "
            f"(only {top.relative_to(root).as_posix() or '.'} and below, minus .gitignore)"
        )
    return f"{WORKSPACE}/{rel}"


def _write_requirement_files(
    reqs: list[_PendingRequirement], bundle_dir: Path
) -> tuple[list[Requirement], dict[str, str]]:
    records: list[Requirement] = []
    hashes: dict[str, str] = {}
    for req in reqs:
        argv = list(req.argv)
        for position, source in req.files:
            name = f"{len(hashes)}-{source.name}"
            target = bundle_dir / REQUIREMENT_FILES / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            argv[position] = f"{REQUIREMENT_FILES}/{name}"
            hashes[argv[position]] = hashlib.sha256(target.read_bytes()).hexdigest()
        records.append(
            Requirement(cell_index=req.cell_index, line=req.line, source=req.source, argv=argv)
        )
    return records, hashes


# --- workspace files ----------------------------------------------------------------------


def collect_workspace(
    root: Path, top: Path, *, skip: Iterable[Path] = (), warnings: list[str] | None = None
) -> dict[str, Path]:
    """Files under ``top`` to copy, keyed by their POSIX path relative to ``root``.

    Honours .gitignore (through git itself inside a repository), never follows a link out
    of ``root``, and leaves out .git, caches, checkpoints and job directories.
    """
    warnings = warnings if warnings is not None else []
    skip = {Path(p) for p in skip}
    tracked = _git_visible_files(top)
    matcher = None if tracked is not None else GitignoreMatcher.for_ancestors(root, top)
    tracked_dirs = {p.rsplit("/", k)[0] for p in tracked or () for k in range(1, p.count("/") + 1)}
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        if matcher is not None:
            matcher.add_directory(here)
        kept = []
        for name in sorted(dirnames):
            path = here / name
            rel_top = path.relative_to(top).as_posix()
            if name in _ALWAYS_SKIPPED_DIRS or path in skip or _is_job_output(path):
                continue
            if matcher is not None and matcher.ignored(path, is_dir=True):
                continue
            if tracked is not None and rel_top not in tracked_dirs and rel_top not in tracked:
                continue  # ignored by git (a tracked link to a directory is listed as a file)
            if path.is_symlink():
                _check_link(path, root)
                warnings.append(
                    f"{path.relative_to(root).as_posix()} is a link to a directory; not followed"
                )
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            rel_top = path.relative_to(top).as_posix()
            if tracked is not None and rel_top not in tracked:
                continue
            if matcher is not None and matcher.ignored(path, is_dir=False):
                continue
            if path.is_symlink():
                _check_link(path, root)
                if not path.exists():
                    warnings.append(
                        f"{path.relative_to(root).as_posix()} is a broken link; left out"
                    )
                    continue
            found[path.relative_to(root).as_posix()] = path
    return found


def _check_link(path: Path, root: Path) -> None:
    target = path.resolve()
    if not target.is_relative_to(root):
        raise BundleError(
            f"{path.relative_to(root).as_posix()} is a symbolic link to {target}, outside the "
            "workspace; copy what it points to into the workspace or remove the link"
        )


def _is_job_output(path: Path) -> bool:
    """A trainhub job directory, or a tree of ``<step>/manifest.json`` checkpoints.

    Checkpoints saved from an interactive session land in ``./checkpoints`` or in
    ``$TRAINHUB_CHECKPOINT_DIR`` (see trainhub.checkpoint), often right next to the notebook.
    """
    if (path / "spec.json").is_file() and (path / "events.jsonl").exists():
        return True
    custom = os.environ.get("TRAINHUB_CHECKPOINT_DIR")
    if path.name == "checkpoints" or (custom and Path(custom).resolve() == path.resolve()):
        try:
            return any(
                p.is_dir() and p.name.isdigit() and (p / "manifest.json").is_file()
                for p in path.iterdir()
            )
        except OSError:
            return False
    return False


def _git(
    args: list[str], cwd: Path, timeout: float = _GIT_TIMEOUT_S
) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _git_visible_files(top: Path) -> set[str] | None:
    """Paths (relative to ``top``) git does not ignore; None when ``top`` is not in a work tree."""
    probe = _git(["rev-parse", "--is-inside-work-tree"], top)
    if probe is None or probe.returncode != 0 or probe.stdout.strip() != b"true":
        return None
    listed = _git(["ls-files", "--cached", "--others", "--exclude-standard", "-z"], top)
    if listed is None or listed.returncode != 0:
        return None
    return {p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def _check_size(files: dict[str, Path], cap: int, top: str) -> None:
    sizes = {rel: path.stat().st_size for rel, path in files.items()}
    total = sum(sizes.values())
    if total <= cap:
        return
    largest = sorted(sizes.items(), key=lambda kv: kv[1], reverse=True)[:5]
    listing = ", ".join(f"{rel} ({_mib(size)})" for rel, size in largest)
    raise BundleError(
        f"the files next to the notebook ({top or '.'} and below) add up to {_mib(total)}, over "
        f"the {_mib(cap)} cap. Largest: {listing}. Add them to .gitignore or read them from a "
        "dataset instead."
    )


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _copy_workspace(files: dict[str, Path], target: Path) -> dict[str, tuple[str, int]]:
    """Copy files, returning ``{relative path: (sha256, size)}`` hashed from the bytes copied."""
    hashes: dict[str, tuple[str, int]] = {}
    target.mkdir(parents=True, exist_ok=True)
    for rel in sorted(files):
        src, dst = files[rel], target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        with open(src, "rb") as fin, open(dst, "wb") as fout:
            while chunk := fin.read(1 << 20):
                digest.update(chunk)
                fout.write(chunk)
                size += len(chunk)
        os.chmod(dst, src.stat().st_mode & 0o755 | 0o600)
        hashes[rel] = (digest.hexdigest(), size)
    return hashes


def _content_hash(
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


# --- .gitignore outside git ---------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreRule:
    base: Path
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _glob_to_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 1)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_gitignore(text: str, base: Path) -> list[_IgnoreRule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob_to_regex(line)
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z")
        rules.append(_IgnoreRule(base, regex, negated, dir_only))
    return rules


class GitignoreMatcher:
    """The subset of gitignore(5) people write: globs, **, anchoring, !negation, trailing /."""

    def __init__(self) -> None:
        self.rules: list[_IgnoreRule] = []
        self._seen: set[Path] = set()

    @classmethod
    def for_ancestors(cls, root: Path, top: Path) -> GitignoreMatcher:
        """A matcher holding the .gitignore files from ``root`` down to ``top``."""
        matcher = cls()
        parts = top.relative_to(root).parts
        for depth in range(len(parts) + 1):
            matcher.add_directory(root.joinpath(*parts[:depth]))
        return matcher

    def add_directory(self, directory: Path) -> None:
        if directory in self._seen:
            return
        self._seen.add(directory)
        ignore = directory / ".gitignore"
        if ignore.is_file():
            self.rules += parse_gitignore(ignore.read_text(errors="replace"), directory)

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        verdict = False
        for rule in self.rules:  # outer files first, later lines win
            if rule.dir_only and not is_dir:
                continue
            if not path.is_relative_to(rule.base):
                continue
            if rule.regex.match(path.relative_to(rule.base).as_posix()):
                verdict = not rule.negated
        return verdict
