"""Job names: a natural name made valid, and a distinct name for a job run again.

The one rule for both (the submit dialog mirrors it in labextension/src/naming.ts): lower
case, every run of other characters one '-', at most :data:`MAX_NAME_LENGTH` characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_NAME_LENGTH = 40  # leaves room for the id suffix inside a 63-character Kubernetes name
_NUMBERED = re.compile(r"^(.*)-(\d+)$")


def slug_name(text: str, fallback: str = "job") -> str:
    """``'Sweep LR 0.001'`` -> ``'sweep-lr-0-001'``: a valid job name from any text."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:MAX_NAME_LENGTH].strip("-")
    return name or fallback


def successor_name(name: str, taken: Iterable[str], *, numbered: bool = False) -> str:
    """The name of a job that runs ``name``'s job again: ``name-2``, or the next number free
    among ``taken``. ``numbered``: ``name`` was itself given a number by this rule (its job
    was run again), so ``train-2`` is followed by ``train-3``, not ``train-2-2``."""
    base = name
    if numbered and (m := _NUMBERED.match(name)):
        base = m.group(1)
    used = {1}
    for other in taken:
        if other == base:
            continue
        m = _NUMBERED.match(other)
        if m and m.group(1) == base:
            used.add(int(m.group(2)))
    n = max(used) + 1
    suffix = f"-{n}"
    return base[: MAX_NAME_LENGTH - len(suffix)].rstrip("-") + suffix
