"""What keeping the executed notebook costs a job: the same notebook run by the rank runner with
capture (rank 0 writes notebook.ipynb, the default) and without (``notebook_ranks: []``).

Side by side in one run: one bundle of 1,000 small outputs (100 cells, each printing five
lines and displaying five small objects) and 20 matplotlib figures, run as torchrun starts a
rank (``python -m trainhub.rank.runner``), the two variants alternating so drift on a shared
machine hits both alike; medians compared. Three figures each: the process's wall time, the
time in cells (the runner's per-cell ``seconds`` events, which leave out interpreter start),
and the CPU time of the rank's processes.
Target: with capture <= 1.05x without.

    python benchmarks/notebook_capture.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.05
OUTPUT_CELLS = 100  # x 10 outputs
FIGURES = 20


def notebook_cells() -> list[str]:
    cells = ["import matplotlib.pyplot as plt\nfrom IPython.display import display"]
    for i in range(OUTPUT_CELLS):
        cells.append(
            f"for k in range(5):\n    print('cell {i} line', k)\n"
            f"    display({{'cell': {i}, 'item': k}})"
        )
        if i % (OUTPUT_CELLS // FIGURES) == 0:
            cells.append(f"plt.plot(range({i + 10}))\nplt.title('figure {i}')\nplt.show()")
    return cells


def make_bundle(where: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from trainhub.bundle.compile import compile_bundle
    from trainhub.jobs.spec import JobSpec

    workspace = where / "workspace"
    workspace.mkdir(parents=True)
    cells = [new_code_cell(source) for source in notebook_cells()]
    nbformat.write(new_notebook(cells=cells), workspace / "outputs.ipynb")
    spec = JobSpec.model_validate(
        {"name": "bench", "source": {"kind": "notebook", "path": "outputs.ipynb"}}
    )
    bundle = where / "bundle"
    compile_bundle(spec, workspace, bundle)
    return bundle


def run_once(bundle: Path, where: Path, capture: bool) -> dict[str, float]:
    job = where / f"job-{'on' if capture else 'off'}-{time.monotonic_ns()}"
    shutil.copytree(bundle, job / "bundle")
    (job / "spec.json").write_text(json.dumps({"notebook_ranks": [0] if capture else []}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAINHUB_", "TORCHELASTIC_"))}
    env.update(RANK="0", WORLD_SIZE="1", TRAINHUB_JOB_DIR=str(job), TRAINHUB_ATTEMPT="0")
    cpu_before = _children_cpu()
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trainhub.rank.runner", str(job / "bundle")],
        env=env,
        cwd=job,
        check=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    cells = sum(e["seconds"] for e in events if e["type"] == "cell" and e["phase"] == "end")
    notebook = job / "notebook.ipynb"
    assert notebook.exists() == capture
    if capture:
        outputs = [o for c in json.loads(notebook.read_text())["cells"] for o in c["outputs"]]
        assert sum("image/png" in o.get("data", {}) for o in outputs) == FIGURES
    size = notebook.stat().st_size if capture else 0
    shutil.rmtree(job)
    return {"wall": wall, "cells": cells, "cpu": cpu, "bytes": size}


def _children_cpu() -> float:
    """CPU seconds of the ended child processes (the rank and its log copier included): less
    swayed than wall time by what else runs on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(repeats: int = 7) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-notebook-") as tmp:
        where = Path(tmp)
        bundle = make_bundle(where)
        results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        run_once(bundle, where, True)  # warm the file cache (matplotlib, IPython)
        for i in range(repeats):
            for capture in (True, False) if i % 2 else (False, True):
                results[capture].append(run_once(bundle, where, capture))
    rows = []
    medians = {}
    for capture in (False, True):
        wall = statistics.median(r["wall"] for r in results[capture])
        cells = statistics.median(r["cells"] for r in results[capture])
        cpu = statistics.median(r["cpu"] for r in results[capture])
        medians[capture] = (wall, cells, cpu)
        rows.append(
            {
                "variant": "with capture (notebook.ipynb)" if capture else "without capture",
                "outputs": f"{OUTPUT_CELLS * 10} + {FIGURES} figures",
                "repeats": repeats,
                "median_wall_s": round(wall, 3),
                "median_cells_s": round(cells, 3),
                "median_cpu_s": round(cpu, 3),
                "notebook_kib": round(results[capture][0]["bytes"] / 1024, 1),
                "wall_ratio": round(wall / medians[False][0], 3),
                "cells_ratio": round(cells / medians[False][1], 3),
                "cpu_ratio": round(cpu / medians[False][2], 3),
                "target_ratio": TARGET_RATIO if capture else None,
            }
        )
    return rows


def main() -> int:
    from benchmarks.report import print_table

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print_table("notebook_capture", run(args.repeats))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
