"""Errors with a sentence for people; the server maps each class to one HTTP status."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

# An absolute path inside a sentence: a "/" that starts a word (not "a/b", not "http://x/y").
_ABSOLUTE_PATH = re.compile(r"(?<![\w./:~-])/[^\s'\"`,;:()\[\]{}<>]+")


class TrainhubError(Exception):
    """Base class: ``str(error)`` is the sentence shown to the user."""


class NotFound(TrainhubError):
    """No such job, log or checkpoint — also what another user's job looks like."""


class ReadOnly(TrainhubError):
    """The user may read the job (their team's, shared with them) but not change or stop it."""


class Conflict(TrainhubError):
    """The request does not fit the job's state (e.g. resume from a job that has no checkpoint)."""


class OverQuota(TrainhubError):
    """The job could never fit the quota or the machine."""


class NotAllowed(TrainhubError):
    """The admin's policy does not allow what was asked for (an image): refused before anything
    starts."""


class BackendUnavailable(TrainhubError):
    """The backend cannot take requests right now (e.g. the cluster does not answer)."""


class TooLarge(TrainhubError):
    """A request, or a part of it, is over one of the documented limits (trainhub.jobs.limits)."""


def scrub_paths(text: str, keep: Iterable[str] = ()) -> str:
    """``text`` with each absolute path cut to its last part, so that no sentence shown to a
    user tells where the server keeps things (or what exists there). Paths below ``keep``
    (roots users are told about, such as the dataset roots) stay whole."""
    roots = [posixpath.normpath(k) for k in keep if k.startswith("/")]

    def shorten(match: re.Match[str]) -> str:
        path = match.group(0)
        trail = path[len(path.rstrip(".")) :]  # a full stop ends the sentence, not the path
        path = path[: len(path) - len(trail)] or path
        normal = posixpath.normpath(path)
        if any(normal == r or normal.startswith(r.rstrip("/") + "/") for r in roots):
            return path + trail
        return (posixpath.basename(normal) or normal) + trail

    return _ABSOLUTE_PATH.sub(shorten, text)
