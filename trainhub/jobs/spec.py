"""The job specification: what a researcher asks for when submitting a notebook or script.

Every field is validated here, once, for the CLI, the Python API, the REST API and every
backend. A refused spec names the field and says why in a sentence (:func:`explain`).

Its parts live beside it: what runs (:mod:`trainhub.jobs.sources`), resources, retries,
datasets and references (:mod:`trainhub.jobs.specparts`), quantities and durations
(:mod:`trainhub.jobs.quantities`).
"""

from __future__ import annotations

import keyword
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from trainhub.jobs import limits
from trainhub.jobs.naming import MAX_NAME_LENGTH, slug_name
from trainhub.jobs.quantities import MaxRuntime
from trainhub.jobs.sources import Source
from trainhub.jobs.specparts import (
    NAME_PATTERN,
    CheckpointRef,
    Dataset,
    Model,
    NotifyOn,
    PipelineRef,
    Priority,
    Resources,
    RetryPolicy,
    SweepRef,
    Text,
)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Set by trainhub or torchrun for every rank; a job may not override them.
RESERVED_ENV_PREFIXES = ("TRAINHUB_", "TORCHELASTIC_")
RESERVED_ENV = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
    }
)


class JobSpec(Model):
    """What to run, on what, and under which rules. Submitted as ``CreateJob`` over REST."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_PATTERN)
    source: Source
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Injected after the cell tagged 'parameters'"
    )
    allow_new_parameters: bool = Field(
        False,
        description="Set parameters the notebook's 'parameters' cell does not assign (refused "
        "otherwise, naming those it does)",
    )
    resources: Resources = Field(default_factory=Resources)
    image: Text | None = Field(None, description="Container image; recorded in the lineage locally")
    team: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    queue: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    priority: Priority = Priority.NORMAL
    max_runtime: MaxRuntime = None
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    env: dict[str, Text] = Field(default_factory=dict)
    datasets: list[Dataset] = Field(
        default_factory=list,
        description="Datasets by name ('imagenet' or {name: imagenet}), or {name, path}",
    )
    tags: list[Annotated[str, Field(min_length=1, max_length=63)]] = Field(default_factory=list)
    notebook_ranks: list[int] | Literal["all"] = Field(
        default_factory=lambda: [0],
        description="Ranks that keep their executed notebook: rank 0's is notebook.ipynb, "
        "another's notebook-rank-<r>.ipynb; 'all', or [] for none",
    )
    notify: list[NotifyOn] = Field(
        default_factory=list,
        description="Announce the job on failure, preemption or end through the alert "
        "channels of its user and team (trainhub/alerts)",
    )
    fork_from: CheckpointRef | None = Field(
        None,
        # Its spelling before forks had a word of their own: stored specs and users' files.
        validation_alias=AliasChoices("fork_from", "resume_from"),
        description="Start as a fork: from a checkpoint of another job (the team's own or "
        "shared with it); `resume_from` is accepted for it",
    )
    sweep: SweepRef | None = Field(None, description="The sweep this job is a trial of")
    pipeline: PipelineRef | None = Field(None, description="The pipeline run this job is a step of")

    @field_validator("parameters")
    @classmethod
    def _identifiers(cls, v: dict[str, Any]) -> dict[str, Any]:
        bounds = limits.current()
        for key, value in v.items():
            if not key.isidentifier() or keyword.iskeyword(key):
                what = "a Python keyword" if keyword.iskeyword(key) else "not a Python identifier"
                raise ValueError(f"{key!r} is {what}; a parameter is assigned as a variable")
            if limits.nesting_depth(value) > bounds.nesting_depth:
                raise ValueError(f"{key}: nests deeper than {bounds.nesting_depth} levels")
            if limits.non_finite(value):
                raise ValueError(f"{key}: NaN and infinity are not values a notebook can be given")
            if limits.json_size(value) > bounds.parameter_bytes:
                raise ValueError(
                    f"{key}: larger than {limits.size_text(bounds.parameter_bytes)}; "
                    "pass data as a file in the workspace or a dataset"
                )
        if limits.json_size(v) > bounds.parameters_bytes:
            raise ValueError(f"larger than {limits.size_text(bounds.parameters_bytes)} in all")
        return v

    @field_validator("notebook_ranks", mode="before")
    @classmethod
    def _known_ranks(cls, v: Any, info: ValidationInfo) -> Any:
        if v == "all":
            return v
        if not isinstance(v, list) or not all(type(r) is int for r in v):
            raise ValueError("give a list of rank numbers (e.g. [0, 3]), or 'all'")
        if len(set(v)) != len(v):
            raise ValueError("lists a rank twice")
        resources = info.data.get("resources")  # absent when it was refused itself
        world = resources.world_size if isinstance(resources, Resources) else None
        for rank in v:
            if rank < 0:
                raise ValueError(f"{rank} is not a rank; ranks are numbered from 0")
            if world is not None and rank >= world:
                ranks = "its only rank is 0" if world == 1 else f"its ranks are 0 to {world - 1}"
                raise ValueError(f"the job has no rank {rank}; {ranks}")
        return v

    @field_validator("tags")
    @classmethod
    def _few_tags(cls, v: list[str]) -> list[str]:
        most = limits.current().tags
        if len(v) > most:
            raise ValueError(f"at most {most} tags")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        bounds = limits.current()
        if len(v) > bounds.env_vars:
            raise ValueError(f"at most {bounds.env_vars} variables")
        for key, value in v.items():
            if len(value.encode()) > bounds.env_value_bytes:
                raise ValueError(f"{key}: longer than {limits.size_text(bounds.env_value_bytes)}")
            if not _ENV_NAME.match(key):
                raise ValueError(f"{key!r} is not a valid environment variable name")
            if key in RESERVED_ENV or key.startswith(RESERVED_ENV_PREFIXES):
                raise ValueError(
                    f"{key} is set by trainhub for every rank and cannot be overridden"
                )
        return v

    @field_validator("datasets")
    @classmethod
    def _unique_datasets(cls, v: list[Dataset]) -> list[Dataset]:
        names = [d.name for d in v]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"dataset name(s) used twice: {', '.join(dupes)}")
        return v


class FieldError(Model):
    field: str
    message: str


class SpecError(ValueError):
    """A refused spec: one sentence per offending field."""

    def __init__(self, errors: list[FieldError]):
        self.errors = errors
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))


def field_error(field: str, message: str) -> SpecError:
    """A refusal of one field, e.g. ``field_error("rank", "must be 0 or more")``."""
    return SpecError([FieldError(field=field, message=message)])


def explain(error: ValidationError) -> SpecError:
    """Turn pydantic's report into field paths and sentences a researcher can act on."""
    errors = []
    for item in error.errors(include_url=False):
        # Drop discriminator tags such as 'notebook' that pydantic inserts into the path.
        loc = [str(p) for p in item["loc"] if p not in ("notebook", "script")]
        message = item["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if item["type"] == "union_tag_invalid":
            message = "kind must be 'notebook' or 'script'"
        elif item["type"] == "extra_forbidden":
            message = "is not a known field"
        elif (
            item["type"] == "string_pattern_mismatch"
            and loc
            and (
                loc[-1] in ("name", "team", "queue")
                or loc[-2:] in (["sweep", "id"], ["pipeline", "run"], ["pipeline", "step"])
            )
        ):
            message = (
                "use lower-case letters, digits and '-', starting and ending with a letter or digit"
            )
        errors.append(FieldError(field=".".join(loc) or "spec", message=message))
    return SpecError(errors)


def parse_spec(data: dict[str, Any]) -> JobSpec:
    """Validate a spec from JSON-like data, raising :class:`SpecError` naming each bad field."""
    try:
        return JobSpec.model_validate(data)
    except ValidationError as e:
        raise explain(e) from None


def default_name(path: str) -> str:
    """A valid job name derived from a notebook or script file name."""
    return slug_name(path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
