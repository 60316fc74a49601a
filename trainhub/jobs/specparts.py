"""The parts a job spec is made of, each validated on its own: the base model and the text
rule every spec model shares, the resources a job asks for, its retry policy, the datasets it
reads, the sweep, pipeline run and checkpoint it refers to, its priority and what it asks to be
announced on. :class:`trainhub.jobs.spec.JobSpec` puts them together.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)

from trainhub.jobs.quantities import MAX_MEMORY, QUANTITY, parse_quantity
from trainhub.jobs.shares import parse_share, share_text

NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DATASET_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"


def _no_nul(value: str) -> str:
    if "\x00" in value:  # no path, argument or environment value can hold one
        raise ValueError("must not contain a NUL character")
    return value


# Text that reaches a file name, a process's arguments or its environment.
Text = Annotated[str, AfterValidator(_no_nul)]

NOT_BLANK = r"\S"  # one pattern for the document and the check, so that both agree


def _not_blank(value: str) -> str:
    if not re.search(NOT_BLANK, value):
        raise ValueError("must not be blank")
    return value


# Text a person reads (a comment, a notice): something besides white space, as the API document
# says too.
NotBlank = Annotated[
    str, AfterValidator(_not_blank), Field(json_schema_extra={"pattern": NOT_BLANK})
]


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


# ``workers: "1:3"``, as torchrun's ``--nnodes MIN:MAX`` spells an elastic size.
WORKER_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


class Resources(Model):
    workers: int = Field(
        1,
        ge=1,
        le=512,
        description="Nodes (pods); one torchrun agent each. An elastic job's most workers "
        "(MAX); a request may send 'MIN:MAX' (e.g. '1:3'), which sets min_workers too",
    )
    min_workers: int | None = Field(
        None,
        ge=1,
        le=512,
        description="An elastic job's fewest workers (MIN): it starts once MIN fit, grows "
        "toward workers as room frees up and shrinks down to MIN; None: a fixed size",
    )
    processes_per_worker: int | None = Field(
        None, ge=1, le=64, description="Ranks per worker; defaults to GPUs per worker, or 1"
    )
    gpus_per_worker: int = Field(0, ge=0, le=16)
    gpu_share: str | None = Field(
        None,
        description='A share of one GPU, "1/N", on a pool of the team that shares its GPUs N '
        "ways (cluster only; one worker, no whole GPUs)",
    )
    cpu: float | None = Field(None, gt=0, le=512, description="CPU cores per worker")
    memory: str | None = Field(
        None,
        description="Memory per worker, e.g. 32Gi",
        # In the API's document too, so generated requests carry quantities that reach the
        # backend's bound (trainhub.jobs.placement), not only the parser's refusal.
        json_schema_extra={"pattern": QUANTITY.pattern},
    )

    @model_validator(mode="before")
    @classmethod
    def _worker_range(cls, value: Any) -> Any:
        """``workers: "MIN:MAX"`` is ``min_workers: MIN, workers: MAX``."""
        if not isinstance(value, dict) or not isinstance(value.get("workers"), str):
            return value
        match = WORKER_RANGE.match(value["workers"])
        if match is None:
            return value  # a plain number, or the field's own refusal below
        low, high = int(match[1]), int(match[2])
        given = value.get("min_workers")
        if given is not None and given != low:
            raise ValueError(
                f"workers {value['workers']!r} says min_workers {low}, but min_workers is "
                f"{given}: give one of them"
            )
        return {**value, "workers": high, "min_workers": low}

    @field_validator("workers", mode="before")
    @classmethod
    def _workers_text(cls, v: Any) -> Any:
        if isinstance(v, str) and ":" in v:  # MIN:MAX that _worker_range could not read
            raise ValueError(f"{v!r}: use a whole number, or MIN:MAX such as 1:3")
        return v

    @field_validator("min_workers")
    @classmethod
    def _min_workers(cls, v: int | None, info: ValidationInfo) -> int | None:
        most = info.data.get("workers")  # absent when workers was refused itself
        if v is None or most is None:
            return v
        if v > most:
            raise ValueError(f"{v} is more than workers ({most}): MIN must be at most MAX")
        # MIN == MAX is a fixed size, kept exactly as a fixed-size job (torchrun's N:N).
        return None if v == most else v

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

    @field_validator("gpu_share")
    @classmethod
    def _share(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        text = share_text(parse_share(v))
        if info.data.get("workers", 1) != 1:
            raise ValueError(
                f"a shared GPU holds one worker; {info.data['workers']} workers need whole GPUs"
            )
        if info.data.get("gpus_per_worker"):
            raise ValueError("ask for whole GPUs (gpus_per_worker) or a share, not both")
        return text

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
    def elastic(self) -> bool:
        return self.min_workers is not None

    @property
    def fewest_workers(self) -> int:
        """What the job needs to start: MIN for an elastic job, all its workers otherwise."""
        return self.workers if self.min_workers is None else self.min_workers

    @property
    def worker_range(self) -> str:
        """``"1:3"`` for an elastic job, ``"3"`` for a fixed one (torchrun's --nnodes)."""
        return f"{self.min_workers}:{self.workers}" if self.elastic else str(self.workers)

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: GetJsonSchemaHandler) -> Any:
        """What a request may send for workers: a number, or ``"MIN:MAX"``."""
        schema = handler(core)
        if handler.mode != "validation":
            return schema
        target = handler.resolve_ref_schema(schema)
        number = target["properties"]["workers"]
        spelled = {"type": "string", "pattern": WORKER_RANGE.pattern, "description": "MIN:MAX"}
        outer = ("title", "default", "description")
        target["properties"]["workers"] = {
            "anyOf": [{k: v for k, v in number.items() if k not in outer}, spelled],
            **{k: number[k] for k in outer if k in number},
        }
        return schema

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


class PipelineRef(Model):
    """The pipeline run a job is a step of (set by the pipeline controller; a step run again
    on its own is a job of its own)."""

    run: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)
    step: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)
    name: str | None = Field(None, max_length=63, description="The pipeline's name")


class CheckpointRef(Model):
    """A checkpoint of an earlier job to start from."""

    job_id: str = Field(min_length=1)
    step: int | None = Field(None, ge=0, description="Defaults to that job's latest checkpoint")
