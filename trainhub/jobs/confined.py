"""Opening a job's files as the job left them, never as it pretends them to be.

A job runs the user's code, which can replace anything in its own directory: a rank log by a
link to ``/etc/passwd`` or ``/proc/self/environ``, ``checkpoints/`` by a link to another
user's job, ``lineage.json`` by a FIFO that blocks whoever opens it. Whatever the server
reads, streams, downloads or deletes in a job directory therefore goes through here: every
component is opened relative to the one before it with ``O_NOFOLLOW`` (as ``openat`` does),
so no link is followed anywhere on the way, and only regular files and real directories are
accepted. Files are opened non-blocking, so a FIFO is seen and refused instead of waited on
(for reading and for appending alike: the server appends events to job directories too).

The job directory itself is named by trainhub (``<jobs root>/<id>``); the jobs root above it
is the server's own and is trusted, links included.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import BinaryIO

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_JOB_FOLDERS = frozenset({"bundle", "checkpoints", "logs", "metrics", "outputs", "status"})
_APPEND_FLAGS = (
    os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
)


class NotAJobFile(ValueError):
    """A path in a job directory that is a link, a FIFO, a device or otherwise not the job's
    own regular file (or directory). The sentence names it relative to the job directory."""


def _parts(relative: str | os.PathLike[str]) -> list[str]:
    path = PurePosixPath(relative)
    if path.is_absolute() or any(p in ("..", "") for p in path.parts):
        raise NotAJobFile(f"{relative} is not a path inside the job directory")
    return [p for p in path.parts if p != "."]


def _refusal(name: str, mode: int | None = None) -> NotAJobFile:
    if mode is None or stat.S_ISLNK(mode):
        kind = "a symbolic link"
    elif stat.S_ISFIFO(mode):
        kind = "a FIFO"
    elif stat.S_ISDIR(mode):
        kind = "a directory"
    else:
        kind = "not a regular file"
    return NotAJobFile(f"{name} is {kind}; trainhub reads only the job's own regular files")


def _root_name(job_dir: Path) -> str:
    """How a refusal names the folder reads start from: the job directory, or one of its
    folders (checkpoints are read from ``checkpoints/``, samples written into ``metrics/``)."""
    return job_dir.name if job_dir.name in _JOB_FOLDERS else "the job directory"


def _open_dir(job_dir: Path, parts: list[str]) -> int:
    """A descriptor of ``job_dir/parts...``, every component opened without following links."""
    job_dir = Path(os.path.abspath(job_dir))  # "." or "job/.." still name a directory
    fd = os.open(job_dir.parent, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the trusted jobs root
    try:
        for i, part in enumerate([job_dir.name, *parts]):
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
                    raise _refusal("/".join(parts[:i]) or _root_name(job_dir), mode) from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_dir(job_dir: Path, relative: str | os.PathLike[str] = ".") -> int:
    """A descriptor of the job's real directory ``relative`` (FileNotFoundError if absent)."""
    return _open_dir(job_dir, _parts(relative))


def _open_file(
    job_dir: Path, relative: str | os.PathLike[str], flags: int, mode: int = 0o644
) -> int:
    parts = _parts(relative)
    if not parts:
        raise NotAJobFile("the job directory is not a file")
    parent = _open_dir(job_dir, parts[:-1])
    try:
        try:
            fd = os.open(parts[-1], flags, mode, dir_fd=parent)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refusal(str(relative)) from None
            if e.errno == errno.EISDIR:
                raise _refusal(str(relative), stat.S_IFDIR) from None
            if e.errno == errno.ENXIO:  # a FIFO no one reads, opened for writing
                raise _refusal(str(relative), stat.S_IFIFO) from None
            raise
    finally:
        os.close(parent)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refusal(str(relative), mode)
    return fd


def open_fd(job_dir: Path, relative: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the job's regular file ``relative`` (FileNotFoundError if
    absent)."""
    return _open_file(job_dir, relative, _FILE_FLAGS)


def append(job_dir: Path, relative: str | os.PathLike[str], data: bytes) -> None:
    """Append ``data`` to the job's regular file ``relative`` in one ``write`` (created when
    absent; its folder must exist). A link, FIFO or device in its place is refused."""
    fd = _open_file(job_dir, relative, _APPEND_FLAGS)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def created(job_dir: Path, relative: str | os.PathLike[str], *, mode: int = 0o644) -> BinaryIO:
    """A new regular file ``relative``, open for writing (the caller closes it); its folder
    must exist, and anything already at its name (a link, a FIFO, a file) is refused."""
    return os.fdopen(_open_file(job_dir, relative, _NEW_FLAGS, mode), "wb")  # type: ignore[return-value]


def make_dir(job_dir: Path, relative: str | os.PathLike[str]) -> None:
    """Create the folder ``relative`` in its real parent folder (no link followed on the way);
    FileExistsError when anything is already at its name."""
    parts = _parts(relative)
    if not parts:
        raise NotAJobFile("the job directory itself is not made this way")
    parent = _open_dir(job_dir, parts[:-1])
    try:
        os.mkdir(parts[-1], 0o755, dir_fd=parent)
    finally:
        os.close(parent)


@contextmanager
def opened(job_dir: Path, relative: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """``with opened(job_dir, "logs/rank-0.log") as f:`` — a binary file object, unbuffered."""
    with opened_file(job_dir, relative) as f:
        yield f


def replace(
    job_dir: Path, relative: str | os.PathLike[str], data: bytes, *, mode: int = 0o644
) -> None:
    """Write the job's file ``relative`` whole: a new file in its (real) folder, renamed over
    the name, so whatever the job left there (a link, a FIFO) is replaced, never written
    through or waited on."""
    parts = _parts(relative)
    if not parts:
        raise NotAJobFile("the job directory is not a file")
    parent = _open_dir(job_dir, parts[:-1])
    temp = f".{parts[-1]}.{secrets.token_hex(4)}"
    try:
        fd = os.open(temp, _NEW_FLAGS, mode, dir_fd=parent)
        try:
            os.fchmod(fd, mode)  # the mode asked for, whatever the process's umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=parent)
        raise
    finally:
        os.close(parent)


def opened_file(job_dir: Path, relative: str | os.PathLike[str]) -> BinaryIO:
    """The job's regular file ``relative``, open for reading (unbuffered); the caller closes it."""
    return os.fdopen(open_fd(job_dir, relative), "rb", buffering=0)  # type: ignore[return-value]


