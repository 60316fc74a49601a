"""Pipelines: (a) the checks of a 200-step pipeline before it runs, (b) a step's overhead over
the same notebook submitted alone.

(a) A 200-step pipeline file (each step takes an output of the one before and depends on the
one before that, over 10 notebooks) is read from its YAML text and checked as a run checks it,
on the real local backend with a real workspace: the schema, the wiring (cycles, outputs,
parameters) and each step as the job it will be (`checks.check`: notebook, datasets, image,
fit). Side by side, the pure part alone (schema and wiring). Wall time, and the process's CPU
time (what other work on the machine does not add). Target: <= 200 ms.

(b) One tiny notebook, in alternating rounds: submitted alone (`JobService.submit`, then the
reconciles a server makes until it ended), and as the only step of a pipeline run with the
cache off (`Pipelines.start`, then the same reconciles until the run ended). Wall time from
the call to the end; ratio pipeline / alone. Target: <= 1.1. Runs real torchrun jobs.

    python benchmarks/pipelines.py [a] [b]
"""

from __future__ import annotations

import getpass
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import print_table
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.service import JobService
from trainhub.pipelines.checks import check
from trainhub.pipelines.graph import order, wiring_errors
from trainhub.pipelines.spec import read_pipeline

TARGET_CHECK_MS = 200.0
TARGET_OVERHEAD = 1.1
NOTEBOOKS = 10


def pipeline_text(steps: int) -> str:
    lines = ["parameters: {lr: 0.1}", "steps:"]
    for i in range(steps):
        lines += [f"  s{i}:", f"    notebook: nb{i % NOTEBOOKS}.ipynb", "    outputs: [out]"]
        if i:
            lines.append(f"    inputs: {{prev: s{i - 1}.out}}")
        if i > 1:
            lines.append(f"    depends_on: [s{i - 2}]")
        if i % 3 == 0:
            lines.append("    pipeline_parameters: [lr]")
    return "\n".join(lines) + "\n"


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("lr = 0.01")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("print('step', lr)")]
    nbformat.write(nb, path)


def service_in(root: Path) -> JobService:
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    for i in range(NOTEBOOKS):
        write_notebook(workspace / f"nb{i}.ipynb")
    backend = LocalBackend(root / "home")
    return JobService(backend, workspace_root=workspace, jobs_root=backend.jobs_root)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_checks(steps: int, repeats: int) -> list[dict]:
    text = pipeline_text(steps)
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        os.environ.setdefault("TRAINHUB_GPUS", "0")
        service = service_in(Path(tmp))
        user = getpass.getuser()
        pure, full = Timings(), Timings()
        for _ in range(repeats):
            with pure:
                pipeline = read_pipeline(text, "bench.pipeline.yaml")
                assert not wiring_errors(pipeline) and len(order(pipeline)) == steps
            with full:
                check(service, read_pipeline(text, "bench.pipeline.yaml"), {}, user=user)
    return [
        {
            "benchmark": f"(a) check a {steps}-step pipeline, as a run does",
            **full.row(),
            "rounds": repeats,
            "target": f"<= {TARGET_CHECK_MS:.0f} ms",
        },
        {
            "benchmark": "(a') its schema and wiring alone (pure)",
            **pure.row(),
            "rounds": repeats,
            "target": "-",
        },
    ]


class Timings:
    """Wall and CPU milliseconds of each ``with`` block: on a machine other work shares, the
    wall time holds the waits for a core, the process's CPU time does not."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> None:
        self._started = (time.perf_counter(), time.process_time())

    def __exit__(self, *exc: object) -> None:
        wall, cpu = self._started
        self.wall.append((time.perf_counter() - wall) * 1000)
        self.cpu.append((time.process_time() - cpu) * 1000)

    def row(self) -> dict[str, str]:
        return {
            "p50": f"{statistics.median(self.wall):.1f} ms",
            "p95": f"{percentile(self.wall, 0.95):.1f} ms",
            "cpu p50": f"{statistics.median(self.cpu):.1f} ms",
            "cpu p95": f"{percentile(self.cpu, 0.95):.1f} ms",
        }


def _until(service: JobService, ended: object, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ended():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the job did not end")
        time.sleep(0.2)
        service.reconcile()  # what the server does every few seconds


def bench_overhead(rounds: int) -> list[dict]:
    user = getpass.getuser()
    alone, stepped = [], []
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        service = service_in(Path(tmp))
        pipeline = {"name": "bench", "steps": {"only": {"notebook": "nb0.ipynb"}}}
        spec = {"name": "bench", "source": {"path": "nb0.ipynb"}}
        for _ in range(rounds):
            t0 = time.perf_counter()
            job = service.submit(spec, user=user)
            _until(service, lambda job=job: service.record(job.id).state.terminal)
            alone.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            run = service.pipelines.start(user=user, pipeline=pipeline, cache=False)
            _until(
                service,
                lambda run=run: service.pipelines.describe(run.id, user=user).state != "running",
            )
            stepped.append(time.perf_counter() - t0)
    ratios = [s / a for s, a in zip(stepped, alone, strict=True)]
    return [
        {
            "benchmark": "(b) one notebook: as a pipeline's only step vs submitted alone",
            "trainhub": f"{statistics.median(stepped):.2f} s",
            "peer": f"alone {statistics.median(alone):.2f} s",
            "ratio": f"{statistics.median(ratios):.3f}",
            "rounds": rounds,
            "target": f"<= {TARGET_OVERHEAD}",
        }
    ]


def run(steps: int = 200, repeats: int = 20, rounds: int = 5, parts: str = "ab") -> list[dict]:
    rows = []
    if "a" in parts:
        rows += bench_checks(steps, repeats)
    if "b" in parts:
        rows += bench_overhead(rounds)
    return rows


if __name__ == "__main__":
    print_table("pipelines", run(parts="".join(sys.argv[1:]) or "ab"))
