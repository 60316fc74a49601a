"""A bundle's file layout and the plain readers every rank uses to run it.

Kept free of pydantic and of the compiler (trainhub.bundle.compile) so that a rank reaches its
first cell as soon as the interpreter is up: this module is on the critical path of every
job start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = "manifest.json"
CELLS = "cells.json"
REQUIREMENTS = "requirements.json"
WORKSPACE = "workspace"


def cell_label(index: int | None) -> str:
    return "the injected parameters" if index is None else f"cell {index + 1}"


@dataclass(frozen=True)
class RunCell:
    cell_index: int | None  # position in the notebook; None for the injected parameters
    source: str
    tags: list[str] = field(default_factory=list)
    injected: bool = False


@dataclass(frozen=True)
class RunManifest:
    """What a rank needs from manifest.json."""

    kind: str  # "notebook" | "script"
    entry: str
    args: list[str]
    workdir: str


def read_manifest(bundle_dir: Path) -> RunManifest:
    data = json.loads((Path(bundle_dir) / MANIFEST).read_text())
    return RunManifest(kind=data["kind"], entry=data["entry"], args=list(data.get("args") or []),
                       workdir=data.get("workdir", ""))


def read_cells(bundle_dir: Path) -> list[RunCell]:
    return [
        RunCell(cell_index=c.get("cell_index"), source=c["source"], tags=list(c.get("tags") or []),
                injected=bool(c.get("injected")))
        for c in json.loads((Path(bundle_dir) / CELLS).read_text())
    ]