def read_bytes(
    job_dir: Path,
    relative: str | os.PathLike[str],
    *,
    limit: int | None = None,
    owner: int | None = None,
) -> bytes:
    """The whole file; with ``limit``, a file over ``limit`` bytes is refused (ValueError)
    rather than read into memory; with ``owner``, a file another user owns is refused
    (PermissionError)."""
    with opened(job_dir, relative) as f:
        if owner is not None and (found := os.fstat(f.fileno()).st_uid) != owner:
            raise PermissionError(f"{relative} belongs to user id {found}, not {owner}")
        if limit is None:
            return f.read()
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ValueError(
                f"{relative} holds {size} bytes, over the {limit} bytes trainhub reads of it"
            )
        chunks, left = [], limit  # the file may grow meanwhile: read no more than the limit
        while left and (chunk := f.read(left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def read_range(job_dir: Path, relative: str | os.PathLike[str], offset: int, length: int) -> bytes:
    fd = open_fd(job_dir, relative)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def size(job_dir: Path, relative: str | os.PathLike[str]) -> int:
    fd = open_fd(job_dir, relative)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def entries(job_dir: Path, relative: str | os.PathLike[str] = ".") -> list[tuple[str, bool]]:
    """(name, is a real directory) for what a job directory's folder holds; links and other
    non-regular entries are left out. An absent folder has no entries."""
    try:
        fd = _open_dir(job_dir, _parts(relative))
    except FileNotFoundError:
        return []
    try:
        found = []
        with os.scandir(fd) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    found.append((entry.name, True))
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.name, False))
        return found
    finally:
        os.close(fd)


def remove_tree(job_dir: Path, relative: str | os.PathLike[str]) -> None:
    """Delete a folder of the job directory; links inside it are removed, never followed."""
    parts = _parts(relative)
    if not parts:
        raise NotAJobFile("the job directory itself is not removed this way")
    parent = _open_dir(job_dir, parts[:-1])
    try:
        mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
        if not stat.S_ISDIR(mode):
            raise _refusal(str(relative), mode)
        # rmtree with dir_fd works on descriptors throughout and never follows a link.
        shutil.rmtree(parts[-1], dir_fd=parent)
    finally:
        os.close(parent)


def walk(
    job_dir: Path, relative: str | os.PathLike[str] = ".", *, limit: int | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to ``relative``, lstat) of every real directory and regular file below the
    job's folder ``relative``, in tree order (a folder, then what it holds, by name); each
    folder is opened relative to its parent without following links, so links, FIFOs and
    devices are left out, never followed. An absent folder yields nothing; past ``limit``
    entries the walk stops."""
    try:
        top = _open_dir(job_dir, _parts(relative))
    except FileNotFoundError:
        return
    count = 0
    # One (descriptor, prefix, entries left) per open folder: no recursion, however deep.
    stack: list[tuple[int, str, list[tuple[str, os.stat_result]]]] = []

    def push(fd: int, prefix: str) -> None:
        try:
            with os.scandir(fd) as it:
                found = [(e.name, e.stat(follow_symlinks=False)) for e in it]
        except BaseException:
            os.close(fd)
            raise
        kept = [(n, st) for n, st in found if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)]
        stack.append((fd, prefix, sorted(kept, reverse=True)))

    try:
        push(top, "")
        while stack:
            fd, prefix, left = stack[-1]
            if not left:
                os.close(fd)
                stack.pop()
                continue
            name, st = left.pop()
            if limit is not None and count >= limit:
                return
            count += 1
            yield f"{prefix}{name}", st
            if stat.S_ISDIR(st.st_mode):
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:  # replaced meanwhile (by a link, or removed): left out
                    continue
                push(child, f"{prefix}{name}/")
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def unlink(job_dir: Path, relative: str | os.PathLike[str]) -> int:
    """Delete the job's regular file ``relative`` (its folders opened without following links;
    a link or anything else in its place is refused) and return the bytes it held."""
    parts = _parts(relative)
    if not parts:
        raise NotAJobFile("the job directory is not a file")
    parent = _open_dir(job_dir, parts[:-1])
    try:
        st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(str(relative), st.st_mode)
        os.unlink(parts[-1], dir_fd=parent)
        return st.st_size
    finally:
        os.close(parent)


def remove_empty_dirs(job_dir: Path, relative: str | os.PathLike[str]) -> None:
    """Remove the empty real folders below the job's folder ``relative`` (not itself)."""
    dirs = [name for name, st in walk(job_dir, relative) if stat.S_ISDIR(st.st_mode)]
    base = _parts(relative)
    for name in reversed(dirs):  # children before parents
        *above, last = [*base, *PurePosixPath(name).parts]
        try:
            parent = _open_dir(job_dir, above)
        except (OSError, NotAJobFile):
            continue
        try:
            os.rmdir(last, dir_fd=parent)
        except OSError:  # not empty (or gone): kept
            pass
        finally:
            os.close(parent)
