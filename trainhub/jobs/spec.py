"""The job specification: what a researcher asks for when submitting a notebook or script.

Every field is validated here, once, for the CLI, the Python API, the REST API and every
backend. A refused spec names the field and says why in a sentence (:func:`explain`).
"""

from __future__ import annotations

import keyword
import math
import re
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    GetJsonSchemaHandler,
    Tag,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from trainhub.jobs import limits
from trainhub.jobs.naming import MAX_NAME_LENGTH, slug_name

NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DATASET_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"
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
_DURATION = re.compile(r"^\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*$")
# How a stored spec writes a timedelta (ISO 8601, "PT1H30M"): a spec read back must parse.
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(\.\d+)?S)?)?$")
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$")
MAX_MEMORY = 2**50  # 1Pi per worker
_QUANTITY_UNITS = {
    None: 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def _no_nul(value: str) -> str:
    if "\x00" in value:  # no path, argument or environment value can hold one
        raise ValueError("must not contain a NUL character")
    return value


# Text that reaches a file name, a process's arguments or its environment.
Text = Annotated[str, AfterValidator(_no_nul)]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, str_strip_whitespace=True)


class NotifyOn(StrEnum):
    """What a job asks to be announced on, through its user's and team's alert channels."""

    FAILURE = "failure"  # it ended failed
    PREEMPTION = "preemption"  # an attempt was preempted (it goes on)
    END = "end"  # it ended, however


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "normal": 1, "high": 2}[self.value]


class CellSelection(Model):
    """Which notebook cells become the job. Indices count every cell from 0, as JupyterLab does."""

    mode: Literal["all", "indices", "tags"] = "all"
    indices: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> CellSelection:
        if self.mode == "indices" and not self.indices:
            raise ValueError("mode 'indices' needs at least one cell index")
        if self.mode == "tags" and not self.tags:
            raise ValueError("mode 'tags' needs at least one tag")
        return self


class NotebookSource(Model):
    kind: Literal["notebook"] = "notebook"
    path: Text = Field(
        min_length=1,
        description="Notebook path, relative to the workspace root",
        json_schema_extra={"pattern": r"\.ipynb$"},  # checked by _ipynb, with a sentence
    )
    cells: CellSelection = Field(default_factory=CellSelection)

    @field_validator("path")
    @classmethod
    def _ipynb(cls, v: str) -> str:
        if not v.endswith(".ipynb"):
            raise ValueError(f"{v!r} is not a notebook (.ipynb)")
        return v


class ScriptSource(Model):
    kind: Literal["script"] = "script"
    path: Text = Field(
        min_length=1,
        description="Python script path, relative to the workspace root",
        json_schema_extra={"pattern": r"\.py$"},  # checked by _py, with a sentence
    )
    args: list[Text] = Field(default_factory=list)

    @field_validator("path")
    @classmethod
    def _py(cls, v: str) -> str:
        if not v.endswith(".py"):
            raise ValueError(f"{v!r} is not a Python script (.py)")
        return v


def _source_kind(value: Any) -> str:
    """'kind' when given, else inferred from the file name, so {"path": "train.ipynb"} works."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind is None:
            kind = "script" if str(value.get("path", "")).endswith(".py") else "notebook"
        return str(kind)
    return getattr(value, "kind", "notebook")


Source = Annotated[
    Annotated[NotebookSource, Tag("notebook")] | Annotated[ScriptSource, Tag("script")],
    Discriminator(_source_kind),
]


def parse_quantity(value: str | int | float) -> int:
    """'16Gi' -> bytes; plain numbers are bytes."""
    if isinstance(value, int | float):
        number = float(value) if isinstance(value, float) else value
    else:
        m = _QUANTITY.match(value.strip())
        if not m:
            raise ValueError(f"{value!r} is not a quantity such as 512Mi, 16Gi or 2G")
        number = float(m.group(1)) * _QUANTITY_UNITS[m.group(2)]
    if isinstance(number, float) and not math.isfinite(number):  # digits past a float's range
        raise ValueError(f"{str(value)[:40]!r} is not a quantity a machine could have")
    return int(number)


_CPU = re.compile(r"^(\d+(?:\.\d+)?)(m?)$")


def parse_cpu(value: str | int | float) -> float:
    """Kubernetes' CPU quantities in cores: '500m' -> 0.5, '0.5' -> 0.5, '2' -> 2.0."""
    m = _CPU.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a CPU quantity such as 500m, 0.5 or 8")
    cores = float(m.group(1)) / (1000 if m.group(2) else 1)
    if not math.isfinite(cores):
        raise ValueError(f"{str(value)[:40]!r} is not a CPU quantity a machine could have")
    return cores


