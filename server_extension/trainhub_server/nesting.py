"""Where a JSON body nests too deeply to parse, named as a field.

Python's JSON parser recurses, so a body nested thousands of levels deep cannot be parsed to
find out which field it was; this scans the text once, without recursion, keeping the keys of
the objects it is inside.
"""

from __future__ import annotations


def _key_at(text: str, start: int) -> tuple[str, int]:
    """The string that starts at ``text[start] == '"'`` (escapes kept as written) and the
    index after it."""
    i = start + 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return text[start + 1 : i], i + 1


def too_deep(raw: bytes, limit: int) -> tuple[str, str]:
    """(field, message) for the first place ``raw`` nests deeper than ``limit`` levels: the
    field is the top-level key it is under ("body" when none), and the message names the key
    below that, as a parameter's error does."""
    text = raw.decode(errors="replace")
    keys: list[str | None] = []  # per open container: the key being read, None in arrays
    last: str | None = None  # the last string read (a key when ':' follows)
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            last, i = _key_at(text, i)
            continue
        if c == ":" and keys:
            keys[-1] = last
        elif c in "[{":
            if len(keys) >= limit:
                break
            keys.append(None)
        elif c in "]}" and keys:
            keys.pop()
        i += 1
    named = [k for k in keys if k is not None]
    message = f"nests deeper than {limit} levels"
    if not keys or keys[0] is None:
        return "body", message
    return named[0], f"{named[1]}: {message}" if len(named) > 1 else message
