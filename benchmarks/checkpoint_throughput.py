"""Training throughput with async checkpoints vs the same run without checkpoints.

Side by side in one run: a small MLP trained on CPU (Adam, random batches), the same number
of steps each time, either without checkpoints or with one ``trainhub.checkpoint.save(...,
async_=True, keep_last=2)`` every 100 steps (model and optimizer state). The runs alternate
so drift on a shared machine hits both alike; the median of the repeats is compared.
Training uses one intra-op thread, so OpenMP barriers on shared cores do not swamp the
difference being measured.
Target: throughput with checkpoints >= 0.98x the run without.

    python benchmarks/checkpoint_throughput.py [--steps 1000] [--every 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 0.98
WIDTH = 1024
BATCH = 64


def _model() -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, WIDTH),
        torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH),
        torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, 10),
    )
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def train(steps: int, every: int | None) -> tuple[float, int]:
    """Seconds for ``steps`` training steps, and how many checkpoints were saved."""
    import torch

    import trainhub.checkpoint as ckpt

    model, opt = _model()
    gen = torch.Generator().manual_seed(1)
    batches = [
        (torch.randn(BATCH, 256, generator=gen), torch.randint(0, 10, (BATCH,), generator=gen))
        for _ in range(16)
    ]
    saved = 0
    started = time.perf_counter()
    for step in range(steps):
        x, y = batches[step % len(batches)]
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if every and step % every == every - 1:
            state = {"model": model, "optim": opt}
            ckpt.save(state, step, metrics={"loss": loss.item()}, async_=True, keep_last=2)
            saved += 1
    ckpt.wait_all()  # the last write counts: a run is over once its checkpoints are
    return time.perf_counter() - started, saved


def measure(steps: int = 1000, every: int = 100, repeats: int = 5) -> dict[str, Any]:
    import torch

    import trainhub.checkpoint as ckpt

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    saved_env = {k: os.environ.get(k) for k in ("TRAINHUB_CHECKPOINT_DIR", "TRAINHUB_JOB_DIR")}
    times: dict[str, list[float]] = {"plain": [], "checkpoints": []}
    saves = 0
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        os.environ["TRAINHUB_CHECKPOINT_DIR"] = str(Path(tmp) / "checkpoints")
        os.environ.pop("TRAINHUB_JOB_DIR", None)
        try:
            train(min(steps, 2 * every), every)  # warm-up: allocator, staging buffers
            for rep in range(repeats):
                order = ("plain", "checkpoints") if rep % 2 == 0 else ("checkpoints", "plain")
                for variant in order:  # alternating, so neither always runs first
                    seconds, n = train(steps, every if variant == "checkpoints" else None)
                    times[variant].append(seconds)
                    saves = max(saves, n)
        finally:
            ckpt.release_staging_memory()
            torch.set_num_threads(threads)
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    model, _ = _model()
    state_mb = sum(p.numel() * p.element_size() for p in model.parameters()) * 3 / 2**20
    return {
        "steps": steps,
        "every": every,
        "repeats": repeats,
        "saves": saves,
        "state_mb": round(state_mb, 1),  # parameters + Adam's two moments
        **{f"{k}_median_s": statistics.median(v) for k, v in times.items()},
        **{f"{k}_all_s": v for k, v in times.items()},
    }


def run(steps: int = 1000, every: int = 100, repeats: int = 5) -> list[dict[str, Any]]:
    """Rows for a benchmark driver: one per variant, throughput and ratio to no checkpoints."""
    m = measure(steps, every, repeats)
    base = m["plain_median_s"]
    variants = [
        ("no checkpoints", m["plain_median_s"], 0),
        (f"async checkpoint every {every} steps", m["checkpoints_median_s"], m["saves"]),
    ]
    return [
        {
            "benchmark": "checkpoint_throughput",
            "variant": name,
            "steps": m["steps"],
            "checkpoints": saves,
            "state_mb": m["state_mb"],
            "repeats": m["repeats"],
            "median_s": round(seconds, 3),
            "steps_per_s": round(m["steps"] / seconds, 1),
            "throughput_ratio": round(base / seconds, 3),
            "target_ratio": TARGET_RATIO if saves else None,
        }
        for name, seconds, saves in variants
    ]


def format_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'variant':<36}{'steps/s':>10}{'vs none':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['variant']:<36}{r['steps_per_s']:>10.1f}{r['throughput_ratio']:>9.3f}x")
    ours = rows[-1]
    verdict = "meets" if ours["throughput_ratio"] >= TARGET_RATIO else "misses"
    lines += [
        "",
        f"{ours['steps']} steps, {ours['checkpoints']} checkpoints of {ours['state_mb']} MB, "
        f"median of {ours['repeats']} runs",
        f"throughput with checkpoints = {ours['throughput_ratio']:.3f}x without "
        f"(target >= {TARGET_RATIO}x): {verdict} the target",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(format_table(run(args.steps, args.every, args.repeats)))


if __name__ == "__main__":
    main()
