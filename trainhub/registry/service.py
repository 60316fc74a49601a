"""The team's model registry: register a version from a job, read models and versions, move
aliases, archive, resolve a reference to a version's files.

Every change is one new entry (:mod:`trainhub.registry.entries`), created only where its id is
free; a race for a version number or an event number is lost by re-reading and taking the
next. A version's files are kept first (:mod:`trainhub.registry.keeping`), its entry made
after, so a version that can be read has all its files.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainhub.checkpoint.layout import list_checkpoints, step_name
from trainhub.errors import Conflict, NotFound
from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir
from trainhub.jobs.records import Records, records_for, records_home
from trainhub.jobs.states import JobState
from trainhub.registry import keeping, snapshot
from trainhub.registry.entries import KIND, Entry, SourceOf, event_id, version_id
from trainhub.registry.policy import UNPROTECTED, ModelPolicy, check_move
from trainhub.registry.refs import Ref, Source, check_alias, check_name, parse_ref
from trainhub.registry.snapshot import JobFacts
from trainhub.registry.views import ModelList, ModelView, VersionView, model_list, model_view, pick

RACE_TRIES = 50
MAX_DESCRIPTION = 2000
MAX_REASON = 500


class Registry:
    def __init__(
        self,
        records: Records[Entry],
        home: Path,
        *,
        policy: Callable[[], ModelPolicy] = lambda: UNPROTECTED,
        team: str | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.records, self.home, self.policy, self.team, self.clock = (
            records,
            Path(home),
            policy,
            team,
            clock,
        )

    @classmethod
    def of_backend(cls, backend: Any) -> Registry:
        """The registry of a backend's team: beside its other records."""
        return cls(
            records_for(backend, KIND, Entry, team_readable=True),
            records_home(backend, KIND),
            policy=backend.model_policy,
            team=backend.team_name(),
        )

    # --- reading ---------------------------------------------------------------------------
    def entries(self, name: str | None = None) -> builtins.list[Entry]:
        every = self.records.list()
        return every if name is None else [e for e in every if e.model == name]

    def list(self) -> ModelList:
        return model_list(self.entries())

    def describe(self, name: str) -> ModelView:
        view = model_view(check_name(name), self.entries(name))
        if not view.versions:
            raise NotFound(f"No model {name} in the registry.")
        return view

    def version(self, ref: Ref | str) -> VersionView:
        ref = parse_ref(ref) if isinstance(ref, str) else ref
        view = self.describe(ref.name)
        found = pick(view, ref)
        if found is None:
            known = ", ".join(view.aliases) or "none"
            what = f"alias {ref.alias} (aliases: {known})" if ref.alias else f"version {ref}"
            if ref.alias is None and ref.version is None:
                what = "version that is not archived"
            raise NotFound(f"Model {ref.name} has no {what}.")
        return found

    def files(self, version: VersionView) -> Path:
        """The version's file (a version of one file) or folder."""
        folder = self.home / version.files.folder
        return folder / version.files.single if version.files.single else folder

    # --- registering -----------------------------------------------------------------------
    def register(
        self,
        name: str,
        source: Source,
        job: JobFacts,
        *,
        user: str,
        description: str = "",
    ) -> VersionView:
        """The next version of ``name``, from ``source`` of ``job`` (already checked readable by
        ``user``): files kept, lineage and metrics taken now, once."""
        check_name(name)
        relative, origin = locate(job, source)
        lineage, metrics = snapshot.read_job(job, origin.step)
        if origin.kind == "checkpoint":
            metrics = {**metrics, **checkpoint_metrics(job, origin.step)}
        ended = job.state is not None and JobState(job.state).terminal
        files = keeping.keep(
            Path(job.job_dir),
            relative,
            self.home,
            may_link=origin.kind == "checkpoint" or ended,
        )
        try:
            for _ in range(RACE_TRIES):
                number = 1 + max((e.version for e in self._versions(name)), default=0)
                entry = Entry(
                    id=version_id(name, number),
                    user=user,
                    created_at=self.clock(),
                    model=name,
                    event="version",
                    version=number,
                    source=origin,
                    files=files,
                    lineage=lineage,
                    metrics=metrics,
                    description=description[:MAX_DESCRIPTION],
                )
                if self.records.create_new(entry):
                    return self.version(Ref(name, version=number))
            raise Conflict(f"Model {name}: too many registrations at once; try again.")
        except BaseException:
            keeping.remove(self.home, files.folder)
            raise

    def _versions(self, name: str) -> builtins.list[Entry]:
        return [e for e in self.entries(name) if e.event == "version"]

    # --- aliases and archiving ---------------------------------------------------------------
    def move_alias(
        self, name: str, alias: str, version: int | None, *, user: str, reason: str = ""
    ) -> ModelView:
        """Point ``alias`` at ``version`` (None: remove it), as ``user`` may (the policy)."""
        check_alias(alias)
        check_move(self.policy(), user, alias, model=name, team=self.team)

        def event(view: ModelView) -> Entry | None:
            previous = view.aliases.get(alias)
            if version is not None:
                target = pick(view, Ref(name, version=version))
                if target is None:
                    raise NotFound(f"Model {name} has no version {version}.")
                if target.archived:
                    raise Conflict(f"{name}/{version} is archived: unarchive it first.")
            elif previous is None:
                raise NotFound(f"Model {name} has no alias {alias}.")
            if previous == version:
                return None  # already there: nothing to write
            return self._event(name, "alias", version or 0, user, reason, alias, previous)

        return self._append(name, event)

    def archive(
        self, name: str, version: int, *, user: str, reason: str = "", archived: bool = True
    ) -> ModelView:
        """Archive a version (or bring it back): never deleted, left out of ``NAME`` alone."""

        def event(view: ModelView) -> Entry | None:
            target = pick(view, Ref(name, version=version))
            if target is None:
                raise NotFound(f"Model {name} has no version {version}.")
            if archived and target.aliases:
                raise Conflict(
                    f"{name}/{version} is {', '.join('@' + a for a in target.aliases)}: move "
                    "the alias away first."
                )
            if target.archived == archived:
                return None
            kind = "archive" if archived else "unarchive"
            return self._event(name, kind, version, user, reason, None, None)

        return self._append(name, event)

    def _event(
        self,
        name: str,
        kind: Any,
        version: int,
        user: str,
        reason: str,
        alias: str | None,
        previous: int | None,
    ) -> Entry:
        number = 1 + sum(1 for e in self.entries(name) if e.event != "version")
        return Entry(
            id=event_id(name, number),
            user=user,
            created_at=self.clock(),
            model=name,
            event=kind,
            version=version,
            alias=alias,
            previous=previous,
            reason=reason[:MAX_REASON],
        )

    def _append(self, name: str, event: Callable[[ModelView], Entry | None]) -> ModelView:
        for _ in range(RACE_TRIES):
            view = self.describe(name)
            entry = event(view)
            if entry is None or self.records.create_new(entry):
                return self.describe(name)
        raise Conflict(f"Model {name}: too many changes at once; try again.")


