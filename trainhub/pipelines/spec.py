"""The pipeline file (``*.pipeline.yaml``): its one schema, and reading it with every mistake
named by step and field. Pure: no file but the one given is read, nothing is checked against
the workspace or the backend (trainhub.pipelines.checks does that).

::

    name: train-eval
    parameters: {epochs: 3}             # the pipeline's, with defaults; `-p epochs=5` overrides
    steps:
      prepare:
        notebook: prepare.ipynb
        outputs: [data]                 # folders or files it writes to trainhub.outputs.path()
      train:
        notebook: train.ipynb
        cells: {mode: tags, tags: [train]}
        inputs: {data: prepare.data}    # an earlier step's output, read-only at
                                        # trainhub.datasets.path("data")
        datasets: [imagenet]            # datasets by name, as a job asks for them
        pipeline_parameters: [epochs]   # the pipeline's parameters this step is given
        parameters: {lr: 0.01}
        resources: {workers: 1, processes_per_worker: 2, gpus_per_worker: 0}
        retry: {infrastructure: 2}
        outputs: [model]
      evaluate:
        notebook: evaluate.ipynb
        depends_on: [train]             # also implied by inputs
        inputs: {model: train.model}

``python -m trainhub.pipelines.spec`` rewrites the JSON schema shipped for editors
(``pipeline.schema.json`` beside this module; a test fails while it is stale).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from trainhub.adminfiles import field_errors
from trainhub.jobs.naming import MAX_NAME_LENGTH, slug_name
from trainhub.jobs.quantities import MaxRuntime
from trainhub.jobs.sources import CellSelection
from trainhub.jobs.spec import FieldError, SpecError
from trainhub.jobs.specparts import (
    DATASET_NAME,
    NAME_PATTERN,
    Dataset,
    Model,
    Priority,
    Resources,
    RetryPolicy,
    Text,
)

SUFFIX = ".pipeline.yaml"
SCHEMA_FILE = Path(__file__).with_name("pipeline.schema.json")
MAX_STEPS = 500
MAX_FILE_BYTES = 1 << 20
# A step's name is part of its jobs' names (trainhub.pipelines.steps), which fit a label.
MAX_STEP_NAME = 30
OUTPUT = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # a file or folder name, no path


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader where PyYAML was built with it (~7x faster than the pure-Python
    one, which alone would take most of a 200-step file's 200 ms check: benchmarks/
    pipelines.py), refusing a key given twice: YAML keeps the last, and a step written twice
    would be lost without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)  # type: ignore[no-untyped-call,no-any-return]


StepName = Annotated[str, Field(min_length=1, max_length=MAX_STEP_NAME, pattern=NAME_PATTERN)]
OutputName = Annotated[str, Field(pattern=OUTPUT)]


class PipelineError(SpecError):
    """A refused pipeline: one sentence per mistake, each naming its step and field
    (``steps.train.inputs.data``)."""

    def __init__(self, errors: list[FieldError], source: str | None = None):
        super().__init__(errors)
        self.source = source
        if source:
            self.args = (f"{source}: {self.args[0]}",)


def refused(field: str, message: str) -> FieldError:
    return FieldError(field=field, message=message)


class Step(Model):
    """One step: a notebook run as an ordinary trainhub job."""

    notebook: Annotated[Text, Field(min_length=1, json_schema_extra={"pattern": r"\.ipynb$"})] = (
        Field(description="The notebook, relative to the workspace root")
    )
    cells: CellSelection = Field(
        default_factory=CellSelection, description="Which cells run: all, by index or by tag"
    )
    depends_on: list[StepName] = Field(
        default_factory=list, description="Steps that must succeed first (inputs imply theirs)"
    )
    inputs: dict[Annotated[str, Field(pattern=DATASET_NAME)], str] = Field(
        default_factory=dict,
        description="name -> '<step>.<output>': an earlier step's output, mounted read-only "
        "and found at trainhub.datasets.path(name)",
    )
    outputs: list[OutputName] = Field(
        default_factory=list,
        description="What the step writes below trainhub.outputs.path(), each a folder or file "
        "of this name; later steps take them as inputs",
    )
    datasets: list[Dataset] = Field(default_factory=list, description="Datasets by name")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Injected after the cell tagged 'parameters'"
    )
    pipeline_parameters: list[str] = Field(
        default_factory=list, description="The pipeline's parameters this step is given"
    )
    resources: Resources = Field(default_factory=Resources)
    image: Text | None = Field(None, description="Container image, as the team's policy allows")
    queue: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        max_length=63,
        description="The pool to run in (on a cluster its queue); default: one that fits",
    )
    priority: Priority = Priority.NORMAL
    max_runtime: MaxRuntime = None
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    env: dict[str, Text] = Field(default_factory=dict)

    @field_validator("notebook")
    @classmethod
    def _a_notebook(cls, v: str) -> str:
        if not v.endswith(".ipynb"):
            raise ValueError(f"{v!r} is not a notebook (.ipynb)")
        return v

    @field_validator("outputs")
    @classmethod
    def _once(cls, v: list[str]) -> list[str]:
        twice = sorted({o for o in v if v.count(o) > 1})
        if twice:
            raise ValueError(f"names {', '.join(twice)} twice")
        return v

    @model_validator(mode="after")
    def _inputs_are_not_datasets(self) -> Step:
        clash = sorted(set(self.inputs) & {d.name for d in self.datasets})
        if clash:
            raise ValueError(f"{', '.join(clash)}: both an input and a dataset of this step")
        return self


class Pipeline(Model):
    """A pipeline file: its name, its parameters with their defaults, its steps by name."""

    name: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        pattern=NAME_PATTERN,
        description="Defaults to the file's name",
    )
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The pipeline's parameters and their defaults"
    )
    steps: dict[StepName, Step] = Field(min_length=1, max_length=MAX_STEPS)


def parse_pipeline(data: Any, source: str = "pipeline") -> Pipeline:
    """Validate a pipeline's data (as loaded from YAML or sent as JSON); every mistake in one
    :class:`PipelineError`, each naming its field."""
    if not isinstance(data, dict):
        raise PipelineError([refused("pipeline", "must be a mapping with steps")], source)
    try:
        return Pipeline.model_validate(data)
    except ValidationError as e:
        raise PipelineError(
            [refused(field or "pipeline", message) for field, message in field_errors(e)], source
        ) from None


def read_pipeline(text: str, source: str) -> Pipeline:
    """A pipeline file's text, parsed and validated (``source``: how sentences name it)."""
    if len(text.encode()) > MAX_FILE_BYTES:
        raise PipelineError([refused("pipeline", "is larger than 1 MiB")], source)
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise PipelineError(
            [refused("pipeline", f"is not valid YAML: {_said(e)}")], source
        ) from None
    pipeline = parse_pipeline(data, source)
    if pipeline.name is None:
        pipeline.name = default_name(source)
    return pipeline


def _said(error: yaml.YAMLError) -> str:
    """The parser's sentence and where, without its name for the text (``<unicode string>``)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(error)


def default_name(source: str) -> str:
    base = source.rsplit("/", 1)[-1].removesuffix(SUFFIX).rsplit(".", 1)[0]
    return slug_name(base)[:MAX_NAME_LENGTH].rstrip("-") or "pipeline"


def json_schema() -> dict[str, Any]:
    """The JSON schema of a pipeline file, for editors (YAML language servers read it)."""
    schema = Pipeline.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://trainhub.dev/schemas/pipeline.schema.json",
        "title": "trainhub pipeline (*.pipeline.yaml)",
        **schema,
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m trainhub.pipelines.spec: rewrite the shipped schema
    SCHEMA_FILE.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
