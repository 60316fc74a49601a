"""A dataset's fingerprint: size, file count, newest modification, and a content hash that is
streamed, bounded and the same for the same tree."""

from __future__ import annotations

import hashlib
import os

from trainhub.datasets.fingerprint import fingerprint


def tree(root):
    (root / "sub").mkdir(parents=True)
    (root / "a.bin").write_bytes(b"abc")
    (root / "sub" / "b.bin").write_bytes(b"defgh")
    os.utime(root / "a.bin", (1_600_000_000, 1_600_000_000))
    os.utime(root / "sub" / "b.bin", (1_700_000_000, 1_700_000_000))
    os.utime(root / "sub", (1_600_000_000, 1_600_000_000))
    os.utime(root, (1_600_000_000, 1_600_000_000))
    return root


def test_metadata_and_content_hash(tmp_path):
    root = tree(tmp_path / "d")
    fp = fingerprint(str(root), with_hash=True)
    expected = hashlib.sha256(b"a.bin\x003\x00abc" + b"sub/b.bin\x005\x00defgh").hexdigest()
    assert fp == {
        "files": 2,
        "bytes": 8,
        "newest_mtime": "2023-11-14T22:13:20+00:00",
        "truncated": False,
        "content_hash": "sha256:" + expected,
    }
    assert "content_hash" not in fingerprint(str(root))
    # The same tree elsewhere hashes the same; one changed byte does not.
    same = tree(tmp_path / "e")
    assert fingerprint(str(same), with_hash=True)["content_hash"] == fp["content_hash"]
    (same / "sub" / "b.bin").write_bytes(b"defgX")
    assert fingerprint(str(same), with_hash=True)["content_hash"] != fp["content_hash"]


def test_the_hash_is_bounded_and_says_why_it_was_not_made(tmp_path):
    root = tree(tmp_path / "d")
    fp = fingerprint(str(root), with_hash=True, max_hash_bytes=7)
    assert fp["content_hash"] is None
    assert fp["hash_note"] == "not hashed: 8 bytes is more than the 7 a hash reads"
    many = tmp_path / "many"
    many.mkdir()
    for i in range(6):
        (many / f"f{i}").write_text("x")
    fp = fingerprint(str(many), with_hash=True, max_entries=5)
    assert fp["truncated"] is True and fp["content_hash"] is None
    assert fp["hash_note"] == "not hashed: more than 5 entries"


def test_one_file_and_links_not_followed(tmp_path):
    f = tmp_path / "one.parquet"
    f.write_bytes(b"12345")
    fp = fingerprint(str(f), with_hash=True)
    assert (fp["files"], fp["bytes"]) == (1, 5)
    assert fp["content_hash"] == "sha256:" + hashlib.sha256(b"\x005\x0012345").hexdigest()
    d = tmp_path / "d"
    d.mkdir()
    (d / "link").symlink_to(f)
    assert fingerprint(str(d))["files"] == 0
