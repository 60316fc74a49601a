"""What takes comments: a small registry of kinds, each with its access rule.

A kind's rule answers, for a user, the object they may read (:class:`Target`) or raises
NotFound, alike for an object that does not exist and one they may not see — the rule the
object's own reads follow (a job: trainhub.jobs.access; a sweep: its owner's; a pipeline run:
its owner's and, once shared, the team's; a model version: the team's registry, every member's
to read). Whoever may read an object may comment on it; a comment is its author's to edit or
delete. A new kind is one :func:`register` call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainhub.jobs.sharing import Sharing
from trainhub.jobs.spec import field_error
from trainhub.registry.refs import parse_ref

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService


@dataclass(frozen=True)
class Target:
    """An object a user may read: whose it is, its team, and whether the team reads it."""

    kind: str
    id: str
    owner: str
    team: str | None
    shared: bool


# (service, object id, reader: None is the CLI on a store of its own) -> the target
Rule = Callable[["JobService", str, "str | None"], Target]


@dataclass(frozen=True)
class CommentKind:
    name: str  # as the API and the CLI spell it: "job", "sweep", "pipeline_run"
    label: str  # as a sentence says it: "job", "sweep", "pipeline run"
    readable: Rule


KINDS: dict[str, CommentKind] = {}


def register(kind: CommentKind) -> None:
    KINDS[kind.name] = kind


def kind_of(name: str) -> CommentKind:
    """The kind named ``name``, or a refusal naming the field ``kind``."""
    try:
        return KINDS[name]
    except KeyError:
        raise field_error("kind", f"must be one of {', '.join(KINDS)}, got {name[:40]!r}") from None


def _job(service: JobService, job_id: str, user: str | None) -> Target:
    record = service.readable(job_id, user)
    shared = record.shared == Sharing.TEAM and record.team is not None
    return Target("job", record.id, record.user, record.team, shared)


def _sweep(service: JobService, sweep_id: str, user: str | None) -> Target:
    record = service.sweeps.readable(sweep_id, user=user)  # a sweep is its owner's alone
    return Target("sweep", record.id, record.user, service.team, False)


def _pipeline_run(service: JobService, run_id: str, user: str | None) -> Target:
    run = service.pipelines.readable(run_id, user=user)
    shared = run.shared == Sharing.TEAM and run.team is not None
    return Target("pipeline_run", run.id, run.user, run.team, shared)


def _model_version(service: JobService, ref: str, user: str | None) -> Target:
    """A version by number (``NAME/3``): an alias moves, a discussion stays with its version."""
    asked = parse_ref(ref, "target")
    if asked.version is None:
        raise field_error("target", f"name a version by number (NAME/VERSION), got {ref[:80]!r}")
    version = service.registry.version(asked)
    target = f"{version.model}/{version.version}"
    return Target("model_version", target, version.user, service.team, True)


register(CommentKind("job", "job", _job))
register(CommentKind("sweep", "sweep", _sweep))
register(CommentKind("pipeline_run", "pipeline run", _pipeline_run))
register(CommentKind("model_version", "model version", _model_version))
