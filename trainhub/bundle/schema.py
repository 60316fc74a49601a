"""The one schema of a bundle's files, as plain dataclasses, and the readers a rank uses.

Kept free of pydantic and of the compiler so that a rank reaches its first cell as soon as
the interpreter is up: this module is on the critical path of every job start. The compiler
writes these records with ``to_json``; every reader goes through ``from_json``, which names
the file and the field when a bundle file is not what this schema says.

Cell indices are 0-based positions in the notebook's cell list, markdown cells included
(JupyterLab's activeCellIndex); messages say "cell {index+1}".
"""

from __future__ import annotations

import json
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from trainhub.bundle.errors import BundleError
from trainhub.bundle.layout import CELLS, MANIFEST

MANIFEST_FORMAT = 1


def cell_label(index: int | None) -> str:
    return "the injected parameters" if index is None else f"cell {index + 1}"


class _Record:
    """JSON round trip of a dataclass: unknown keys, missing fields and wrong types are errors."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_json(cls, data: Any, where: str) -> Any:
        if not isinstance(data, dict):
            raise BundleError(f"{where}: expected an object, found {type(data).__name__}")
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        if unknown:
            raise BundleError(f"{where}: unknown field {unknown[0]!r}")
        missing = [f.name for f in fields(cls) if f.name not in data and _required(f)]  # type: ignore[arg-type]
        if missing:
            raise BundleError(f"{where}: missing field {missing[0]!r}")
        hints = _hints(cls)
        for name, value in data.items():
            if not _fits(value, hints[name]):
                raise BundleError(f"{where}: field {name!r} is not {_describe(hints[name])}")
        return cls(**data)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value``, as json.loads returns it, has the type ``hint`` names (one level deep
    into lists and dicts)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if origin is Literal:
        return value in args
    if origin in (Union, UnionType):
        return any(_fits(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if hint is int:  # JSON has no bool/int distinction to keep, but Python does
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


@dataclass(frozen=True)
class BundleCell(_Record):
    cell_index: int | None  # position in the notebook; None for the injected parameters
    source: str
    tags: list[str] = field(default_factory=list)
    injected: bool = False


@dataclass(frozen=True)
class Requirement(_Record):
    cell_index: int
    line: int  # 1-based line inside the cell
    source: str  # the line as written in the notebook
    argv: list[str]  # arguments after 'pip install', paths relative to the bundle


@dataclass(frozen=True, kw_only=True)
class BundleManifest(_Record):
    format: int = MANIFEST_FORMAT
    kind: Literal["notebook", "script"]
    entry: str  # notebook or script path, relative to the workspace root
    args: list[str] = field(default_factory=list)
    workdir: str  # directory the code runs in, relative to bundle/workspace
    selection: dict[str, Any] | None = None  # the submitted CellSelection, as JSON
    cell_indices: list[int] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    notebook_sha256: str | None = None
    content_hash: str
    requirements: int = 0
    file_count: int
    total_bytes: int
    warnings: list[str] = field(default_factory=list)


def read_json(path: Path) -> Any:
    """A bundle file's JSON; a missing, unreadable or malformed file is a BundleError naming it."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BundleError(f"{path}: no such bundle file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BundleError(f"{path}: cannot be read: {e}") from None
    except json.JSONDecodeError as e:
        raise BundleError(f"{path}: not valid JSON: {e}") from None


def read_list(path: Path, record: type[_Record]) -> list[Any]:
    data = read_json(path)
    if not isinstance(data, list):
        raise BundleError(f"{path}: expected a list, found {type(data).__name__}")
    return [record.from_json(item, f"{path}[{i}]") for i, item in enumerate(data)]


def read_manifest(bundle_dir: Path) -> BundleManifest:
    path = Path(bundle_dir) / MANIFEST
    return BundleManifest.from_json(read_json(path), str(path))


def read_cells(bundle_dir: Path) -> list[BundleCell]:
    return read_list(Path(bundle_dir) / CELLS, BundleCell)
