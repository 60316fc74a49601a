"""Elastic jobs on one machine: (a) an elastic job against the same job fixed at MAX workers
under churn, (b) what one membership change costs.

(a) One scripted trace of arrivals and preemptions, played twice in one run on a machine of
3 CPU slots (real local backend, real torchrun agents, gloo on CPU), once with the job under
test elastic (``--workers 1:3``) and once fixed at MAX (``--workers 3``):

- t=0: a filler job holding 1 slot for FILLER_S seconds, and the job under test;
- t=URGENT_AT: a high-priority job holding 1 slot for URGENT_S seconds.

The job trains STEPS steps of a fixed total amount of work (each step's work is divided
between the ranks: a step takes STEP_S x 3 / world seconds) with a checkpoint after each;
after a membership change it resumes from the latest. Completion time: from the job's submit
to its end; slot utilization: slot-seconds held by every job over the slots x the time from
the first submit to the last end. Target: the fixed job's completion time / the elastic one's
>= 1.2.

(b) From the elastic run: for each membership change, the seconds between the last step
before it and the first step after it, less one step at the new size: seconds lost.

    python benchmarks/elastic.py [SCALE]

SCALE (default 2) multiplies the trace's times and the job's steps: how long the job is
against what one membership change costs decides how much sooner the elastic job ends.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.report import print_table  # noqa: E402
from tests.trainhub_cli import run_cli  # noqa: E402

SLOTS = 3
STEPS = 300  # x scale
STEP_S = 0.3  # a step at 3 workers
FILLER_S = 60.0  # x scale, as the two below
URGENT_AT = 40.0
URGENT_S = 60.0
TARGET = 1.2

TRAIN = textwrap.dedent("""
    import json, os, pathlib, time
    import torch, torch.distributed as dist
    import trainhub.checkpoint as ckpt

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    w = torch.zeros(4)
    start = ckpt.resume_step()
    if start:
        w = ckpt.load()["w"]
    log = pathlib.Path(os.environ["TRAINHUB_JOB_DIR"]) / "steps.jsonl"
    for step in range(start, int(os.environ["STEPS"])):
        time.sleep(float(os.environ["STEP_S"]) * 3 / world)  # this rank's share of the work
        grad = torch.ones(4)
        dist.all_reduce(grad)
        w = w - 0.01 * grad
        ckpt.save({"w": w}, step)
        if rank == 0:
            with open(log, "a") as f:
                f.write(json.dumps({"t": time.time(), "step": step, "world": world}) + "\\n")
