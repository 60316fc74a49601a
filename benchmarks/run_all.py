"""Every benchmark, side by side with its peer, into one report (benchmarks/RESULTS.md).

    python benchmarks/run_all.py [--quick] [name ...]

Figures are measured, never asserted: the tests check behaviour, this checks speed.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.report import print_table  # noqa: E402

# name -> (module, keyword arguments for a full run, for a quick run)
SUITES = {
    "engine": ("benchmarks.engine", {}, {}),
    "checkpoint_stall": ("benchmarks.checkpoint_stall", {}, {"repeats": 3}),
    "checkpoint_throughput": ("benchmarks.checkpoint_throughput", {}, {"repeats": 3}),
    "sampler_overhead": ("benchmarks.sampler_overhead", {}, {"seconds": 8}),
    "data_wait_overhead": ("benchmarks.data_wait_overhead", {}, {"rounds": 3}),
    "log_latency": ("benchmarks.log_latency", {}, {}),
    "job_streams": ("benchmarks.job_streams", {}, {"seconds": 10}),
    "list_endpoint": ("benchmarks.list_endpoint", {}, {"requests": 60}),
    "list_search": ("benchmarks.list_search", {}, {"requests": 60}),
    "spawn": ("benchmarks.spawn", {}, {"spawns": 3}),
    "kueue": ("benchmarks.kueue", {}, {"jobs": 100}),
    "kueue_real_node": ("benchmarks.kueue", {"node": "real"}, {"node": "real", "repeats": 3}),
    "k8s_list": ("benchmarks.k8s_list", {}, {"requests": 10}),
    "controller": ("benchmarks.controller", {}, {"namespaces": 10, "jobs": 500}),
    "usage_report": ("benchmarks.usage_report", {}, {"repeats": 10}),
    "notebook_capture": ("benchmarks.notebook_capture", {}, {"repeats": 3}),
    "schedule_firing": ("benchmarks.schedule_firing", {}, {"schedules": 3, "minutes": 2}),
    "pipelines": ("benchmarks.pipelines", {}, {"repeats": 5, "rounds": 2}),
    "model_register": ("benchmarks.model_register", {}, {"repeats": 2}),
    "elastic": ("benchmarks.elastic", {}, {}),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    args = parser.parse_args()
    unknown = set(args.names) - set(SUITES)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    sections = [
        f"# Benchmarks\n\n{time.strftime('%Y-%m-%d %H:%M')}, "
        f"{platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}\n"
    ]
    failed = 0
    for name in args.names or list(SUITES):
        module_name, full, quick = SUITES[name]
        try:
            rows = importlib.import_module(module_name).run(**(quick if args.quick else full))
            sections.append(print_table(name, rows))
        except Exception:
            failed += 1
            sections.append(f"## {name}\n\nfailed:\n\n```\n{traceback.format_exc()}```")
            print(sections[-1], file=sys.stderr)
    Path(args.out).write_text("\n\n".join(sections) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
