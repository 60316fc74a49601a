"""A job's outputs as the server and the CLI read them: listed and opened through
:mod:`trainhub.jobs.confined`, so a link the job left there (to ``/etc/passwd``, to another
user's job) is never followed, a FIFO never waited on, and a path never leaves ``outputs/``."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from pydantic import BaseModel, Field

from trainhub.jobs import confined
from trainhub.jobs.spec import field_error
from trainhub.outputs import FOLDER

# Entries listed at most; past it the listing says it was cut.
MAX_ENTRIES = 10_000


class OutputEntry(BaseModel):
    path: str = Field(description="Relative to the job's outputs directory, '/' separated")
    kind: Literal["file", "dir"]
    bytes: int = Field(ge=0, description="A file's size; a folder's: the files below it")
    mtime: float = Field(description="Last modification, seconds since the epoch")


class OutputList(BaseModel):
    entries: list[OutputEntry] = Field(description="Parents before children, by name")
    files: int = Field(ge=0)
    bytes: int = Field(ge=0, description="Total of the files listed")
    truncated: bool = Field(
        False, description=f"More than {MAX_ENTRIES} entries: the rest left out"
    )


def list_outputs(job_dir: Path, *, limit: int = MAX_ENTRIES) -> OutputList:
    """Every real folder and regular file below the job's ``outputs/`` (links left out)."""
    walked = list(confined.walk(job_dir, FOLDER, limit=limit + 1))
    truncated = len(walked) > limit
    entries: list[OutputEntry] = []
    folders: dict[str, OutputEntry] = {}
    for name, st in walked[:limit]:
        is_dir = stat.S_ISDIR(st.st_mode)
        entry = OutputEntry(
            path=name,
            kind="dir" if is_dir else "file",
            bytes=0 if is_dir else st.st_size,
            mtime=st.st_mtime,
        )
        entries.append(entry)
        if is_dir:
            folders[name] = entry
        else:  # a folder's size is what lies below it
            for parent in PurePosixPath(name).parents[:-1]:
                folders[str(parent)].bytes += st.st_size
    files = [e for e in entries if e.kind == "file"]
    return OutputList(
        entries=entries,
        files=len(files),
        bytes=sum(e.bytes for e in files),
        truncated=truncated,
    )


def output_relative(path: str) -> str:
    """``outputs/<path>`` for a path from a request: relative, no '..', not empty."""
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or any(p in ("..", "") for p in parts) or not parts:
        raise field_error("path", f"{path!r} is not a path inside the job's outputs")
    return f"{FOLDER}/{PurePosixPath(*parts)}"


def open_output(job_dir: Path, path: str) -> tuple[BinaryIO, str, int]:
    """(file, its name, its size) of one output file, for a download: opened without following
    links, so what is checked is what is sent (:class:`confined.NotAJobFile` otherwise)."""
    f = confined.opened_file(job_dir, output_relative(path))
    return f, PurePosixPath(path).name, os.fstat(f.fileno()).st_size
