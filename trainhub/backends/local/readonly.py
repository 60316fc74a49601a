"""Start a local job's process with its datasets read-only for real:
``python -m trainhub.backends.local.readonly JOB_DIR PATH... -- COMMAND...``.

The process gets a mount namespace of its own (inside a user namespace of its own when it is
not root) in which each dataset path is a read-only bind mount of itself, then becomes
COMMAND (same process, so the supervisor follows it as before). A write into a dataset fails
with ``EROFS`` whatever the files' permissions say, root included; the job directory stays
writable even when it lies inside a dataset. The host's mounts are never touched.

Where the kernel allows neither (no ``CAP_SYS_ADMIN`` and no unprivileged user namespaces,
as in many containers), COMMAND starts anyway with the datasets as the files' permissions
leave them, one line on stderr says so, and ``TRAINHUB_DATASETS_READ_ONLY=0`` tells the rank.

Standard library only: it runs before every rank.
"""

from __future__ import annotations

import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
# Flags a mount keeps across a read-only remount (a user namespace may not clear them).
_KEPT = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
STATE_VARIABLE = "TRAINHUB_DATASETS_READ_ONLY"


class Refused(OSError):
    """The kernel would not give this process read-only datasets."""


def wrap(python: str, job_dir: str, paths: list[str], argv: list[str]) -> list[str]:
    """``argv`` started with ``paths`` read-only (unchanged when there are none)."""
    if not paths:
        return argv
    return [python, "-m", "trainhub.backends.local.readonly", job_dir, *paths, "--", *argv]


def _libc():  # type: ignore[no-untyped-def]
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        errno = ctypes.get_errno()
        raise Refused(errno, f"{what}: {os.strerror(errno)}")


def _own_namespace(libc) -> None:  # type: ignore[no-untyped-def]
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 and libc.unshare(CLONE_NEWNS) == 0:
        return
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "a user and mount namespace")
    # The same ids inside as outside: files keep their owners, the rank its user.
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _bind(libc, path: str) -> None:  # type: ignore[no-untyped-def]
    target = path.encode()
    _check(libc.mount(target, target, None, MS_BIND | MS_REC, None), f"bind {path}")


def make_read_only(job_dir: str, paths: list[str]) -> None:
    """In a mount namespace of this process's own: each of ``paths`` read-only, ``job_dir``
    writable. Raises :class:`Refused` when the kernel says no."""
    libc = _libc()
    real = sorted({os.path.realpath(p) for p in paths}, key=len)
    _own_namespace(libc)
    # Nothing done here may reach the host's namespace.
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    job = os.path.realpath(job_dir)
    if any(job == p or job.startswith(p.rstrip("/") + "/") for p in real):
        _bind(libc, job)  # its own mount first: the read-only remounts below leave it writable
    for path in real:
        kept = 0
        flags = os.statvfs(path).f_flag
        for st, ms in _KEPT:
            kept |= ms if flags & st else 0
        _bind(libc, path)
        remount = MS_REMOUNT | MS_BIND | MS_RDONLY | kept
        _check(libc.mount(None, path.encode(), None, remount, None), f"read-only {path}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args or args.index("--") < 2 or args.index("--") == len(args) - 1:
        print(
            "usage: python -m trainhub.backends.local.readonly JOB_DIR PATH... -- COMMAND...",
            file=sys.stderr,
        )
        return 2
    cut = args.index("--")
    job_dir, paths, command = args[0], args[1:cut], args[cut + 1 :]
    try:
        make_read_only(job_dir, paths)
        os.environ[STATE_VARIABLE] = "1"
    except (OSError, AttributeError) as e:
        os.environ[STATE_VARIABLE] = "0"
        print(f"trainhub: the datasets stay writable for this job ({e})", file=sys.stderr)
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
