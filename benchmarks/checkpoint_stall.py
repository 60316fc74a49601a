"""Training stall per checkpoint: trainhub async save vs a synchronous torch.save.

Side by side in one run, on the same ~200 MB state (a dict of float32 tensors, on the GPU
when one is present) written into the same directory:

- ``trainhub async``: the time ``trainhub.checkpoint.save(..., async_=True)`` blocks the
  training loop (the copy to CPU memory); writing, fsync and rename go on in the background.
  The background write is awaited outside the timed region, before the next repetition.
- ``torch.save``: a plain synchronous ``torch.save`` to a file.
- ``torch.save + fsync``: the same, made durable, as trainhub's background write is.
- ``DCP async_save``: ``torch.distributed.checkpoint.async_save`` with its ``DefaultStager``
  (the ecosystem's asynchronous save: its own directory format), the time it blocks; its
  write is awaited outside the timed region as trainhub's is. trainhub stages with the same
  ``DefaultStager`` (trainhub.checkpoint.staging), on as many intra-op threads as there are
  idle cores at that moment, where this peer keeps torch's default however busy the cores
  are: what that choice is worth on a busy machine (benchmarks/RESULTS.md).

The headline ratio divides by plain ``torch.save`` (the faster, stricter baseline); the ratio
against ``torch.save + fsync`` is printed too. Target: stall <= 0.1x of torch.save.

    python benchmarks/checkpoint_stall.py [--megabytes 200] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's trainhub, whatever the environment installed

TARGET_RATIO = 0.1


def make_state(megabytes: int, device: str) -> dict[str, Any]:
    import torch

    tensor_mb = 4  # many medium tensors, like a model's parameters and optimizer moments
    count = max(1, megabytes // tensor_mb)
    numel = tensor_mb * 2**20 // 4
    gen = torch.Generator().manual_seed(0)
    return {f"layer{i}.weight": torch.randn(numel, generator=gen).to(device) for i in range(count)}


def _touch(state: dict[str, Any]) -> None:
    """A training step's worth of in-place change, so no save sees a state it saw before."""
    for t in state.values():
        t.add_(1.0)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _torch_save(state: dict[str, Any], path: Path, fsync: bool) -> None:
    import torch

    with open(path, "wb") as f:
        torch.save(state, f)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def _dcp_stager(device: str) -> Any:
    from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

    gpu = device.startswith("cuda")  # pinned memory and non-blocking copies need one
    return DefaultStager(
        StagingOptions(
            use_pinned_memory=gpu,
            use_shared_memory=False,
            use_async_staging=False,  # staged before async_save returns, as trainhub's is
            use_non_blocking_copy=gpu,
        )
    )


def _dcp_async_save(state: dict[str, Any], path: Path, stager: Any) -> Any:
    import warnings

    import torch.distributed.checkpoint as dcp

    # One process, no process group: DCP warns that it assumes so, from its writing thread too.
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")
    return dcp.async_save(state, checkpoint_id=str(path), async_stager=stager, no_dist=True)


