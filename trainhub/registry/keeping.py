"""A version's files, kept in the registry's home so that nothing done to the job (its
retention, a deleted checkpoint) takes them away.

Each file is hard-linked where it can be (same file system, and a file that will not change:
a checkpoint, which trainhub writes once and renames into place, or the output of a job that
has ended), so a 2 GB checkpoint costs no copy; else copied. The job's files are opened
without following links (:mod:`trainhub.jobs.confined`) and a link is kept only where it is
the very file that was checked. Everything lands in a staging folder that is
renamed to its final name once complete and synced: no reader ever sees half a version.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from trainhub.errors import NotFound
from trainhub.jobs import confined
from trainhub.jobs.directory import fsync_dir
from trainhub.registry.entries import KeptFiles

STAGING = ".staging-"
READ_ONLY = 0o444  # a kept file is never written again, by the registry or through it
_NOT_LINKABLE = {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOENT, errno.ENOTSUP}


def keep(job_dir: Path, relative: str, home: Path, *, may_link: bool) -> KeptFiles:
    """Keep the job's file or folder ``relative`` (``checkpoints/<step>``, ``outputs/x.pt``)
    as a new folder of ``home``; ``may_link``: the files will not change any more."""
    try:
        st = os.lstat(job_dir / relative)
    except FileNotFoundError:
        raise NotFound(f"The job has no {relative}.") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise confined.NotAJobFile(f"{relative} of the job is not a regular file or folder")
    home.mkdir(parents=True, exist_ok=True)
    folder = secrets.token_hex(12)
    staging = home / f"{STAGING}{folder}"
    _team_dir(staging)
    try:
        if stat.S_ISREG(st.st_mode):
            name = Path(relative).name
            linked = _keep_file(job_dir, relative, staging / name, may_link)
            kept = KeptFiles(folder=folder, files=1, bytes=st.st_size, single=name, linked=linked)
        else:
            kept = _keep_tree(job_dir, relative, staging, may_link, folder)
        fsync_dir(staging)
        os.rename(staging, home / folder)
        fsync_dir(home)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return kept


def _keep_tree(
    job_dir: Path, relative: str, staging: Path, may_link: bool, folder: str
) -> KeptFiles:
    files = total = linked = 0
    for path, st in confined.walk(job_dir, relative):
        if stat.S_ISDIR(st.st_mode):
            _team_dir(staging / path)
            continue
        linked += _keep_file(job_dir, f"{relative}/{path}", staging / path, may_link)
        files += 1
        total += st.st_size
    return KeptFiles(folder=folder, files=files, bytes=total, linked=linked)


def _team_dir(path: Path) -> None:
    """A folder of a version: the team reads it, whatever the registrant's umask."""
    os.mkdir(path, 0o755)
    os.chmod(path, 0o755)


def _keep_file(job_dir: Path, relative: str, dest: Path, may_link: bool) -> int:
    """1 where linked, 0 where copied."""
    fd = confined.open_fd(job_dir, relative)
    try:
        if may_link and _link(fd, job_dir / relative, dest):
            with contextlib.suppress(OSError):  # another's file (linked by rights): as it is
                os.chmod(dest, READ_ONLY, follow_symlinks=False)
            return 1
        _copy(fd, dest)
        return 0
    finally:
        os.close(fd)


def _link(fd: int, source: Path, dest: Path) -> bool:
    """A hard link of the opened file itself: made by name (the link itself, never followed),
    then kept only if it is the very file the descriptor checked; else undone (a copy)."""
    try:
        os.link(source, dest, follow_symlinks=False)
    except OSError as e:
        if e.errno in _NOT_LINKABLE:
            return False
        raise
    checked, made = os.fstat(fd), os.lstat(dest)
    if (made.st_dev, made.st_ino) != (checked.st_dev, checked.st_ino):
        os.unlink(dest)  # the name was swapped meanwhile (for a link, another file)
        return False
    return True


def _copy(fd: int, dest: Path) -> None:
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, READ_ONLY | 0o200)
    try:
        size, offset = os.fstat(fd).st_size, 0
        while offset < size:
            sent = os.sendfile(out, fd, offset, min(size - offset, 1 << 30))
            if sent == 0:  # the file shrank meanwhile
                break
            offset += sent
        os.fsync(out)
        os.fchmod(out, READ_ONLY)
    finally:
        os.close(out)


def remove(home: Path, folder: str) -> None:
    """A kept folder whose version was never recorded (its registration lost a race, or
    failed): gone again."""
    shutil.rmtree(home / folder, ignore_errors=True)
