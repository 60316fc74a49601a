"""First paint of the compare view with 10 jobs x 100,000 scalar points each, in Chromium
(target: <= 1 s), side by side with the same view drawing every point (no downsampling).

Generates 10 ended jobs in a fresh trainhub home: records in the local store, a bundle
compiled from a notebook (each run with its own learning rate), a lineage collected as a
submit collects it, and 100,000 lines of ``loss`` in ``metrics/scalars.jsonl`` as
``trainhub.log`` writes them. Starts a real JupyterLab with the trainhub extensions on that
home (the UI tests' server config) and drives Debian's Chromium through Playwright
(compare_first_paint.js): from executing ``trainhub:compare`` to the frame after the view
first paints (its tables, from a first answer without scalars) and to the frame after all 10
curves are drawn. The first opening parses the scalar files (cold); the next ones find them
parsed (warm).

    python benchmarks/compare_first_paint.py [--jobs 10] [--points 100000] [--rounds 5]

Needs the built extension installed (scripts/setup-labextension.sh) and the UI tests' node
packages (labextension/ui-tests/node_modules).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
UI_TESTS = ROOT / "labextension" / "ui-tests"
DRIVER = Path(__file__).with_name("compare_first_paint.js")


def generate(home: Path, root: Path, jobs: int, points: int) -> list[str]:
    from trainhub.backends.local.backend import LocalBackend
    from trainhub.backends.local.store_rows import LocalJob
    from trainhub.bundle.compile import compile_bundle
    from trainhub.jobs.directory import JobDir, write_json_atomic
    from trainhub.jobs.lineage import collect_lineage
    from trainhub.jobs.models import JobRecord
    from trainhub.jobs.spec import parse_spec
    from trainhub.jobs.states import JobState

    cell = nbformat.v4.new_code_cell("lr = 0.1", metadata={"tags": ["parameters"]})
    train = nbformat.v4.new_code_cell("import trainhub\nfor step in range(100_000):\n    pass")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell, train]), root / "train.ipynb")
    backend = LocalBackend(home, slots=2)
    user = getpass.getuser()
    ids = []
    now = time.time() - 3600
    for j in range(jobs):
        lr = round(0.01 * (j + 1), 3)
        spec = parse_spec(
            {
                "name": f"bench-{j}",
                "source": {"path": "train.ipynb"},
                "parameters": {"lr": lr},
                "resources": {"processes_per_worker": 1},
            }
        )
        job_id = f"bench-{j}-{os.urandom(4).hex()}"
        jobdir = JobDir(backend.jobs_root / job_id).create()
        manifest = compile_bundle(spec, root, jobdir.bundle)
        write_json_atomic(jobdir.spec, {**spec.model_dump(mode="json"), "id": job_id})
        write_json_atomic(jobdir.lineage, collect_lineage(spec, root, manifest, user=user))
        start = now + j
        with open(jobdir.metrics / "scalars.jsonl", "w") as f:
            for step in range(points):
                value = 2 * math.exp(-lr * step / 1000) + 0.05 * math.sin(step / 50)
                record = {
                    "time": round(start + step * 0.01, 3),
                    "step": step,
                    "name": "loss",
                    "value": value,
                    "rank": 0,
                    "attempt": 0,
                }
                f.write(json.dumps(record, separators=(",", ":")) + "\n")
        record = JobRecord(
            id=job_id,
            name=spec.name,
            user=user,
            priority=spec.priority.rank,
            state=JobState.SUCCEEDED,
            spec=spec,
            job_dir=str(jobdir.root),
            gpus=0,
            created_at=start - 5,
            started_at=start,
            finished_at=start + points * 0.01,
        )
        with backend.store.transaction() as conn:
            backend.store.insert(conn, record, LocalJob())
        ids.append(job_id)
    return ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer in {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="trainhub-bench-compare-") as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        home.mkdir()
        root.mkdir()
        os.environ.update(TRAINHUB_HOME=str(home), TRAINHUB_GPUS="0")
        t = time.perf_counter()
        ids = generate(home, root, args.jobs, args.points)
        print(
            f"generated {args.jobs} jobs x {args.points} points in {time.perf_counter() - t:.1f} s"
        )
        port = free_port()
        env = {
            **os.environ,
            "TRAINHUB_HOME": str(home),
            "TRAINHUB_UI_ROOT": str(root),
            "TRAINHUB_BACKEND": "local",
            "TRAINHUB_GPUS": "0",
        }
        lab_log = open(Path(tmp) / "lab.log", "w")  # noqa: SIM115 - open while the server runs
        lab = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                "--config",
                str(UI_TESTS / "jupyter_server_test_config.py"),
                f"--port={port}",
                "--no-browser",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=lab_log,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for(f"{url}/lab", 180)
            driver = subprocess.run(
                ["node", str(DRIVER), url, ",".join(ids), str(args.rounds), args.chromium],
                env={**os.environ, "NODE_PATH": str(UI_TESTS / "node_modules")},
                capture_output=True,
                text=True,
                timeout=900,
            )
        finally:
            lab.terminate()
            try:
                lab.wait(timeout=30)
            except subprocess.TimeoutExpired:
                lab.kill()
                lab.wait()
            lab_log.close()
        if driver.returncode != 0:
            sys.stderr.write(driver.stdout + driver.stderr)
            sys.stderr.write((Path(tmp) / "lab.log").read_text()[-4000:])
            return 1
    result = json.loads(driver.stdout.strip().splitlines()[-1])
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    from benchmarks.report import print_table

    print_table("compare_first_paint", summarize(result, args))
    return 0


def summarize(result: dict, args: argparse.Namespace) -> list[dict]:
    down, full = result["downsampled"], result["full"]
    what = f"{args.jobs} jobs x {args.points:,} points"
    rows = []
    for key, text in (("first", "first paint (tables)"), ("curves", "curves drawn")):
        ours = [r[key] for r in down["warm"]]
        peer = [r[key] for r in full["warm"]]
        rows.append(
            {
                "case": f"{text}, {what}, warm (files parsed before)",
                "trainhub (2,000 points a curve)": f"{statistics.median(ours):.0f} ms",
                "peer: every point sent and drawn": f"{statistics.median(peer):.0f} ms",
                "ratio": f"{statistics.median(ours) / statistics.median(peer):.3f}",
                "rounds": f"{len(ours)}, {min(ours):.0f}-{max(ours):.0f} ms",
                "target": "<= 1000 ms" if key == "first" else "-",
            }
        )
    for key, text in (("first", "first paint (tables)"), ("curves", "curves drawn")):
        rows.append(
            {
                "case": f"{text}, {what}, cold (first opening after the server started)",
                "trainhub (2,000 points a curve)": f"{down['cold'][key]:.0f} ms",
                "peer: every point sent and drawn": "-",
                "ratio": "-",
                "rounds": "1",
                "target": "<= 1000 ms" if key == "first" else "-",
            }
        )
    rows.append(
        {
            "case": "answer of GET compare",
            "trainhub (2,000 points a curve)": f"{down['bytes'] / 2**20:.2f} MiB",
            "peer: every point sent and drawn": f"{full['bytes'] / 2**20:.2f} MiB",
            "ratio": f"{down['bytes'] / full['bytes']:.3f}",
            "rounds": "",
            "target": "",
        }
    )
    return rows


if __name__ == "__main__":
    sys.exit(main())
