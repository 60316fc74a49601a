"""The one log follower: chunks end on whole characters, offsets add up, reads stay confined."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.planted import plant
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.logs import LogFollower, job_dir_reader, read_chunk

TEXT = "é 日本 \U0001f600 ok\nnext é line\n日本\U0001f600"
DATA = TEXT.encode()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    (tmp_path / "job" / "logs").mkdir(parents=True)
    return tmp_path / "job"


def append(job: Path, data: bytes) -> None:
    with open(job / "logs" / "rank-0.log", "ab") as f:
        f.write(data)


@pytest.mark.parametrize("hold", [None, 0.0, 0.5])
@pytest.mark.parametrize("max_chunk", [1, 2, 5, 1 << 20])
def test_a_flush_at_every_byte_position_loses_and_repeats_nothing(
    job: Path, hold: float | None, max_chunk: int
) -> None:
    for cut in range(len(DATA) + 1):
        (job / "logs" / "rank-0.log").unlink(missing_ok=True)
        follower = LogFollower(job_dir_reader(job, 0), max_chunk=max_chunk, hold_partial_s=hold)
        chunks = []
        now = 0.0
        for part in (DATA[:cut], DATA[cut:]):
            append(job, part)
            for _ in range(2):  # once as written, once after the hold has passed
                while chunk := follower.read(now=now):
                    chunks.append(chunk)
                now += 1.0
        chunks += follower.drain(final=True)
        assert "".join(c.text for c in chunks) == TEXT, cut
        assert "\ufffd" not in "".join(c.text for c in chunks)
        offset = 0
        for c in chunks:
            assert c.offset == offset and c.next_offset == offset + len(c.text.encode())
            assert len(c.data) <= max(max_chunk, 4)
            offset = c.next_offset
        assert offset == len(DATA)


def test_stateless_chunks_add_up_and_keep_a_torn_character_for_later(job: Path) -> None:
    append(job, DATA[:4])  # "é " and the first byte of "日"
    chunk = read_chunk(job_dir_reader(job, 0), 0)
    assert chunk.text == "é " and chunk.next_offset == 3
    append(job, DATA[4:])
    for length in (1, 3, 7, 100):
        offset, text = 0, ""
        while (chunk := read_chunk(job_dir_reader(job, 0), offset, length)).data:
            text, offset = text + chunk.text, chunk.next_offset
        assert text == TEXT and offset == len(DATA)


def test_a_partial_line_waits_for_its_newline_a_short_while(job: Path) -> None:
    append(job, b"done\n50%")
    follower = LogFollower(job_dir_reader(job, 0), hold_partial_s=0.5)
    assert follower.read(now=0.0).text == "done\n"
    assert follower.read(now=0.1) is None
    assert follower.read(now=0.7).text == "50%"
    # None: whole lines only until the log is final, as a line printer wants.
    lines = LogFollower(job_dir_reader(job, 0), hold_partial_s=None)
    assert lines.read(now=0.0).text == "done\n" and lines.read(now=99.0) is None
    assert lines.read(final=True).text == "50%"


def test_a_torn_character_at_the_end_of_a_finished_log_is_still_sent(job: Path) -> None:
    append(job, b"bye \xe6\x97")
    follower = LogFollower(job_dir_reader(job, 0), hold_partial_s=0.0)
    assert follower.read().text == "bye " and follower.read() is None
    last = follower.read(final=True)
    assert last.text == "\ufffd" and last.next_offset == 6


@pytest.mark.parametrize("what", ["/etc/passwd", "/proc/self/environ", "fifo", "directory", "logs"])
def test_a_rank_log_that_is_not_the_jobs_own_file_is_refused(job: Path, what: str) -> None:
    other = job.parent / "other"
    if what == "logs":  # the whole logs folder a link to another job's
        (other / "logs").mkdir(parents=True)
        (other / "logs" / "rank-0.log").write_text("not yours\n")
        plant(job, "logs", "theirs", other)
    else:
        plant(job, "logs/rank-0.log", what, other)
    with pytest.raises(NotAJobFile):
        LogFollower(job_dir_reader(job, 0)).read()