def measure(megabytes: int = 200, repeats: int = 7, directory: str | None = None) -> dict[str, Any]:
    import torch

    import trainhub.checkpoint as ckpt

    device = "cuda" if torch.cuda.is_available() else "cpu"
    state = make_state(megabytes, device)
    size_mb = sum(t.numel() * t.element_size() for t in state.values()) / 2**20
    saved_env = {k: os.environ.get(k) for k in ("TRAINHUB_CHECKPOINT_DIR", "TRAINHUB_JOB_DIR")}
    with tempfile.TemporaryDirectory(dir=directory, prefix="trainhub-bench-") as tmp:
        root = Path(tmp)
        os.environ["TRAINHUB_CHECKPOINT_DIR"] = str(root / "checkpoints")
        os.environ.pop("TRAINHUB_JOB_DIR", None)
        plain_file, fsync_file = root / "plain.pt", root / "fsync.pt"
        times: dict[str, list[float]] = {"async": [], "plain": [], "fsync": [], "dcp": []}
        stager = _dcp_stager(device)
        first_async = 0.0
        for rep in range(repeats + 1):  # the first round warms up and is left out
            _touch(state)
            _sync(device)
            started = time.perf_counter()
            handle = ckpt.save(state, rep, async_=True, keep_last=1)
            stall = time.perf_counter() - started
            handle.wait()  # outside the timed region; keeps the disks quiet for the baselines

            _touch(state)
            _sync(device)
            started = time.perf_counter()
            _torch_save(state, plain_file, fsync=False)
            plain = time.perf_counter() - started

            _touch(state)
            _sync(device)
            started = time.perf_counter()
            _torch_save(state, fsync_file, fsync=True)
            durable = time.perf_counter() - started

            _touch(state)
            _sync(device)
            started = time.perf_counter()
            pending = _dcp_async_save(state, root / "dcp" / str(rep), stager)
            ecosystem = time.perf_counter() - started
            pending.result()

            if rep == 0:
                first_async = stall
                continue
            times["async"].append(stall)
            times["plain"].append(plain)
            times["fsync"].append(durable)
            times["dcp"].append(ecosystem)
        ckpt.release_staging_memory()
        stager.close()
    for key, value in saved_env.items():  # leave a benchmark driver's environment as it was
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {
        "device": device,
        "state_mb": round(size_mb, 1),
        "repeats": repeats,
        "first_async_s": first_async,
        **{f"{k}_median_s": v for k, v in medians.items()},
        **{f"{k}_all_s": v for k, v in times.items()},
    }


def run(
    megabytes: int = 200, repeats: int = 7, directory: str | None = None
) -> list[dict[str, Any]]:
    """Rows for a benchmark driver: one per variant, with its ratio to plain torch.save."""
    m = measure(megabytes, repeats, directory)
    base = m["plain_median_s"]
    variants = [
        ("torch.save (sync)", m["plain_median_s"]),
        ("torch.save + fsync (sync)", m["fsync_median_s"]),
        ("DCP async_save", m["dcp_median_s"]),
        ("trainhub async save", m["async_median_s"]),
    ]
    return [
        {
            "benchmark": "checkpoint_stall",
            "variant": name,
            "device": m["device"],
            "state_mb": m["state_mb"],
            "repeats": m["repeats"],
            "median_stall_s": round(seconds, 4),
            "ratio_vs_torch_save": round(seconds / base, 3),
            "ratio_vs_torch_save_fsync": round(seconds / m["fsync_median_s"], 3),
            "target_ratio": TARGET_RATIO if name == "trainhub async save" else None,
            "first_async_stall_s": round(m["first_async_s"], 4)
            if name == "trainhub async save"
            else None,
        }
        for name, seconds in variants
    ]


def format_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'variant':<28}{'median stall':>14}{'vs torch.save':>15}{'vs +fsync':>11}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['variant']:<28}{r['median_stall_s'] * 1000:>11.1f} ms"
            f"{r['ratio_vs_torch_save']:>14.3f}x{r['ratio_vs_torch_save_fsync']:>10.3f}x"
        )
    ours = rows[-1]
    verdict = "meets" if ours["ratio_vs_torch_save"] <= TARGET_RATIO else "misses"
    lines.append("")
    lines.append(
        f"state {ours['state_mb']} MB on {ours['device']}, median of {ours['repeats']} saves; "
        f"first async save (allocates staging memory) {ours['first_async_stall_s'] * 1000:.1f} ms"
    )
    lines.append(
        f"trainhub async stall = {ours['ratio_vs_torch_save']:.3f}x plain torch.save "
        f"(target <= {TARGET_RATIO}x): {verdict} the target"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dir", default=None, help="where to write (default: the temp dir)")
    args = parser.parse_args()
    print(format_table(run(args.megabytes, args.repeats, args.dir)))


if __name__ == "__main__":
    main()
