"""An admin's YAML files, read one way: the teams file, the image catalog, and the embedded
default's images, datasets and retention files (a user's alerts file follows the same rules).

:func:`load_file` reads and parses a file and hands its data to the file's own parser;
:func:`top_level` checks the mapping at its top, and :func:`validated` a part of it with its
pydantic model. Every mistake is refused in one sentence naming the file, then the field:
``datasets.yaml: datasets.c4.path: ...``, the field in :func:`field_path`'s spelling and the
sentence in :func:`field_message`'s wording. (A request's fields are the API's to name:
:func:`trainhub.jobs.spec.explain`, dots for indexes.)

Each file keeps its own error class (the server maps them to different statuses), given here
as a :data:`Refusal`: called with the file and the sentence, it returns the error to raise.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Refusal = Callable[[str, str], Exception]
_REQUIRED: Any = object()

_COMPARISONS = {
    "greater_than_equal": ">=",
    "less_than_equal": "<=",
    "greater_than": ">",
    "less_than": "<",
}


def in_file(kind: Callable[[str], Exception]) -> Refusal:
    """The refusal of an error class that takes one sentence: ``file: sentence``."""
    return lambda source, sentence: kind(f"{source}: {sentence}")


def field_path(loc: Sequence[Any]) -> str:
    """pydantic's location as the file spells it: ``teams[1].quota.a100``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def field_message(item: Mapping[str, Any]) -> str:
    """One of pydantic's errors as a sentence an admin can act on."""
    kind = item["type"]
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "missing":
        return "is required"
    if kind in _COMPARISONS:
        limit = next(iter(item.get("ctx", {}).values()), "")
        return f"must be {_COMPARISONS[kind]} {limit}"
    if kind == "string_pattern_mismatch":
        return "use lower-case letters, digits and '-', starting and ending with a letter or digit"
    return str(item["msg"]).removeprefix("Value error, ")


def field_errors(error: ValidationError, *at: str | int) -> list[tuple[str, str]]:
    """``(field, sentence)`` for each of pydantic's errors, the fields below ``at``."""
    return [
        (field_path((*at, *item["loc"])), field_message(item))
        for item in error.errors(include_url=False)
    ]


def validated(model: type[M], value: Any, refused: Refusal, source: str, *at: str | int) -> M:
    """``value`` (the part of file ``source`` at ``at``) as ``model``, else its first mistake
    refused as ``source: field: sentence``."""
    try:
        return model.model_validate(value)
    except ValidationError as e:
        field, message = field_errors(e, *at)[0]
        raise refused(source, f"{field}: {message}" if field else message) from None


def top_level(
    data: Any, source: str, refused: Refusal, fields: Collection[str], shape: str
) -> dict[str, Any] | None:
    """The mapping at the top of file ``source``, holding only ``fields``: None when the file
    is empty; else refused with ``shape`` (what the top must be) or its first unknown field."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise refused(source, shape)
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise refused(source, f"{unknown[0]}: is not a known field")
    return data


def parse_yaml(text: str, source: str, refused: Refusal, *, quote: bool = True) -> Any:
    """The data of YAML ``text``. ``quote=False`` leaves the parser's words out of a refusal:
    they quote the file, which is not every reader's to see."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise refused(source, f"is not valid YAML: {e}" if quote else "is not valid YAML") from None


def load_file(
    path: Path,
    parse: Callable[[Any, str], T],
    refused: Refusal,
    *,
    absent: T = _REQUIRED,
    source: str | None = None,
    quote: bool = True,
) -> T:
    """``parse(data, source)`` of the YAML file ``path`` (``source``: how sentences name it, the
    path unless given); ``absent`` when there is no file, if given, else that is refused."""
    source = str(path) if source is None else source
    try:
        text = path.read_text()
    except OSError as e:
        if isinstance(e, FileNotFoundError) and absent is not _REQUIRED:
            return absent
        raise refused(source, f"cannot read it: {e.strerror}") from None
    return parse(parse_yaml(text, source, refused, quote=quote), source)
