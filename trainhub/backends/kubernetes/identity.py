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
