"""Names and references of the registry, parsed once (pure).

A model is named ``[A-Za-z0-9][A-Za-z0-9_-]*`` (no dots or slashes: the name is part of its
records' ids and of the CLI's ``NAME@alias`` and ``NAME/VERSION``). A reference to a version
is ``NAME`` (its newest version that is not archived), ``NAME@ALIAS`` or ``NAME/VERSION``
(``NAME/3`` or ``NAME/v3``). A source to register from is ``JOB`` (its newest checkpoint, else
its whole outputs folder), ``JOB:STEP`` (that checkpoint) or ``JOB:PATH`` (a file or folder
of its outputs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from trainhub.jobs.spec import field_error

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
ALIAS = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
JOB_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,252}$")
LATEST = "latest"  # not an alias one sets: NAME alone, or NAME@latest


def check_name(name: str, field: str = "name") -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise field_error(
            field,
            f"{name!r} is not a model name (letters, digits, '_' and '-', starting with a "
            "letter or digit, at most 100)",
        )
    return name


def check_alias(alias: str, field: str = "alias") -> str:
    if not isinstance(alias, str) or not ALIAS.match(alias):
        raise field_error(
            field,
            f"{alias!r} is not an alias (lower-case letters, digits, '_' and '-', starting with "
            "a letter, at most 63)",
        )
    if alias == LATEST:
        raise field_error(field, "'latest' is the newest version itself: it cannot be moved")
    return alias


@dataclass(frozen=True)
class Ref:
    """A version asked for: by ``version`` number, by ``alias``, or the newest (both None)."""

    name: str
    version: int | None = None
    alias: str | None = None

    def __str__(self) -> str:
        if self.version is not None:
            return f"{self.name}/{self.version}"
        return f"{self.name}@{self.alias or LATEST}"


def parse_ref(text: str, field: str = "model") -> Ref:
    """``NAME``, ``NAME@ALIAS`` or ``NAME/VERSION`` (``NAME/v3`` too)."""
    if not isinstance(text, str) or not text:
        raise field_error(field, "name a model: NAME, NAME@ALIAS or NAME/VERSION")
    if "@" in text:
        name, _, alias = text.partition("@")
        check_name(name, field)
        if alias == LATEST:
            return Ref(name)
        return Ref(name, alias=check_alias(alias, field))
    if "/" in text:
        name, _, number = text.partition("/")
        check_name(name, field)
        digits = number[1:] if number[:1] in ("v", "V") else number
        if not (digits.isascii() and digits.isdigit()) or int(digits) < 1:
            raise field_error(field, f"{number!r} is not a version number (1, 2, ... or v1)")
        return Ref(name, version=int(digits))
    return Ref(check_name(text, field))


@dataclass(frozen=True)
class Source:
    """What to register: a checkpoint ``step``, an outputs ``path``, or (both None) the job's
    newest checkpoint, else its whole outputs folder."""

    job: str
    step: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        what = self.step if self.step is not None else self.path
        return self.job if what is None else f"{self.job}:{what}"


def parse_source(text: str, field: str = "from") -> Source:
    """``JOB``, ``JOB:STEP`` or ``JOB:PATH`` (a relative path inside the job's outputs)."""
    if not isinstance(text, str) or not text:
        raise field_error(field, "name a job: JOB, JOB:STEP or JOB:OUTPUT")
    job, sep, what = text.partition(":")
    if not JOB_ID.match(job):
        raise field_error(field, f"{job!r} is not a job id")
    if not sep:
        return Source(job)
    if what.isascii() and what.isdigit():
        return Source(job, step=int(what))
    return Source(job, path=check_output_path(what, field))


def check_output_path(path: str, field: str = "path") -> str:
    """A relative path inside a job's outputs: no ``..``, not absolute, not empty."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts or str(pure) in ("", "."):
        raise field_error(field, f"{path!r} is not a path inside the job's outputs")
    return str(pure)
