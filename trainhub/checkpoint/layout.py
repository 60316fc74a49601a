"""Checkpoints on disk: layout, manifests, browsing, deletion and safe file lookup.

Layout (DESIGN.md, "The job directory is the data plane")::

    checkpoints/
      0000000100/          one directory per step, the step zero-padded to 10 digits
        manifest.json      {step, time, metrics, files: [{name, bytes, sha256}], world_size,
                           job_id, attempt, format, sharded}
        state.pt           replicated saves (format "torch")
        .metadata, *.distcp  sharded saves (format "dcp", torch.distributed.checkpoint);
                           older sharded saves hold rank-<r>.pt per rank (format "torch")
      .tmp-...             work in progress or debris of a killed writer; never a checkpoint

A step directory only ever appears by an atomic rename of a complete, fsynced temp directory,
so every directory named like a step holds a whole checkpoint. Readers still check the
manifest and file sizes, and skip anything that does not add up.

This module never imports torch: the server and the CLI browse checkpoints with it. The
writer that training code calls lives in :mod:`trainhub.checkpoint.writer`.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import posixpath
import secrets
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir, fsync_dir

MANIFEST = "manifest.json"
TEMP_PREFIX = ".tmp-"
STEP_DIGITS = 10
FORMAT = "torch"  # state.pt, or rank-<r>.pt per rank (older sharded saves)
DCP_FORMAT = "dcp"  # sharded: torch.distributed.checkpoint files, loaded with dcp.load


class CheckpointFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    bytes: int = Field(ge=0)
    sha256: str


class CheckpointManifest(BaseModel):
    """What ``manifest.json`` holds."""

    model_config = ConfigDict(extra="ignore")

    step: int = Field(ge=0)
    time: float
    metrics: dict[str, float] = Field(default_factory=dict)
    files: list[CheckpointFile]
    world_size: int = Field(default=1, ge=1)
    job_id: str | None = None
    attempt: int = Field(default=0, ge=0)
    format: str = FORMAT
    sharded: bool = False


class CheckpointInfo(CheckpointManifest):
    """One complete checkpoint: its manifest, total size and directory."""

    bytes: int = Field(ge=0)
    path: Path

    @classmethod
    def from_manifest(cls, manifest: CheckpointManifest, path: Path) -> CheckpointInfo:
        total = sum(f.bytes for f in manifest.files)
        return cls(**manifest.model_dump(), bytes=total, path=path)

    def __repr__(self) -> str:
        from trainhub.reprs import checkpoint_repr

        return checkpoint_repr(self)

    def _repr_html_(self) -> str:
        from trainhub.reprs import CHECKPOINT_HEADERS, checkpoint_row, html_table

        return html_table(CHECKPOINT_HEADERS, [checkpoint_row(self)])

    def file_for_rank(self, rank: int) -> Path:
        """The file a rank loads: ``state.pt``, or ``rank-<rank>.pt`` for sharded saves."""
        if self.format == DCP_FORMAT:
            raise ValueError(
                f"{self.path} is a torch.distributed.checkpoint checkpoint: load it into your "
                "state with trainhub.checkpoint.load(into=...)"
            )
        if not self.sharded:
            return self.path / "state.pt"
        if not 0 <= rank < self.world_size:
            raise ValueError(
                f"rank {rank} is outside this sharded checkpoint's world size {self.world_size} "
                f"({self.path})"
            )
        return self.path / shard_name(rank)


# --- names ---------------------------------------------------------------------------------


def step_name(step: int) -> str:
    return f"{step:0{STEP_DIGITS}d}"


def shard_name(rank: int) -> str:
    return f"rank-{rank}.pt"


def parse_step_name(name: str) -> int | None:
    """The step a directory name stands for, or None when it is not a checkpoint name."""
    if len(name) == STEP_DIGITS and name.isascii() and name.isdigit():
        return int(name)
    return None


def coerce_step(step: int | str) -> int:
    """A step from code or from a request: a non-negative int, or a string of digits."""
    if isinstance(step, bool):
        raise ValueError(f"step must be a non-negative integer, got {step!r}")
    if isinstance(step, str):
        if not (step.isascii() and step.isdigit()):
            raise ValueError(f"step must be a non-negative integer, got {step!r}")
        step = int(step)
    if not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be a non-negative integer, got {step!r}")
    return step


def step_dir(checkpoints_dir: Path, step: int | str) -> Path:
    return Path(checkpoints_dir) / step_name(coerce_step(step))


# --- reading -------------------------------------------------------------------------------
#
# Readers open everything relative to the checkpoints directory through
# trainhub.jobs.confined: the directory itself, the step directories, manifests and files are
# opened component by component without following links, so a job that swaps any of them for
# a link (to another job, to /etc/passwd) or a FIFO is refused instead of read.


def load_manifest(path: Path) -> CheckpointInfo:
    """Read and check the checkpoint in directory ``path``; raise naming the file if it is not one.

    ``path`` and everything in it must be real: a link or FIFO anywhere below ``path.parent``
    is refused with :class:`~trainhub.jobs.confined.NotAJobFile` (a ValueError).
    """
    path = Path(path)
    return _load_confined(path.parent, path.name)


def _load_confined(root: Path, name: str) -> CheckpointInfo:
    path = root / name
    manifest_path = path / MANIFEST
    try:
        raw: Any = json.loads(confined.read_bytes(root, f"{name}/{MANIFEST}"))
        manifest = CheckpointManifest.model_validate(raw)
    except FileNotFoundError:
        raise FileNotFoundError(f"no checkpoint at {path}: {MANIFEST} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError, ValidationError) as e:
        raise ValueError(f"{manifest_path} is not a valid checkpoint manifest: {e}") from None
    expected = parse_step_name(name)
    if expected is not None and expected != manifest.step:
        raise ValueError(f"{manifest_path} says step {manifest.step} but lives in {name}/")
    for f in manifest.files:
        if PurePosixPath(f.name).name != f.name or f.name in ("", ".", ".."):
            raise ValueError(f"{manifest_path} lists {f.name!r}, which is not a file of {path}")
        try:
            actual = confined.size(root, f"{name}/{f.name}")
        except (FileNotFoundError, confined.NotAJobFile):
            raise ValueError(
                f"{manifest_path} lists {f.name!r}, which is not a file of {path}"
            ) from None
        if actual != f.bytes:
            raise ValueError(f"{path / f.name} has {actual} bytes, manifest says {f.bytes}")
    return CheckpointInfo.from_manifest(manifest, path)


def list_checkpoints(checkpoints_dir: str | os.PathLike[str]) -> list[CheckpointInfo]:
    """Every complete checkpoint under ``checkpoints_dir``, oldest step first.

    Temp directories and anything whose manifest does not check out are left out. A
    ``checkpoints_dir`` that is a link is refused (:class:`~trainhub.jobs.confined.NotAJobFile`);
    links inside it are not listed.
    """
    root = Path(checkpoints_dir)
    infos = []
    for name, is_dir in confined.entries(root):
        if parse_step_name(name) is None or not is_dir:
            continue
        try:
            infos.append(_load_confined(root, name))
        except (OSError, ValueError):
            continue  # removed meanwhile, or not a checkpoint: browsing shows what is sound
    return sorted(infos, key=lambda i: i.step)


def latest_checkpoint(checkpoints_dir: str | os.PathLike[str]) -> CheckpointInfo | None:
    infos = list_checkpoints(checkpoints_dir)
    return infos[-1] if infos else None


def resume_checkpoint(
    path: str | os.PathLike[str], step: int | None = None
) -> CheckpointInfo | None:
    """The checkpoint a job resumes from, or None when there is none.

    ``path`` is a checkpoint, a checkpoints directory or a job directory; ``step`` picks that
    step, otherwise the latest. The backends choose with it which checkpoint of an earlier job
    a new job starts from, and the ranks find it with it again from ``$TRAINHUB_RESUME_FROM``.
    Links are not followed below ``path``: a job whose ``checkpoints/`` is a link is refused.
    """
    path = Path(path)
    if _is_real_file(path.parent, f"{path.name}/{MANIFEST}"):
        info = load_manifest(path)
        return info if step is None or info.step == step else None
    for root in (path, JobDir(path).checkpoints):
        infos = [i for i in list_checkpoints(root) if step is None or i.step == step]
        if infos:
            return infos[-1]
    return None


def _is_real_file(root: Path, relative: str) -> bool:
    try:
        confined.size(root, relative)
        return True
    except (OSError, confined.NotAJobFile):
        return False


def read_manifest(checkpoints_dir: str | os.PathLike[str], step: int | str) -> CheckpointInfo:
    root = Path(checkpoints_dir)
    return _load_confined(root, _checked_step_dir(root, step).name)


def resolve_file(checkpoints_dir: str | os.PathLike[str], step: int | str, name: str) -> Path:
    """The path of file ``name`` of a checkpoint, for a download.

    Refuses absolute names, ``..``, subdirectories, and links or FIFOs anywhere from
    ``checkpoints_dir`` down to the file.
    """
    root = Path(checkpoints_dir)
    ckpt = _checked_step_dir(root, step)
    if not name or PurePosixPath(name).is_absolute():
        raise ValueError(f"file name {name!r} must be a relative name inside the checkpoint")
    normal = posixpath.normpath(name)
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"file name {name!r} points outside checkpoint {ckpt.name}")
    try:
        if "/" in normal or normal == ".":
            raise FileNotFoundError(name)  # a checkpoint holds plain files only
        confined.size(root, f"{ckpt.name}/{normal}")
    except FileNotFoundError:
        raise FileNotFoundError(f"checkpoint {ckpt.name} has no file {name!r}") from None
    return root.resolve() / ckpt.name / normal


def _checked_step_dir(checkpoints_dir: Path, step: int | str) -> Path:
    """The step directory, opened without following links: a link anywhere is refused."""
    path = step_dir(checkpoints_dir, step)
    try:
        fd = confined.open_dir(checkpoints_dir, path.name)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no checkpoint for step {coerce_step(step)} in {checkpoints_dir}"
        ) from None
    except confined.NotAJobFile as e:
        raise confined.NotAJobFile(f"checkpoint {path.name} refused: {e}") from None
    os.close(fd)
    return path


# --- writing helpers (shared with trainhub.checkpoint.writer) -------------------------------


def temp_path(checkpoints_dir: Path, purpose: str) -> Path:
    return checkpoints_dir / f"{TEMP_PREFIX}{purpose}-{os.getpid()}-{secrets.token_hex(4)}"


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_stale_temps(checkpoints_dir: Path, keep: Path | None = None) -> list[Path]:
    """Remove temp directories left by killed or failed writers, except ``keep``.

    Only the one writer of a checkpoints directory calls this (rank 0 of the world of ranks
    that owns the job: trainhub.jobs.world), after its own previous save has finished, so
    every other temp directory is debris.
    """
    removed = []
    for entry in _scandir(checkpoints_dir):
        path = Path(entry.path)
        if entry.name.startswith(TEMP_PREFIX) and path != keep:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(path)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def publish(temp_dir: Path, final: Path) -> None:
    """Make the complete, fsynced ``temp_dir`` visible as ``final``, atomically.

    When ``final`` exists (the same step saved again) the two are swapped in one step where
    the filesystem allows, so the old checkpoint goes only once the new one is in place.
    """
    fsync_dir(temp_dir)
    parent = final.parent
    if not final.exists():
        os.rename(temp_dir, final)
        fsync_dir(parent)
        return
    if _exchange(temp_dir, final):
        old = temp_dir  # after the swap the temp name holds the previous checkpoint
    else:
        old = temp_path(parent, f"replaced-{final.name}")
        os.rename(final, old)
        os.rename(temp_dir, final)
    fsync_dir(parent)
    remove_tree(old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux renameat2(RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def delete_checkpoint(checkpoints_dir: str | os.PathLike[str], step: int | str) -> None:
    """Delete one checkpoint: renamed away first, so it vanishes whole, then removed.

    The rename and the removal work on descriptors of the real checkpoints directory: a link
    in place of it or of the step directory is refused, links inside are removed, never followed.
    """
    root = Path(checkpoints_dir)
    path = _checked_step_dir(root, step)
    doomed = temp_path(root, f"deleting-{path.name}")
    fd = confined.open_dir(root, ".")
    try:
        mode = os.stat(path.name, dir_fd=fd, follow_symlinks=False).st_mode
        if not stat.S_ISDIR(mode):
            raise confined.NotAJobFile(f"checkpoint {path.name} is not a directory; refused")
        os.rename(path.name, doomed.name, src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)
    finally:
        os.close(fd)
    confined.remove_tree(root, doomed.name)


def _scandir(path: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(path))
    except FileNotFoundError:
        return []
