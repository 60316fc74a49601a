"""What a job runs: a notebook (all its cells, or those chosen by index or tag) or a script
(with its arguments); the kind is told by the file name when a request leaves it out.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from trainhub.jobs.specparts import Model, Text


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
