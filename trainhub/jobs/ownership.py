"""Who may read a job directory on a team's volume, and how the controller touches one.

Where a controller runs, each member's sessions and jobs run as a user id of their own
(``trainhub.backends.kubernetes.identity``), and the team volume keeps a job's files its
owner's: the jobs root is sticky and open to all (``1777``, like ``/tmp``: anyone makes a job
directory there, only its owner renames or removes it), a job directory is ``0700`` while
private and ``0755`` once shared with the team (readable, never writable, by teammates). A
jobs root that is sticky is what says the volume works so (:func:`guarded`); a local jobs
root is not, and keeps its modes as they were.

The controller, the one process that writes into every member's job directories (states,
verdicts, events, retries, sweeps' trials), holds no file rights of its own there: it acts
as the job's owner (:func:`acting_as`, the thread's file-system user and group ids), so what
it writes is the owner's, what it reads is what the owner may read, and an NFS server that
squashes root still sees a member. It needs ``CAP_SETUID`` and ``CAP_SETGID`` for that and
nothing else.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE = 0o700
SHARED = 0o755
# The jobs root and the team's other shared places: anyone creates, only the owner renames
# or removes what they made.
OPEN_STICKY = 0o1777


@dataclass(frozen=True)
class RunAs:
    """A POSIX identity: the user and group a member's sessions and job pods run as."""

    user: int
    group: int

    def __str__(self) -> str:
        return f"{self.user}:{self.group}"

    @classmethod
    def parse(cls, text: str) -> RunAs:
        """``"1000:1000"`` or ``"1000"`` (the group is the user's own)."""
        user, _, group = text.strip().partition(":")
        try:
            parsed = cls(int(user), int(group or user))
        except ValueError:
            raise ValueError(f"{text!r} is not a user id, or user:group ids") from None
        if parsed.user < 1 or parsed.group < 1:
            raise ValueError(f"{text!r}: jobs never run as root (user and group ids >= 1)")
        return parsed


def guarded(jobs_root: str | os.PathLike[str]) -> bool:
    """Whether ``jobs_root`` keeps job directories their owners' (sticky, as the controller
    makes a team volume's); False where it does not exist."""
    try:
        return bool(os.stat(jobs_root).st_mode & stat.S_ISVTX)
    except OSError:
        return False


def make_private(job_dir: Path) -> None:
    """A new job directory below a guarded jobs root: its owner's alone (the folders made in it
    later inherit nothing: they are reached through it)."""
    os.chmod(job_dir, PRIVATE, follow_symlinks=False)


def set_team_readable(job_dir: Path, readable: bool) -> None:
    """Open a job directory to the team for reading (``0755``) or close it again (``0700``):
    what the owner's sharing flag says, made true by the file system."""
    os.chmod(job_dir, SHARED if readable else PRIVATE, follow_symlinks=False)


def team_readable(mode: int) -> bool:
    """Whether a job directory of that ``st_mode`` lets teammates in."""
    return bool(mode & stat.S_IXOTH)


# --- acting as a job's owner (the controller) -----------------------------------------------
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_held = threading.local()


def _set_fs_ids(user: int, group: int) -> None:
    # setfsgid first: once the file-system user is not root, the group change is refused.
    _libc.setfsgid(group)
    _libc.setfsuid(user)
    # Neither call reports failure: asking with -1 reads the id back.
    if _libc.setfsuid(-1) != user or _libc.setfsgid(-1) != group:
        raise PermissionError(
            f"cannot act as {user}:{group} on the team volume: the controller needs "
            "CAP_SETUID and CAP_SETGID (its Deployment adds them)"
        )


def current() -> RunAs:
    """The thread's file-system identity now."""
    held = getattr(_held, "stack", None)
    return held[-1] if held else RunAs(os.geteuid(), os.getegid())


@contextmanager
def acting_as(who: RunAs) -> Iterator[None]:
    """Within the block, this thread opens, creates, renames and removes files as ``who`` (its
    file-system ids; the process and its other threads are untouched), then as before."""
    stack = getattr(_held, "stack", None)
    if stack is None:
        stack = _held.stack = []
    before = current()
    if who != before:
        _set_fs_ids(who.user, who.group)
    stack.append(who)
    try:
        yield
    finally:
        stack.pop()
        if who != before:
            _set_fs_ids(before.user, before.group)


@contextmanager
def acting_as_itself() -> Iterator[None]:
    """The controller's own files (its outbox, the team's usage rows) within a job's block."""
    with acting_as(RunAs(os.geteuid(), os.getegid())):
        yield


def owner_of(path: str | os.PathLike[str]) -> RunAs:
    """Who owns ``path`` (not following a link)."""
    st = os.stat(path, follow_symlinks=False)
    return RunAs(st.st_uid, st.st_gid)


# --- the team volume, as the controller prepares it ------------------------------------------
def prepare_team_volume(root: Path, places: list[str]) -> list[str]:
    """Make each of ``places`` (relative to the team volume's ``root``) a sticky, open
    directory owned by the controller, as a guarded jobs root is; returns a sentence for each
    that cannot be made so (another owner made it first: an admin fixes it once)."""
    problems = []
    for place in places:
        path = root / place
        try:
            path.mkdir(parents=True, exist_ok=True)
            st = os.stat(path, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                problems.append(f"{path} is not a directory")
                continue
            if stat.S_IMODE(st.st_mode) != OPEN_STICKY:
                if st.st_uid != os.geteuid():
                    problems.append(
                        f"{path} belongs to user {st.st_uid} with mode "
                        f"{stat.S_IMODE(st.st_mode):04o}: job directories there are not "
                        f"private (as root: chown {os.geteuid()} {path}; chmod 1777 {path})"
                    )
                    continue
                os.chmod(path, OPEN_STICKY)
        except OSError as e:
            problems.append(f"{path}: {e.strerror or e}")
    return problems


def own_dir(path: Path, mode: int) -> None:
    """A directory of the process's own (the controller's outbox, ``0700``; its usage rows,
    ``0755``), made, or given ``mode``."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, mode, follow_symlinks=False)
