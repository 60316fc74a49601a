"""Who a user is to the API server: the owner label on their Jobs and Services, and the
ServiceAccount their sessions run as (where a controller runs), one a function of the other.

The admission policy (``policies.session_rights_policy``) ties the two together: an account
``trainhub-user-<owner>`` may touch only objects labelled ``trainhub.io/user=<owner>``. That is
a boundary only if no two users share an owner, so the encoding is injective: lowercase
letters and digits stay, every other byte becomes ``-`` and two hex digits (``-`` itself too,
as KubeSpawner escapes names), and a name that would not fit a label value (63 characters,
alphanumeric at both ends) becomes its readable start, ``--`` (which no escaped name holds)
and a digest of the whole name.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping

USER_LABEL = "trainhub.io/user"
SESSION_ACCOUNT_PREFIX = "trainhub-user-"
# JupyterHub's name for the user, exactly, on their session's ServiceAccount.
HUB_USER_ANNOTATION = "hub.jupyter.org/username"

_KEPT = frozenset(string.ascii_lowercase + string.digits)
_MAX = 63  # a label value's length


def owner_label(user: str) -> str:
    """The value of ``trainhub.io/user`` on ``user``'s objects (see the module's docstring)."""
    if not user:
        raise ValueError("user: a job's owner needs a name")
    escaped = "".join(chr(b) if chr(b) in _KEPT else f"-{b:02x}" for b in user.encode("utf-8"))
    if len(escaped) <= _MAX and escaped[0] != "-":
        return escaped
    digest = hashlib.sha256(user.encode("utf-8")).hexdigest()[:16]
    start = escaped.lstrip("-")[: _MAX - len(digest) - 2] or "u"
    return f"{start}--{digest}"


def session_account(user: str) -> str:
    """The ServiceAccount of ``user``'s sessions in their team's namespace."""
    return SESSION_ACCOUNT_PREFIX + owner_label(user)


# --- the user ids of a team's members (where a controller runs) -----------------------------
# In each team namespace: owner label -> the POSIX user id its sessions and jobs run as (their
# group is the user's own). The hub adds a member's id before their first session
# (trainhub_spawner.user_ids); an admin may write ids of their own (a directory's, for NFS)
# before. Nothing but the hub and admins may change it; the admission policy reads it
# (policies.session_user_ids_policy).
USER_IDS_CONFIGMAP = "trainhub-user-ids"


def user_id_in(ids: Mapping[str, str], user: str) -> int | None:
    """``user``'s id in the ConfigMap's data, or None."""
    raw = ids.get(owner_label(user))
    return int(raw) if raw is not None and raw.isdigit() else None


def next_user_id(ids: Mapping[str, str], first: int) -> int:
    """The id a new member gets: after every id given so far, never below ``first``; an id
    is never given twice (a departed member's files keep theirs)."""
    given = [int(v) for v in ids.values() if v.isdigit()]
    return max([first - 1, *given]) + 1
