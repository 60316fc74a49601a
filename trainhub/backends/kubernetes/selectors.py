"""Kubernetes label selectors as the API server reads them, so that a list answered from the
controller's cache selects exactly what the same list request would (pure, no I/O)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Labels = Mapping[str, str]
Match = Callable[[Labels], bool]

_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def requirements(selector: str) -> list[str]:
    """The requirements of a selector: split on the commas between them, not those inside
    ``in (a, b)``; each stripped of spaces."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _requirement(text: str) -> Match:
    equality = _EQUALITY.match(text)
    if equality:
        key, op, value = equality.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    found = _SET.match(text)
    if not found:
        raise ValueError(f"label selector requirement {text.strip()!r} is not understood")
    negated, key, op, values = found.groups()
    if op is None:
        return (lambda labels: key not in labels) if negated else (lambda labels: key in labels)
    if negated:
        raise ValueError(f"label selector requirement {text.strip()!r} is not understood")
    wanted = {v.strip() for v in values.split(",") if v.strip()}
    if op == "in":
        return lambda labels: labels.get(key) in wanted
    return lambda labels: labels.get(key) not in wanted


def matcher(selector: str | None) -> Match:
    """A predicate over an object's labels; every requirement must hold (as the API server
    ANDs them). An empty selector selects everything."""
    checks = [_requirement(r) for r in requirements(selector or "")]
    return lambda labels: all(check(labels) for check in checks)
