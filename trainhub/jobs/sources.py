"""What a job runs: a notebook (all its cells, or those chosen by index or tag) or a script
(with its arguments); the kind is told by the file name when a request leaves it out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Tag,
    model_validator,
)
from pydantic_core import core_schema

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


@dataclass(frozen=True)
class _FileOfKind:
    """A path's mark that it names a file of one kind, told by its ``suffix``: one without it
    is refused in a sentence, and the API's document gives the suffix as the path's pattern."""

    suffix: str
    what: str

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        return {**handler(schema), "pattern": re.escape(self.suffix) + "$"}

    def _check(self, path: str) -> str:
        if not path.endswith(self.suffix):
            raise ValueError(f"{path!r} is not {self.what} ({self.suffix})")
        return path


class NotebookSource(Model):
    kind: Literal["notebook"] = "notebook"
    path: Annotated[Text, _FileOfKind(".ipynb", "a notebook")] = Field(
        min_length=1, description="Notebook path, relative to the workspace root"
    )
    cells: CellSelection = Field(default_factory=CellSelection)


class ScriptSource(Model):
    kind: Literal["script"] = "script"
    path: Annotated[Text, _FileOfKind(".py", "a Python script")] = Field(
        min_length=1, description="Python script path, relative to the workspace root"
    )
    args: list[Text] = Field(default_factory=list)


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