class Resources(Model):
    workers: int = Field(1, ge=1, le=512, description="Nodes (pods); one torchrun agent each")
    processes_per_worker: int | None = Field(
        None, ge=1, le=64, description="Ranks per worker; defaults to GPUs per worker, or 1"
    )
    gpus_per_worker: int = Field(0, ge=0, le=16)
    cpu: float | None = Field(None, gt=0, le=512, description="CPU cores per worker")
    memory: str | None = Field(
        None,
        description="Memory per worker, e.g. 32Gi",
        # In the API's document too, so generated requests carry quantities that reach the
        # backend's bound (trainhub.jobs.placement), not only the parser's refusal.
        json_schema_extra={"pattern": _QUANTITY.pattern},
    )

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str | None) -> str | None:
        if v is not None and parse_quantity(v) < 2**20:
            raise ValueError(f"{v!r} is less than 1Mi")
        if v is not None and parse_quantity(v) > MAX_MEMORY:
            # Past any machine's memory (the backends bound it by the real one); a cluster's
            # API would refuse the quantity with an error of its own, not a sentence.
            raise ValueError(f"{v!r} is more than 1Pi, more than any machine has")
        return v

    @property
    def ranks_per_worker(self) -> int:
        return self.processes_per_worker or max(self.gpus_per_worker, 1)

    @property
    def world_size(self) -> int:
        return self.workers * self.ranks_per_worker

    @property
    def total_gpus(self) -> int:
        return self.workers * self.gpus_per_worker

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory is None else parse_quantity(self.memory)

    @model_validator(mode="after")
    def _gpus_fit_ranks(self) -> Resources:
        p = self.processes_per_worker
        if self.gpus_per_worker and p is not None and p > self.gpus_per_worker:
            raise ValueError(
                f"{p} processes per worker cannot share {self.gpus_per_worker} GPU(s): "
                "use at most one process per GPU"
            )
        return self


class RetryPolicy(Model):
    """How many times an attempt is retried, per failure class. Code errors never retry."""

    # Only the numbers: trainhub.lifecycle.retry applies them (limits, backoff, retries used).
    infrastructure: int = Field(2, ge=0, le=20)
    preempted: int = Field(3, ge=0, le=100)
    environment: int = Field(0, ge=0, le=5)
    backoff_seconds: float = Field(10.0, ge=0, le=3600)
    backoff_factor: float = Field(2.0, ge=1, le=10)
    max_backoff_seconds: float = Field(600.0, ge=0, le=86400)


class Dataset(Model):
    """A dataset by name (one the user's team may read: ``trainhub datasets``), or a path of the
    user's own in the workspace or below the dataset roots, given a name."""

    name: str = Field(pattern=DATASET_NAME)
    path: str | None = Field(
        None, min_length=1, description="None: the team's dataset of this name"
    )
    read_only: bool = True
    catalog: bool = Field(
        False,
        description="Set by trainhub: asked for by name; path is where the ranks find it",
    )

    @model_validator(mode="before")
    @classmethod
    def _by_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: GetJsonSchemaHandler) -> Any:
        """What a request may send: a name alone, or the object (answers carry the object)."""
        schema = handler(core)
        if handler.mode != "validation":
            return schema
        name = {"type": "string", "pattern": DATASET_NAME, "description": "A dataset by name"}
        return {"anyOf": [name, handler.resolve_ref_schema(schema)]}


class SweepRef(Model):
    """The sweep a job is a trial of (set by the sweep controller, kept on resubmit only when
    asked)."""

    id: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)
    trial: int = Field(ge=0, le=100_000, description="The trial's number in its sweep, from 0")


class CheckpointRef(Model):
    """A checkpoint of an earlier job to start from."""

    job_id: str = Field(min_length=1)
    step: int | None = Field(None, ge=0, description="Defaults to that job's latest checkpoint")


def parse_duration(value: Any) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, bool):  # JSON's true is not a number of seconds
        raise ValueError(f"{value!r} is not a duration such as 90m, 2h or 1d12h")
    if isinstance(value, int | float):
        seconds = float(min(value, 10**18))  # an int past a float's range is still too long
    else:
        text = str(value).strip()
        if text.replace(".", "", 1).isdigit():
            seconds = float(text)
        else:
            m = _DURATION.match(text) or _ISO_DURATION.match(text)
            if not text or not m or not any(m.groups()):
                raise ValueError(f"{str(value)[:40]!r} is not a duration such as 90m, 2h or 1d12h")
            # More digits than any runtime has are too long, however many there are.
            whole, fraction = m.groups()[:4], "".join(g or "" for g in m.groups()[4:])  # "35.6S"
            d, h, mi, s = (int(g[:18]) if g else 0 for g in whole)
            seconds = d * 86400 + h * 3600 + mi * 60 + s + float("0" + fraction[:10])
            if any(g and len(g) > 18 for g in whole):
                seconds = math.inf
    if math.isnan(seconds):
        raise ValueError(f"{value!r} is not a duration such as 90m, 2h or 1d12h")
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    longest = limits.current().max_runtime_days
    if seconds > longest * 86400:
        raise ValueError(f"must be at most {longest} days")
    # Whole seconds, rounded up: a limit finer than that means nothing, and an ISO 8601
    # duration with a fraction (PT1.5S) is not one RFC 3339's grammar admits.
    return timedelta(seconds=math.ceil(seconds))


# What parse_duration takes, for the API's documents (the default longest runtime).
MAX_RUNTIME_SCHEMA = {
    "anyOf": [
        {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limits.Limits().max_runtime_days * 86400,
        },
        {
            "type": "string",
            "pattern": r"^\s*(\d+(\.\d+)?|(\d+d)?\s*(\d+h)?\s*(\d+m)?\s*(\d+s)?)\s*$",
        },
        {"type": "null"},
    ],
    "description": "Seconds, or a duration such as 90m, 2h or 1d12h",
}


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
    max_runtime: Annotated[
        timedelta | None, WithJsonSchema(MAX_RUNTIME_SCHEMA, mode="validation")
    ] = None
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
    resume_from: CheckpointRef | None = None
    sweep: SweepRef | None = Field(None, description="The sweep this job is a trial of")

    @field_validator("max_runtime", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> timedelta | None:
        return parse_duration(v)

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
            and (loc[-1] in ("name", "team", "queue") or loc[-2:] == ["sweep", "id"])
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
