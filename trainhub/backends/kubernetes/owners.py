"""Whose files a job's are, and as whom its objects and files are made.

A session submits as its own member's ids (``run_as``; the admission policy holds it to the
ids the team's ConfigMap gives that member). The controller, where members run as ids of their
own on a guarded team volume (:mod:`trainhub.jobs.ownership`), touches a job's directory, and a
sweep's record and frozen workspace, as their owner, who must be the member the Job's label or
the record names; a retry's Job runs as the failed one did; a sweep's next trial as the sweep's
owner.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from trainhub.backends.kubernetes.cluster import Cluster, Obj
from trainhub.backends.kubernetes.identity import USER_IDS_CONFIGMAP, USER_LABEL, owner_label
from trainhub.jobs import ownership
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.ownership import RunAs

USER_IDS_REREAD_SECONDS = 5.0


class Owners(Cluster):
    run_as: RunAs  # this process's member, when it is a session
    _user_ids: dict[str, int]  # owner label -> id: an id once given never changes
    _user_ids_read: float  # when the ConfigMap was last read (monotonic)
    _user_ids_lock: threading.Lock

    controlled: bool  # a session's (or the CLI's) backend where a controller runs

    @property
    def is_controller(self) -> bool:
        """This backend is the cluster's controller's (sessions' are ``controlled``)."""
        return self.teams.controller is not None and not self.controlled

    @property
    def acts_as_owners(self) -> bool:
        """The controller on a team volume that keeps members' files their own."""
        c = self.teams.controller
        return (
            self.is_controller
            and c is not None
            and c.per_user_ids
            and ownership.guarded(self.jobs_root)
        )

    def submitter(self, user: str) -> RunAs:
        """Who a new job of ``user``'s runs as: this session's member; in the controller (a
        sweep's next trial) the member's own ids, where the team gave them any."""
        if not self.is_controller:
            return self.run_as
        uid = self.user_id(owner_label(user))
        return self.run_as if uid is None else RunAs(uid, uid)

    def as_owner(
        self, path: Path, user: str | None = None
    ) -> contextlib.AbstractContextManager[None]:
        return self._as_owner(path, owner_label(user) if user else None)

    def _as_owner(self, path: Path, owner: str | None) -> contextlib.AbstractContextManager[None]:
        """Within it this thread touches ``path`` as its owner, who must be the member of owner
        label ``owner`` wherever the team gave that member an id (a teammate's file named as
        another's is refused, :class:`NotAJobFile`)."""
        if not self.acts_as_owners:
            return contextlib.nullcontext()
        try:
            found = ownership.owner_of(path)
        except FileNotFoundError:
            return contextlib.nullcontext()  # nothing there to act on: what follows says so
        expected = self.user_id(owner) if owner else None
        if expected is not None and found.user != expected:
            raise NotAJobFile(
                f"{path.name} belongs to user id {found.user}, not to {owner} ({expected})"
            )
        return ownership.acting_as(found)

    @contextlib.contextmanager
    def as_owner_of_job(self, job: Obj) -> Iterator[None]:
        """:meth:`as_owner` of a Job's directory, the owner its label names."""
        labels = job["metadata"].get("labels") or {}
        with self._as_owner(self.jobs_root / job["metadata"]["name"], labels.get(USER_LABEL)):
            yield

    def user_id(self, owner: str) -> int | None:
        """The id the team's ConfigMap gives the member of owner label ``owner``; None where
        it gives none (a team whose members share one id). An id once given never changes, so
        one found is kept; a miss reads the ConfigMap again, at most every few seconds."""
        with self._user_ids_lock:
            if owner in self._user_ids:
                return self._user_ids[owner]
            if time.monotonic() - self._user_ids_read < USER_IDS_REREAD_SECONDS:
                return None
            self._user_ids_read = time.monotonic()
        from kubernetes.client import ApiException

        try:
            data = self._json(
                self.core.read_namespaced_config_map, USER_IDS_CONFIGMAP, self.namespace
            ).get("data")
        except ApiException as e:
            if e.status != 404:
                raise
            data = None
        ids = {k: int(v) for k, v in (data or {}).items() if v.isdigit()}
        with self._user_ids_lock:
            self._user_ids.update(ids)
        return ids.get(owner)


def run_as_of(job: Obj) -> RunAs | None:
    """The ids a Job's pods run as (the next attempt runs as the failed one did)."""
    ctx = job["spec"]["template"]["spec"].get("securityContext") or {}
    if "runAsUser" not in ctx:
        return None
    return RunAs(int(ctx["runAsUser"]), int(ctx.get("runAsGroup", ctx["runAsUser"])))
