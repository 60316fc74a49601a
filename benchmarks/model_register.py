"""Registering a 2 GB checkpoint as a model version: kept by hard link against copied.

A job directory holds a 2 GB ``outputs/model.pt`` (a sparse file: reading its holes costs no
disk, writing a copy of it writes every byte). Each case registers it with the registry's own
path (``Registry.register``: lineage and metrics read, files kept in a staging folder, synced,
renamed, the version's entry created): once as the output of an ended job, which the registry
hard-links, and side by side, the peer, as the output of a job still running, which it copies
(a file a running job may still rewrite in place is never shared). Reported: wall time per
registration, the new bytes on disk, and the ratio copy / link. Target: linking costs no copy.

    python benchmarks/model_register.py [size_gb] [repeats]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import print_table
from trainhub.jobs.directory import JobDir
from trainhub.jobs.records import FileRecords
from trainhub.registry.entries import Entry
from trainhub.registry.refs import Source
from trainhub.registry.service import Registry
from trainhub.registry.snapshot import JobFacts

GB = 1 << 30


def disk_bytes(path: Path) -> int:
    return sum(os.stat(p).st_blocks * 512 for p in path.rglob("*") if p.is_file())


def run(size_gb: float = 2.0, repeats: int = 5) -> list[dict]:
    scratch = Path(os.environ.get("TRAINHUB_BENCH_DIR", tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix="trainhub-model-bench-", dir=scratch) as tmp:
        jobs = Path(tmp) / "jobs"
        jobdir = JobDir(jobs / "train-1").create()
        outputs = jobdir.root / "outputs"
        outputs.mkdir(exist_ok=True)
        with open(outputs / "model.pt", "wb") as f:
            f.truncate(int(size_gb * GB))
        home = jobs / ".models"
        registry = Registry(FileRecords(home, Entry, team_readable=True), home)
        source = Source("train-1", path="model.pt")
        results = {}
        for case, state in (
            ("hard link (ended job)", "succeeded"),
            ("peer: copy (running job)", "running"),
        ):
            job = JobFacts("train-1", "train", "bench", 0, str(jobdir.root), state=state)
            times, written = [], []
            for _ in range(repeats):
                before = disk_bytes(home) if home.exists() else 0
                started = time.perf_counter()
                version = registry.register("bench", source, job, user="bench")
                times.append(time.perf_counter() - started)
                kept = registry.files(version)
                linked = os.stat(kept).st_ino == os.stat(outputs / "model.pt").st_ino
                written.append(0 if linked else disk_bytes(home) - before)
                if not linked:  # disk is precious: a copy goes once measured
                    os.chmod(kept, 0o644)
                    kept.unlink()
            results[case] = (times, written, version.files.linked)
    link = statistics.median(results["hard link (ended job)"][0])
    rows = []
    for case, (times, written, links) in results.items():
        median = statistics.median(times)
        rows.append(
            {
                "case": case,
                "size": f"{size_gb:g} GB",
                "registrations": len(times),
                "p50 s": f"{median:.4f}",
                "max s": f"{max(times):.4f}",
                "new bytes on disk": f"{statistics.median(written) / GB:.2f} GB",
                "files linked": links,
                "this / link": f"{median / link:.0f}x",
            }
        )
    return rows


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    print_table(
        "model_register", run(args[0] if args else 2.0, int(args[1]) if len(args) > 1 else 5)
    )
