"""``%pip install`` lines: taken out of the cells, checked, and written to requirements.json.

pip runs once per attempt, before any rank starts, with the bundle directory as its working
directory: requirement and constraint files a line names are copied to ``requirements/``, and
local packages must be among the workspace files. ``load_requirements`` is the one reader of
requirements.json, for the supervisor and the backends alike.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from trainhub.bundle.errors import BundleError
from trainhub.bundle.hashing import file_sha256
from trainhub.bundle.layout import REQUIREMENT_FILES, REQUIREMENTS, WORKSPACE
from trainhub.bundle.schema import BundleCell, Requirement, cell_label, read_list


def load_requirements(bundle_dir: Path) -> list[Requirement]:
    """The bundle's pip installs, in order; none when the bundle has no requirements.json."""
    path = Path(bundle_dir) / REQUIREMENTS
    if not path.exists():
        return []
    return read_list(path, Requirement)


_PIP_INSTALL = re.compile(
    r"^(?P<indent>[ \t]*)"
    r"(?:%pip|!\s*pip3?|!\s*(?:python3?|\{sys\.executable\})\s+-m\s+pip)"
    r"\s+install(?:\s+(?P<args>.*))?$"
)
_FILE_OPTIONS = {"-r": "--requirement", "-c": "--constraint"}
_LONG_FILE_OPTIONS = {"--requirement", "--constraint"}
_EDITABLE = {"-e", "--editable"}
_USER = "--user"


@dataclass
class PendingRequirement:
    cell_index: int
    line: int
    source: str
    argv: list[str]
    files: list[tuple[int, Path]] = field(default_factory=list)  # argv position -> file to copy


def pip_refusal(*, admin_allows: bool, backend: str, backend_installs: bool) -> str | None:
    """Why a job may not run a notebook's ``%pip`` lines, the end of the sentence that refuses
    them (:func:`extract_pip`); None where it may."""
    if not backend_installs:  # nothing installs before the ranks start: they run the image
        return f"the {backend} backend does not run %pip in jobs (a job runs its image as it is)"
    if not admin_allows:
        return "the administrator has disabled %pip in jobs"
    return None


def _pip_refused(cell_index: int, line: int, text: str, why: str) -> BundleError:
    return BundleError(
        f"{cell_label(cell_index)}, line {line}: `{text.strip()}` installs packages, and {why}. "
        "Use an image that already has these packages (ask your administrator to add them to a "
        "curated image), or remove the line."
    )


def extract_pip(
    cells: list[BundleCell], *, pip_refused: str | None, warnings: list[str]
) -> tuple[list[BundleCell], list[PendingRequirement]]:
    """Take ``%pip install`` / ``!pip install`` lines out of the cells; ``pip_refused``
    (:func:`pip_refusal`) refuses them.

    Each one is replaced by a line of the same indentation that does nothing, so line numbers
    in tracebacks still match the notebook.
    """
    out: list[BundleCell] = []
    found: list[PendingRequirement] = []
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
            if pip_refused is not None:
                raise _pip_refused(cell.cell_index, i + 1, text, pip_refused)
            argv = _pip_args(text, cell.cell_index, i + 1, warnings)
            found.append(PendingRequirement(cell.cell_index, i + 1, text, argv))
            indent = m.group("indent")
            for k in range(i, end + 1):
                note = f"# trainhub: installed before the cells ran: {lines[k].strip()}"
                lines[k] = f"{indent}pass  {note}" if indent else note
            i = end + 1
        out.append(dataclasses.replace(cell, source="\n".join(lines)))
    return out, found


def _pip_args(text: str, cell_index: int, line: int, warnings: list[str]) -> list[str]:
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
    if _USER in argv:  # what --user means in JupyterLab (a place of one's own) is the job's layer
        warnings.append(
            f"{where}: {_USER} left out of `{text}`: a job's %pip installs into the job's own "
            "environment, which later jobs and your kernel do not see (~/.local is seen by all)"
        )
        argv = [arg for arg in argv if arg != _USER]
    return argv


def _is_local_path(arg: str) -> bool:
    return "://" not in arg and (
        arg.startswith(("./", "../", "/", "~"))
        or arg in (".", "..")
        or arg.endswith((".whl", ".tar.gz", ".zip"))
    )


def resolve_requirement(
    req: PendingRequirement, root: Path, top: Path, files: dict[str, Path]
) -> PendingRequirement:
    """Check every path a pip line names and point it into the bundle.

    pip runs with the bundle directory as its working directory: requirement and constraint
    files are copied to ``requirements/``; local packages must be among the workspace files.
    """
    where = f"{cell_label(req.cell_index)}, line {req.line}"

    def inside(path_text: str) -> Path:
        path = (top / Path(path_text).expanduser()).resolve()
        if not path.is_relative_to(root):
            raise BundleError(f"{where}: {path_text!r} is outside the workspace")
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
    return PendingRequirement(req.cell_index, req.line, req.source, argv, copies)


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


def write_requirement_files(
    reqs: list[PendingRequirement], bundle_dir: Path
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
            hashes[argv[position]] = file_sha256(target)
        records.append(
            Requirement(cell_index=req.cell_index, line=req.line, source=req.source, argv=argv)
        )
    return records, hashes
