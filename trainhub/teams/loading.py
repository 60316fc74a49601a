"""Reading a teams file: YAML in, :class:`~trainhub.teams.file.Teams` out, with the image
catalog it names merged in; every mistake reported as a :class:`TeamsError` naming the path of
the offending field in a sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from trainhub.teams.file import Teams
from trainhub.teams.references import ReferenceErrors


class TeamsError(ValueError):
    """A refused teams file: one ``path: sentence`` per mistake."""

    def __init__(self, errors: list[tuple[str, str]], source: str | None = None):
        self.errors = errors
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(f"{p}: {m}" for p, m in errors))


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "teams file"


def field_message(item: dict[str, Any]) -> str:
    msg: str = item["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    kind = item["type"]
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "missing":
        return "is required"
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        op = {
            "greater_than_equal": ">=",
            "less_than_equal": "<=",
            "greater_than": ">",
            "less_than": "<",
        }[kind]
        limit = next(iter(item.get("ctx", {}).values()), "")
        return f"must be {op} {limit}"
    if kind == "string_pattern_mismatch":
        return "use lower-case letters, digits and '-', starting and ending with a letter or digit"
    return msg


def parse_teams(data: Any, *, source: str | None = None, base_dir: Path | None = None) -> Teams:
    """Validate teams data (as loaded from YAML); raises :class:`TeamsError` naming each field."""
    if not isinstance(data, dict):
        raise TeamsError([("teams file", "must be a mapping with pools, images and teams")], source)
    catalog = data.get("image_catalog")
    if catalog and base_dir is not None:
        data = {
            **data,
            "images": [*data.get("images", []), *_load_catalog(base_dir / catalog, source)],
        }
    try:
        return Teams.model_validate(data)
    except ValidationError as e:
        errors = []
        for item in e.errors(include_url=False):
            ctx_error = item.get("ctx", {}).get("error")
            if isinstance(ctx_error, ReferenceErrors):
                errors += ctx_error.errors
            else:
                errors.append((_path(item["loc"]), field_message(dict(item))))
        raise TeamsError(errors, source) from None


def _load_catalog(path: Path, source: str | None) -> list[Any]:
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as e:
        raise TeamsError([("image_catalog", f"cannot read {path}: {e.strerror}")], source) from None
    images = loaded.get("images") if isinstance(loaded, dict) else loaded
    if not isinstance(images, list):
        raise TeamsError([("image_catalog", f"{path} has no list of images")], source)
    return images


def load_teams(path: str | Path) -> Teams:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise TeamsError([("teams file", f"cannot read it: {e.strerror}")], str(path)) from None
    except yaml.YAMLError as e:
        raise TeamsError([("teams file", f"is not valid YAML: {e}")], str(path)) from None
    return parse_teams(data, source=str(path), base_dir=path.parent)
