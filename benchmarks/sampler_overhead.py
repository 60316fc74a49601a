"""CPU cost of the metrics sampler at 1 Hz: 4 GPUs (fake NVML) and 2 rank process trees.

Three child processes run side by side for the same time: one idles (the baseline), one runs
the sampler with no GPUs (system metrics only), one runs it with 4 GPUs. Each reports the
sampler thread's own CPU time (``time.thread_time`` inside the thread) and its whole
process's CPU time over the window, so the cost shows both ways. Target: <= 1 % of one core.

The fake NVML re-reads its state file on every call, so its GPU readings are no cheaper
than a driver's; a real driver's cost per call differs and is not measured here.

    python benchmarks/sampler_overhead.py [seconds]
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the fake driver under tests/fixtures

from tests.fixtures.fake_nvml import build_library, make_fake_nvml  # noqa: E402

TARGET_PERCENT = 1.0
GPUS = 4

# One measured process: idles, or runs the sampler, for the given seconds.
CHILD = """
import json, sys, time
from trainhub.jobs.directory import JobDir
from trainhub.metrics.sampler import MetricsSampler

job, gpus, seconds = JobDir(sys.argv[1]).create(), json.loads(sys.argv[2]), float(sys.argv[3])
ranks = json.loads(sys.argv[4])
sampler = None if gpus is None else MetricsSampler(\
job, gpus, lambda: {int(r): p for r, p in ranks.items()})
wall0, cpu0 = time.monotonic(), time.process_time()
if sampler is not None:
    sampler.start()
time.sleep(seconds)
if sampler is not None:
    sampler.stop()
wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
gpu_file = job.metrics / "gpu.jsonl"
print(json.dumps({
    "gpu_rows": len(gpu_file.read_bytes().splitlines()) if gpu_file.exists() else 0,
    "wall_s": wall,
    "process_cpu_s": cpu,
    "thread_cpu_s": sampler.cpu_seconds if sampler else 0.0,
    "ticks": sampler.ticks if sampler else 0,
}))
"""

# A rank: sleeps, with one child process, as a rank with a data loader worker would.
RANK = """
import subprocess, sys, time
worker = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(3600)"], stdout=subprocess.DEVNULL
)
print(worker.pid, flush=True)
time.sleep(3600)
"""


def _start_ranks(count: int) -> list[subprocess.Popen[str]]:
    ranks = [
        subprocess.Popen([sys.executable, "-c", RANK], stdout=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    for rank in ranks:
        rank.stdout.readline()  # its worker is running
    return ranks


def _kill_tree(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
    process.kill()
    process.wait()


def run(seconds: float = 20.0) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        root = Path(tmp)
        fake = make_fake_nvml(build_library(root / "lib"), root, gpu_count=GPUS)
        for index in range(GPUS):
            fake.set(index, utilization_gpu=40 + index, memory_used=(index + 1) << 30)
        ranks = _start_ranks(2)
        try:
            rank_pids = json.dumps({str(rank): proc.pid for rank, proc in enumerate(ranks)})
            cases = {
                "idle process (baseline)": None,
                "sampler, system only": [],
                f"sampler, {GPUS} GPUs": list(range(GPUS)),
            }
            children = {
                case: subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        CHILD,
                        str(root / f"job-{i}"),
                        json.dumps(gpus),
                        str(seconds),
                        rank_pids,
                    ],
                    env=fake.env,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for i, (case, gpus) in enumerate(cases.items())
            }
            measured = {
                case: json.loads(child.communicate()[0]) for case, child in children.items()
            }
        finally:
            for rank in ranks:
                _kill_tree(rank)

    baseline = measured["idle process (baseline)"]
    idle_percent = 100 * baseline["process_cpu_s"] / baseline["wall_s"]
    results = []
    for case, m in measured.items():
        thread_percent = 100 * m["thread_cpu_s"] / m["wall_s"]
        process_percent = 100 * m["process_cpu_s"] / m["wall_s"]
        results.append(
            {
                "case": case,
                "wall_s": round(m["wall_s"], 2),
                "ticks": m["ticks"],
                "gpu_rows": m["gpu_rows"],
                "thread_cpu_ms_per_tick": round(1000 * m["thread_cpu_s"] / m["ticks"], 3)
                if m["ticks"]
                else None,
                "thread_core_percent": round(thread_percent, 3),
                "process_core_percent_over_idle": round(process_percent - idle_percent, 3),
                "within_target": thread_percent <= TARGET_PERCENT,
            }
        )
    return results


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    results = run(seconds)
    columns = list(results[0])
    print(
        f"Metrics sampler CPU cost at 1 Hz over {seconds:g} s, 2 ranks; "
        f"target <= {TARGET_PERCENT} % of one core"
    )
    print(" | ".join(columns))
    for row in results:
        print(" | ".join(str(row[c]) for c in columns))
    gpu_row = results[-1]
    print(
        f"{gpu_row['case']}: {gpu_row['thread_core_percent']} % of one core, "
        f"{gpu_row['thread_core_percent'] / TARGET_PERCENT:.2f}x the target"
    )


if __name__ == "__main__":
    main()
