"""What only a real NVIDIA GPU can show, on the local backend (the embedded default): run it on a
machine with one GPU (the device machine) and keep its table in RESULTS.md with the date.

(a) the example notebook with --gpus 1 succeeds and its log says it trained on cuda:0;
(b) a CPU-only job's ranks see no GPU (torch.cuda.device_count() == 0);
(c) two one-GPU jobs for one GPU: the second waits with its sentence, then runs after the first;
(d) a bf16 training loop's steps/s under trainhub against the same code under bare torchrun,
    alternating, as a ratio (goal >= 0.99);
(e) the NVML samples trainhub recorded during (d): utilization and memory;
(f) checkpoint_stall.py at 1 GB on the GPU.

    python benchmarks/gpu_check.py [--rounds 3] [--steps 400]

Exits 1 when a check fails, after printing every figure it has.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.report import print_table  # noqa: E402
from tests.trainhub_cli import run_cli  # noqa: E402

# The same loop under trainhub and under bare torchrun: bf16 autocast on a wide MLP, timed by
# the script itself from its first to its last step (start-up is not the comparison).
BF16_LOOP = """\
import json, os, sys, time
import torch
steps = int(os.environ.get("STEPS", "400"))
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 4096)
).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(256, 4096, device="cuda")
for step in range(steps + 20):
    if step == 20:  # after warm-up
        torch.cuda.synchronize()
        start = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print(json.dumps({"steps_per_s": steps / (time.perf_counter() - start)}), flush=True)
"""


class Machine:
    """trainhub's CLI on a home of its own, in a workspace holding the example and the loop."""

    def __init__(self, tmp: Path):
        self.workspace = tmp / "workspace"
        self.workspace.mkdir()
        shutil.copy(ROOT / "examples" / "train_ddp.ipynb", self.workspace)
        (self.workspace / "bf16_loop.py").write_text(BF16_LOOP)
        (self.workspace / "sees_gpus.py").write_text(
            "import torch; print('cuda devices:', torch.cuda.device_count())\n"
        )
        self.env = {**os.environ, "TRAINHUB_HOME": str(tmp / "home"), "TRAINHUB_BACKEND": "local"}

    def cli(self, *args: str, timeout: float = 1800) -> str:
        proc = run_cli(*args, cwd=self.workspace, env=self.env, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"trainhub {' '.join(args)}: {proc.stderr[-2000:]}")
        return proc.stdout

    def submit(self, *args: str) -> str:
        return json.loads(self.cli("submit", *args, "--json"))["id"]

    def wait(self, job: str, state: str = "succeeded", timeout: int = 1800) -> None:
        self.cli("wait", job, "--for", state, "--timeout", str(timeout), timeout=timeout + 60)

    def describe(self, job: str) -> dict[str, Any]:
        return json.loads(self.cli("describe", job, "--json"))

    def log(self, job: str, rank: int = 0) -> str:
        return self.cli("logs", job, "--rank", str(rank))

    def gpu_samples(self, job: str) -> list[dict[str, Any]]:
        path = Path(self.describe(job)["job_dir"]) / "metrics" / "gpu.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bare_torchrun(workspace: Path, steps: int) -> float:
    proc = subprocess.run(
        ["torchrun", "--standalone", "--nproc-per-node=1", "bf16_loop.py"],
        cwd=workspace,
        env={**os.environ, "STEPS": str(steps)},
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])["steps_per_s"]


def under_trainhub(m: Machine, steps: int) -> tuple[float, str]:
    job = m.submit("bf16_loop.py", "--gpus", "1", "--nproc", "1", "--env", f"STEPS={steps}")
    m.wait(job)
    line = [ln for ln in m.log(job).splitlines() if "steps_per_s" in ln][-1]
    return json.loads(line[line.index("{") :])["steps_per_s"], job


def run(rounds: int = 3, steps: int = 400) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def check(name: str, ok: bool, figure: str) -> None:
        rows.append({"check": name, "result": "ok" if ok else "FAILED", "figure": figure})

    with tempfile.TemporaryDirectory(prefix="trainhub-gpu-check-") as tmp_name:
        m = Machine(Path(tmp_name))
        # (a)
        job = m.submit("train_ddp.ipynb", "--gpus", "1", "--nproc", "1", "-p", "epochs=1")
        m.wait(job)
        check("(a) example on --gpus 1", "cuda:0" in m.log(job), "log says cuda:0")
        # (b)
        job = m.submit("sees_gpus.py", "--nproc", "1")
        m.wait(job)
        seen = [ln for ln in m.log(job).splitlines() if "cuda devices:" in ln]
        check(
            "(b) CPU-only job sees no GPU",
            seen[-1].endswith(": 0") if seen else False,
            seen[-1] if seen else "no output",
        )
        # (c)
        first = m.submit("bf16_loop.py", "--gpus", "1", "--nproc", "1", "--env", "STEPS=3000")
        m.wait(first, "running", 600)
        second = m.submit("bf16_loop.py", "--gpus", "1", "--nproc", "1", "--env", "STEPS=50")
        time.sleep(2)
        waiting = m.describe(second)
        m.wait(first)
        m.wait(second)
        first_end = m.describe(first)["finished_at"]
        second_start = m.describe(second)["started_at"]
        check(
            "(c) a second 1-GPU job waits, then runs",
            waiting["state"] == "queued"
            and bool(waiting.get("wait_reason"))
            and second_start >= first_end - 1,
            f"while queued: {waiting.get('wait_reason')!r}",
        )
        # (d), alternating
        ours, bare, last_job = [], [], ""
        for _ in range(rounds):
            speed, last_job = under_trainhub(m, steps)
            ours.append(speed)
            bare.append(bare_torchrun(m.workspace, steps))
        ratio = statistics.median(ours) / statistics.median(bare)
        check(
            "(d) bf16 steps/s, trainhub / bare torchrun",
            ratio >= 0.99,
            f"{statistics.median(ours):.1f} / {statistics.median(bare):.1f} = {ratio:.3f} "
            f"({rounds} rounds each, alternating)",
        )
        # (e)
        samples = [s for s in m.gpu_samples(last_job) if s.get("utilization") is not None]
        util = [s["utilization"] for s in samples]
        memory = [s.get("memory_used") or 0 for s in samples]
        check(
            "(e) NVML samples during (d)",
            bool(samples) and max(util) > 0,
            f"{len(samples)} samples, utilization max {max(util, default=0)} %, "
            f"memory max {max(memory, default=0) / 2**30:.1f} GiB",
        )
        # (f)
        stall = subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "checkpoint_stall.py"),
                "--megabytes",
                "1024",
                "--repeats",
                "5",
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        check("(f) checkpoint_stall at 1 GB", stall.returncode == 0, stall.stdout[-1500:])
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=400)
    args = p.parse_args()
    rows = run(args.rounds, args.steps)
    print_table("gpu_check (one NVIDIA GPU, local backend)", rows)
    return 0 if all(r["result"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
