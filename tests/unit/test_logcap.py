"""A rank's log within its limits: what LogCap lets through of what a rank prints."""

from __future__ import annotations

from trainhub.jobs import limits
from trainhub.jobs.environment import job_environment
from trainhub.rank.logcap import LogCap, file_marker, line_marker


def feed_all(cap: LogCap, chunks: list[bytes]) -> bytes:
    return b"".join(cap.feed(c) for c in chunks)


def test_short_lines_pass_unchanged_in_any_chunking():
    text = b"".join(b"line %d\n" % i for i in range(500)) + b"no newline yet"
    for size in (1, 7, 64, 4096):
        cap = LogCap(line_bytes=100, file_bytes=1 << 20)
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert feed_all(cap, chunks) == text


def test_a_long_line_is_cut_with_a_marker_and_the_next_line_survives():
    cap = LogCap(line_bytes=50, file_bytes=1 << 20)
    long_line = b"x" * 120
    out = feed_all(cap, [b"before\n", long_line[:70], long_line[70:] + b"\nafter\n"])
    assert out == b"before\n" + b"x" * 50 + line_marker(50) + b"after\n"
    assert b"line cut at 50 bytes" in line_marker(50)


def test_carriage_returns_end_lines_so_progress_bars_are_not_cut():
    cap = LogCap(line_bytes=30, file_bytes=1 << 20)
    bar = b"".join(b"\r%3d%% |####      |" % p for p in range(100)) + b"\n"
    assert cap.feed(bar) == bar


def test_a_cut_never_splits_a_character():
    cap = LogCap(line_bytes=10, file_bytes=1 << 20)
    out = cap.feed("é".encode() * 20 + b"\n")
    kept = out[: out.index(b" [trainhub")]
    assert kept == "é".encode() * 5 and kept.decode()


def test_the_file_stops_at_its_cap_with_one_marker():
    cap_bytes = 10_000
    cap = LogCap(line_bytes=1000, file_bytes=cap_bytes)
    out = feed_all(cap, [b"step %06d loss 0.25\n" % i for i in range(5000)])
    assert len(out) <= cap_bytes
    assert out.endswith(file_marker(cap_bytes)) and out.count(b"[trainhub: log truncated") == 1
    assert b"log truncated at 9.76562 KiB" in out
    assert out[: -len(file_marker(cap_bytes))].endswith(b"\n")
    assert cap.full and cap.feed(b"more\n") == b""


def test_what_the_log_already_holds_counts():
    cap = LogCap(line_bytes=1000, file_bytes=1000, written=990)
    assert cap.full and cap.feed(b"a new attempt\n") == b""
    cap = LogCap(line_bytes=1000, file_bytes=1000, written=800)
    out = cap.feed(b"y" * 500)
    assert 800 + len(out) <= 1000 and out.endswith(file_marker(1000))


def test_the_defaults_are_documented_settings(monkeypatch):
    bounds = limits.current({})
    assert bounds.log_line_bytes == 64 * 1024 and bounds.log_file_bytes == 512 * 1024 * 1024
    assert file_marker(bounds.log_file_bytes) == (
        b"[trainhub: log truncated at 512 MiB; further output dropped]\n"
    )
    monkeypatch.delenv("TRAINHUB_LIMIT_LOG_FILE_BYTES", raising=False)
    monkeypatch.setenv("TRAINHUB_LIMIT_LOG_LINE_BYTES", "4096")
    assert limits.rank_settings() == {"TRAINHUB_LIMIT_LOG_LINE_BYTES": "4096"}


def test_an_admins_caps_travel_with_every_job(monkeypatch):
    def env() -> dict[str, str]:
        return job_environment(
            {}, job_id="j", job_dir="/j", attempt=0, resume_from=None, dataset_paths={}
        )

    monkeypatch.delenv("TRAINHUB_LIMIT_LOG_LINE_BYTES", raising=False)
    monkeypatch.delenv("TRAINHUB_LIMIT_LOG_FILE_BYTES", raising=False)
    assert not any(name.startswith("TRAINHUB_LIMIT_") for name in env())
    monkeypatch.setenv("TRAINHUB_LIMIT_LOG_FILE_BYTES", "1048576")
    monkeypatch.setenv("TRAINHUB_LIMIT_TAGS", "3")  # a submit-side limit stays behind
    assert env()["TRAINHUB_LIMIT_LOG_FILE_BYTES"] == "1048576"
    assert "TRAINHUB_LIMIT_TAGS" not in env()


MARKER = b"[trainhub] cell 2 started at 2025-01-01T00:00:00.000Z\n"
FINISHED = b"[trainhub] finished\n"


def test_trainhubs_lines_start_a_line_after_output_that_did_not_end_one():
    """Python's own writes end their line before a marker (logmarks.own_line); what C code or a
    child wrote straight to the descriptor only the copier sees, read in one chunk or several
    (a marker is one write of the rank's: it arrives whole)."""
    writes = [b"raw write", MARKER, b"out\n", MARKER, b"progress\r", MARKER, b"last", FINISHED]
    want = (
        b"raw write\n"
        + MARKER
        + b"out\n"
        + MARKER
        + b"progress\r\n"
        + MARKER
        + b"last\n"
        + FINISHED
    )
    for per_read in (1, 2, 3, len(writes)):
        cap = LogCap(line_bytes=1000, file_bytes=1 << 20)
        reads = [b"".join(writes[i : i + per_read]) for i in range(0, len(writes), per_read)]
        assert feed_all(cap, reads) == want, per_read


def test_a_marker_glued_to_an_overlong_line_survives_its_cut():
    cap = LogCap(line_bytes=60, file_bytes=1 << 20)
    out = cap.feed(b"y" * 70 + MARKER)
    assert out == b"y" * 60 + line_marker(60) + MARKER
