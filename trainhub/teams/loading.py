"""Reading a teams file: YAML in, :class:`~trainhub.teams.file.Teams` out, with the image
catalog it names merged in; every mistake reported as a :class:`TeamsError` naming the path of
the offending field in a sentence."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from trainhub.adminfiles import field_errors, field_message, field_path, load_file
from trainhub.teams.file import Teams
from trainhub.teams.images import Image
from trainhub.teams.references import ReferenceErrors
from trainhub.teams.team import Team


class TeamsError(ValueError):
    """A refused teams file: one ``path: sentence`` per mistake."""

    def __init__(self, errors: list[tuple[str, str]], source: str | None = None):
        self.errors = errors
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(f"{p}: {m}" for p, m in errors))


class CatalogError(ValueError):
    """A refused image catalog: one ``file: field: sentence`` per mistake."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def _catalog_refused(source: str, sentence: str) -> CatalogError:
    return CatalogError([f"{source}: {sentence}"])


def load_catalog(path: Path) -> list[Image]:
    """The image catalog at ``path`` (``images:``, or the bare list), every mistake named."""
    return load_file(path, catalog_images, _catalog_refused)


def catalog_images(data: Any, source: str) -> list[Image]:
    """The images of a catalog's data (of file ``source``): valid, each name once."""
    entries = data.get("images") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise CatalogError([f"{source}: images: must be a list"])
    images, problems = [], []
    for i, entry in enumerate(entries):
        try:
            images.append(Image.model_validate(entry))
        except ValidationError as e:
            problems += [
                f"{source}: {field}: {message}" for field, message in field_errors(e, "images", i)
            ]
    names = [i.name for i in images]
    problems += [
        f"{source}: image {n!r} is listed twice"
        for n in sorted({n for n in names if names.count(n) > 1})
    ]
    if problems:
        raise CatalogError(problems)
    return images


def parse_teams(data: Any, *, source: str | None = None, base_dir: Path | None = None) -> Teams:
    """Validate teams data (as loaded from YAML); raises :class:`TeamsError` naming each field."""
    if not isinstance(data, dict):
        raise TeamsError([("teams file", "must be a mapping with pools, images and teams")], source)
    catalog = data.get("image_catalog")
    if catalog and base_dir is not None:
        try:
            images = load_catalog(base_dir / catalog)
        except CatalogError as e:
            raise TeamsError([("image_catalog", p) for p in e.problems], source) from None
        data = {**data, "images": [*data.get("images", []), *images]}
    try:
        return Teams.model_validate(data)
    except ValidationError as e:
        errors = []
        for item in e.errors(include_url=False):
            ctx_error = item.get("ctx", {}).get("error")
            if isinstance(ctx_error, ReferenceErrors):
                errors += ctx_error.errors
            else:
                errors.append((field_path(item["loc"]) or "teams file", field_message(item)))
        raise TeamsError(errors, source) from None


def env_team(team: str | None) -> Team | None:
    """Team ``team`` of TRAINHUB_TEAMS_FILE, when there is such a file and team (what a
    process outside a cluster's backend reads of its team: alerts, the MLflow mirror)."""
    teams_file = os.environ.get("TRAINHUB_TEAMS_FILE")
    if not team or not teams_file or not Path(teams_file).is_file():
        return None
    try:
        return load_teams(teams_file).team(team)
    except KeyError:
        return None


def load_teams(path: str | Path) -> Teams:
    path = Path(path)
    return load_file(
        path,
        lambda data, source: parse_teams(data, source=source, base_dir=path.parent),
        lambda source, sentence: TeamsError([("teams file", sentence)], source),
    )
