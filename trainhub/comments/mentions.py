"""Which ``@names`` of a comment's Markdown are teammates (pure).

A mention is ``@`` then a user name, not preceded by a word character (an e-mail address is
no mention) and outside code (a fenced block, an indented block, an inline span): text the
writer quoted is not an address. A name that is no member of the team stays plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# User names as JupyterHub allows them in practice: letters, digits, ".", "_", "-"; a final
# "." or "-" is punctuation of the sentence, not the name's.
_MENTION = re.compile(r"(?<![\w@./-])@([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?)")
_FENCE = re.compile(r"^(?: {0,3})(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)


def prose(markdown: str) -> str:
    """``markdown`` without its code: fenced and indented blocks and inline spans."""
    kept, fence = [], None
    for line in markdown.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        if line.startswith(("    ", "\t")):
            continue
        kept.append(line)
    return _INLINE_CODE.sub(" ", "\n".join(kept))


def named(markdown: str) -> list[str]:
    """Every ``@name`` of the text's prose, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _MENTION.finditer(prose(markdown))))


def mentioned(markdown: str, members: Iterable[str]) -> list[str]:
    """The team's ``members`` the text mentions, in order, each once (names match exactly)."""
    team = set(members)
    return [name for name in named(markdown) if name in team]
