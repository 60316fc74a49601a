"""The workspace files that travel with a job: those next to the entry, minus what is ignored.

Inside a git work tree git itself decides what is ignored; elsewhere the .gitignore files from
the workspace root down (nested ones included) are read with ``pathspec``'s gitignore rules.
A link is never followed out of the workspace: it is left out with a note in the bundle's
warnings, as a link to a directory is (a link to a file inside is copied as that file).
Version control, caches, checkpoints and job directories stay behind, and the total size is
capped.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pathspec

from trainhub.bundle.errors import BundleError
from trainhub.bundle.hashing import copy_hashed

DEFAULT_MAX_WORKSPACE_BYTES = 200 * 2**20

# Never copied: version control, caches, Jupyter's autosaves.
_ALWAYS_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints"})
_GIT_TIMEOUT_S = 30


def collect_workspace(
    root: Path,
    top: Path,
    *,
    skip: Iterable[Path] = (),
    warnings: list[str] | None = None,
    ignore_rules: bool = True,
) -> dict[str, Path]:
    """Files under ``top`` to copy, keyed by their POSIX path relative to ``root``.

    Honours .gitignore (through git itself inside a repository; not with ``ignore_rules``
    off, for a snapshot they were applied to when it was taken), never follows a link out
    of ``root`` (nor one to a directory), noting each in ``warnings``, and leaves out .git,
    caches, checkpoints and job directories.
    """
    warnings = warnings if warnings is not None else []
    skip = {Path(p) for p in skip}
    tracked = _git_visible_files(top) if ignore_rules else None
    matcher = (
        GitignoreMatcher.for_ancestors(root, top) if ignore_rules and tracked is None else None
    )
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
            if name in _ALWAYS_SKIPPED_DIRS or path in skip:
                continue
            if matcher is not None and matcher.ignored(path, is_dir=True):
                continue
            if tracked is not None and rel_top not in tracked_dirs and rel_top not in tracked:
                continue  # ignored by git (a tracked link to a directory is listed as a file)
            if path.is_symlink():
                warnings.append(f"{_rel(path, root)} is a link to a directory; not followed")
                continue
            if not _is_job_output(path):
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            rel_top = path.relative_to(top).as_posix()
            if tracked is not None and rel_top not in tracked:
                continue
            if matcher is not None and matcher.ignored(path, is_dir=False):
                continue
            source = _regular_file(path, root, warnings)
            if source is not None:
                found[_rel(path, root)] = source
    return found


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _regular_file(path: Path, root: Path, warnings: list[str]) -> Path | None:
    """The file to copy for ``path``: itself, or for a link the file inside the workspace it
    names. A link out of the workspace, a broken link, a FIFO or a device is left out with a
    note that never says where a link leads (that would tell what exists outside)."""
    source = path
    if path.is_symlink():
        source = path.resolve()
        if not source.is_relative_to(root):
            warnings.append(f"{_rel(path, root)} is a link out of the workspace; left out")
            return None
        if not source.exists():
            warnings.append(f"{_rel(path, root)} is a broken link; left out")
            return None
    try:
        regular = stat.S_ISREG(source.stat().st_mode)
    except OSError:
        regular = False
    if not regular:
        warnings.append(f"{_rel(path, root)} is not a regular file; left out")
        return None
    return source


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


def check_size(files: dict[str, Path], cap: int, top: str) -> None:
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


def copy_workspace(files: dict[str, Path], target: Path) -> dict[str, tuple[str, int]]:
    """Copy files, returning ``{relative path: (sha256, size)}`` hashed from the bytes copied."""
    hashes: dict[str, tuple[str, int]] = {}
    target.mkdir(parents=True, exist_ok=True)
    for rel in sorted(files):
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        hashes[rel] = copy_hashed(files[rel], dst)
    return hashes


# --- .gitignore outside git ---------------------------------------------------------------


class GitignoreMatcher:
    """gitignore(5) through ``pathspec``, one spec per .gitignore file found.

    Each file's patterns match paths relative to its own directory; a deeper file decides
    over an outer one whenever one of its patterns matches (as git does).
    """

    def __init__(self) -> None:
        self.specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
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
            lines = ignore.read_text(errors="replace").splitlines()
            self.specs.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.specs:  # outer files first, the deepest match wins
            if not path.is_relative_to(base) or path == base:
                continue
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(rel).include
            if include is not None:
                verdict = include
        return verdict