""")
HOLD = "import os, time\ntime.sleep(float(os.environ['HOLD_SECONDS']))\n"


class Machine:
    """The trainhub CLI on a home of its own with SLOTS CPU slots."""

    def __init__(self, root: Path):
        self.home, self.workspace = root / "home", root / "ws"
        self.workspace.mkdir(parents=True)
        (self.workspace / "train.py").write_text(TRAIN)
        (self.workspace / "hold.py").write_text(HOLD)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_")}
        self.env.update(
            TRAINHUB_HOME=str(self.home),
            TRAINHUB_WORKSPACE=str(self.workspace),
            TRAINHUB_GPUS="0",
            TRAINHUB_LOCAL_SLOTS=str(SLOTS),
            OMP_NUM_THREADS="1",
            PYTHONPATH=str(ROOT),
        )

    def cli(self, *args: str) -> str:
        done = run_cli(*args, cwd=self.workspace, env=self.env, timeout=900)
        if done.returncode:
            raise RuntimeError(f"trainhub {' '.join(args)}: {done.stderr}")
        return done.stdout

    def submit(self, *args: str) -> str:
        return self.cli("submit", *args).strip().splitlines()[-1]

    def events(self, job_id: str) -> list[dict]:
        path = self.home / "jobs" / job_id / "events.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def play(root: Path, workers: str, scale: float) -> dict:
    """The trace, its times and the job's steps times ``scale``, with the job under test
    asking for ``workers``."""
    m = Machine(root)
    t0 = time.time()
    m.submit("hold.py", "--env", f"HOLD_SECONDS={FILLER_S * scale}", "--name", "filler")
    job = m.submit(
        "train.py",
        "--workers",
        workers,
        "--name",
        "under-test",
        "--env",
        f"STEPS={int(STEPS * scale)}",
        "--env",
        f"STEP_S={STEP_S}",
    )
    time.sleep(max(0.0, t0 + URGENT_AT * scale - time.time()))
    urgent = m.submit(
        "hold.py",
        "--priority",
        "high",
        "--env",
        f"HOLD_SECONDS={URGENT_S * scale}",
        "--name",
        "urgent",
    )
    ended = json.loads(m.cli("wait", job, urgent, "--timeout", "900", "--json"))
    if any(j["state"] != "succeeded" for j in ended):
        raise RuntimeError(f"{workers}: {[(j['id'], j['state']) for j in ended]}")
    jobs = [p.name for p in (m.home / "jobs").iterdir()]
    held, last = 0.0, t0
    for j in jobs:
        events = m.events(j)
        last = max(last, events[-1]["time"])
        held += slot_seconds(events)
    end = m.events(job)[-1]["time"]
    steps = [json.loads(line) for line in (m.home / "jobs" / job / "steps.jsonl").open()]
    return {
        "completion_s": end - t0,
        "utilization": held / (SLOTS * (last - t0)),
        "changes": change_costs(steps),
        "resizes": [e["reason"] for e in m.events(job) if e["type"] == "resize"],
    }


def slot_seconds(events: list[dict]) -> float:
    """Slots x seconds a CPU job held: its world size from each running or resize event on,
    until its next state change."""
    total, since, size = 0.0, None, 0
    for e in events:
        if e["type"] == "resize" and since is not None:
            total += (e["time"] - since) * size
            since, size = e["time"], e["world_size"]
        elif e["type"] == "state" and e["state"] == "running":
            since, size = e["time"], e.get("world_size", 1)
        elif e["type"] == "state" and since is not None:
            total += (e["time"] - since) * size
            since = None
    return total


def change_costs(steps: list[dict]) -> list[float]:
    """Seconds lost at each change of world size: the gap between the steps around it, less
    one step's time at the new size."""
    costs = []
    for before, after in itertools.pairwise(steps):
        if after["world"] != before["world"]:
            costs.append(after["t"] - before["t"] - STEP_S * 3 / after["world"])
    return costs


def run(scale: float = 2.0) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-elastic-") as tmp:
        elastic = play(Path(tmp) / "elastic", "1:3", scale)
        fixed = play(Path(tmp) / "fixed", "3", scale)
    costs = elastic["changes"]
    work = STEPS * scale * STEP_S
    return [
        {
            "benchmark": f"(a) completion under churn, {work:.0f} s of work at 3 workers: "
            "elastic 1:3 vs fixed 3",
            "trainhub": f"elastic {elastic['completion_s']:.1f} s",
            "peer": f"fixed {fixed['completion_s']:.1f} s",
            "ratio": f"{fixed['completion_s'] / elastic['completion_s']:.2f}x sooner",
            "target": f">= {TARGET}",
        },
        {
            "benchmark": "(a') slot utilization over the trace",
            "trainhub": f"elastic {elastic['utilization']:.0%}",
            "peer": f"fixed {fixed['utilization']:.0%}",
            "ratio": f"{elastic['utilization'] / fixed['utilization']:.2f}",
            "target": "-",
        },
        {
            "benchmark": "(b) seconds lost per membership change (restart to first step)",
            "trainhub": f"median {statistics.median(costs):.1f} s" if costs else "none",
            "peer": f"a step at 3 workers {STEP_S:.1f} s",
            "ratio": f"{len(costs)} changes: {', '.join(f'{c:.1f}' for c in costs)}",
            "target": "-",
        },
    ]


if __name__ == "__main__":
    print_table("elastic", run(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0))
