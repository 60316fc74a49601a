"""Finding jobs by a search term: what of a job a term is looked for in, said once.

A term is looked for, case-insensitively, in the job's name, its tags, its note and its
parameters written ``name=value`` (so ``0.001``, ``lr=0.001`` and ``adam`` all find a job
given ``lr=0.001, optimizer="adam"``). Several words must all be found. The local store
keeps :func:`search_text` in a column it scans in SQL; other backends filter with
:func:`matches` over what they list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainhub.jobs.models import JobRecord

MAX_SEARCH_CHARS = 200
_SEPARATOR = "\n"  # no term holds one (terms are split on whitespace): matches stay in a part


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def search_text(
    name: str, tags: Iterable[str], note: str | None, parameters: Mapping[str, Any]
) -> str:
    """Everything a term may be found in, lower case."""
    parts = [name, *tags, note or "", *(f"{k}={_value_text(v)}" for k, v in parameters.items())]
    return _SEPARATOR.join(parts).lower()


def words(search: str | None) -> list[str]:
    """The words of a search, lower case; none for an empty one."""
    return (search or "").lower().split()


def matches(text: str, search: str | None) -> bool:
    """Whether every word of ``search`` is found in ``text`` (a :func:`search_text`)."""
    return all(term in text for term in words(search))


def found(record: JobRecord, search: str | None) -> bool:
    """Whether ``search`` finds the job (for a backend that filters what it lists)."""
    text = search_text(record.name, record.tags, record.note, record.spec.parameters)
    return matches(text, search)
