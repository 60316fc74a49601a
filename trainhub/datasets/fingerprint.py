"""A dataset's fingerprint for the lineage: total size, file count and newest modification from
directory metadata, and on request a content hash, streamed and bounded.

Standard library only and pure but for the reads: the same tree gives the same fingerprint.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from typing import Any

MAX_ENTRIES = 100_000  # beyond this a fingerprint says "truncated" instead of walking on
MAX_HASH_BYTES = 1 << 30  # a content hash reads at most this much, else says it did not
CHUNK = 1 << 20


def _walk(top: str, max_entries: int) -> tuple[list[tuple[str, os.stat_result]], float, bool]:
    """(regular files as (path relative to top, stat), newest mtime, truncated), sorted by
    path; links are not followed."""
    files: list[tuple[str, os.stat_result]] = []
    newest = os.stat(top).st_mtime
    pending, seen = [""], 0
    while pending:
        rel = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(top, rel) if rel else top))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return sorted(files, key=lambda f: f[0]), newest, True
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            newest = max(newest, st.st_mtime)
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                pending.append(name)
            elif entry.is_file(follow_symlinks=False):
                files.append((name, st))
    return sorted(files, key=lambda f: f[0]), newest, False


def content_hash(
    top: str, files: list[tuple[str, os.stat_result]], max_bytes: int = MAX_HASH_BYTES
) -> tuple[str | None, str | None]:
    """(sha256 over each file's relative path, size and bytes in path order, None), or (None,
    why not) when the files hold more than ``max_bytes`` or one cannot be read."""
    total = sum(st.st_size for _, st in files)
    if total > max_bytes:
        return None, f"not hashed: {total} bytes is more than the {max_bytes} a hash reads"
    digest = hashlib.sha256()
    for rel, st in files:
        digest.update(f"{rel}\0{st.st_size}\0".encode())
        path = os.path.join(top, rel) if rel else top
        try:
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK):
                    digest.update(chunk)
        except OSError as e:
            return None, f"not hashed: cannot read {rel or os.path.basename(top)}: {e.strerror}"
    return "sha256:" + digest.hexdigest(), None


def fingerprint(
    path: str,
    *,
    with_hash: bool = False,
    max_entries: int = MAX_ENTRIES,
    max_hash_bytes: int = MAX_HASH_BYTES,
) -> dict[str, Any]:
    """``{files, bytes, newest_mtime, truncated}`` (+ ``content_hash``, and ``hash_note`` when
    none was made) of a file or directory; raises ``OSError`` when ``path`` cannot be read."""
    top = os.stat(path)
    if os.path.isfile(path):
        files, newest, truncated = [("", top)], top.st_mtime, False
    else:
        files, newest, truncated = _walk(path, max_entries)
    record: dict[str, Any] = {
        "files": len(files),
        "bytes": sum(st.st_size for _, st in files),
        "newest_mtime": datetime.fromtimestamp(newest, UTC).isoformat(timespec="seconds"),
        "truncated": truncated,
    }
    if with_hash:
        if truncated:
            digest, note = None, f"not hashed: more than {max_entries} entries"
        else:
            digest, note = content_hash(path, files, max_hash_bytes)
        record["content_hash"] = digest
        if note:
            record["hash_note"] = note
    return record