# --- what a source names in the job's directory ----------------------------------------------
def locate(job: JobFacts, source: Source) -> tuple[str, SourceOf]:
    """(the path in the job directory, its SourceOf) of ``source``: a checkpoint, an output,
    or the newest checkpoint, else the whole outputs folder."""
    jobdir = JobDir(job.job_dir)
    if source.path is not None:
        relative = f"outputs/{source.path}"
        if not (Path(job.job_dir) / relative).exists():
            raise NotFound(f"Job {job.id} has no output {source.path}.")
        return relative, SourceOf(job=job.id, attempt=job.attempt, kind="output", path=source.path)
    checkpoints = list_checkpoints(jobdir.checkpoints)
    if source.step is not None:
        if not any(c.step == source.step for c in checkpoints):
            steps = ", ".join(str(c.step) for c in checkpoints[-5:]) or "none"
            raise NotFound(f"Job {job.id} has no checkpoint of step {source.step} ({steps}).")
        step = source.step
    elif checkpoints:
        step = checkpoints[-1].step
    else:
        if not any(True for _ in confined.walk(Path(job.job_dir), "outputs", limit=1)):
            raise NotFound(f"Job {job.id} has no checkpoint and no outputs to register.")
        return "outputs", SourceOf(job=job.id, attempt=job.attempt, kind="outputs")
    attempt = next((c.attempt for c in checkpoints if c.step == step), job.attempt)
    return f"checkpoints/{step_name(step)}", SourceOf(
        job=job.id, attempt=attempt, kind="checkpoint", step=step
    )


def checkpoint_metrics(job: JobFacts, step: int | None) -> dict[str, float]:
    """The metrics the checkpoint's manifest keeps (saved with it)."""
    for c in list_checkpoints(JobDir(job.job_dir).checkpoints):
        if c.step == step:
            return dict(c.metrics)
    return {}
