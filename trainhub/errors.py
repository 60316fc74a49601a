"""Errors with a sentence for people; the server maps each class to one HTTP status."""

from __future__ import annotations


class TrainhubError(Exception):
    """Base class: ``str(error)`` is the sentence shown to the user."""


class NotFound(TrainhubError):
    """No such job, log or checkpoint — also what another user's job looks like."""


class Conflict(TrainhubError):
    """The request does not fit the job's state (e.g. resume from a job that has no checkpoint)."""


class OverQuota(TrainhubError):
    """The job could never fit the quota or the machine."""


class BackendUnavailable(TrainhubError):
    """The backend cannot take requests right now (e.g. the cluster does not answer)."""


class TooLarge(TrainhubError):
    """A request, or a part of it, is over one of the documented limits (trainhub.jobs.limits)."""
