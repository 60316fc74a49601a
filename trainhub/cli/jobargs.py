"""The arguments of a job's spec that ``trainhub submit`` and ``trainhub sweep`` (for each of
its trials) take alike: where it runs (workers, processes, GPUs, CPU, memory, image, team,
queue, priority, maximum run time), its environment, datasets and tags; added to a parser
once, and read back once into :func:`trainhub.api.build_spec`'s keywords."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

PLACEMENT = (
    "workers",
    "processes_per_worker",
    "gpus_per_worker",
    "gpu_share",
    "cpu",
    "memory",
    "image",
    "team",
    "queue",
    "priority",
    "max_runtime",
)


def add_job_arguments(parser: argparse.ArgumentParser, *, runtime_help: str) -> None:
    parser.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N|MIN:MAX",
        help="workers (torchrun agents); MIN:MAX makes the job elastic: it starts once MIN "
        "fit and grows toward MAX as room frees up",
    )
    parser.add_argument("--processes-per-worker", "--nproc", type=int)
    parser.add_argument("--gpus-per-worker", "--gpus", type=int, default=0)
    parser.add_argument(
        "--gpu-share",
        metavar="1/N",
        help="a share of one GPU, on the team's pool that shares its GPUs N ways (one worker)",
    )
    parser.add_argument("--cpu", type=float)
    parser.add_argument("--memory")
    parser.add_argument(
        "--image",
        help="a catalog image (name or reference), or a pinned image under a prefix the team's "
        "image policy allows; anything else is refused",
    )
    parser.add_argument("--team")
    parser.add_argument("--queue")
    parser.add_argument("--priority", choices=["low", "normal", "high"], default="normal")
    parser.add_argument("--max-runtime", help=runtime_help)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME",
        help="a dataset by name (`trainhub datasets` lists them), or NAME=PATH for a path "
        "in the workspace or below TRAINHUB_DATASET_ROOTS",
    )
    parser.add_argument("--tag", action="append", default=[])


def worker_count(text: str) -> int | str:
    """``--workers 2`` or ``--workers 1:3`` (the spec reads and checks MIN:MAX)."""
    return text.strip() if ":" in text else int(text)


def job_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """What :func:`add_job_arguments` read, as build_spec's keywords."""
    return {
        **{name: getattr(args, name) for name in PLACEMENT},
        "env": pairs(args.env, "--env"),
        "datasets": datasets(args.dataset),
        "tags": args.tag,
    }


def pairs(items: list[str], what: str) -> dict[str, Any]:
    """``NAME=VALUE`` arguments; a ``--param``'s value is read as JSON where it is JSON."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"trainhub: {what} {item!r}: use NAME=VALUE")
        try:
            out[key] = json.loads(value) if what == "--param" else value
        except json.JSONDecodeError:
            out[key] = value  # a bare word is a string parameter
    return out


def datasets(items: list[str]) -> list[Any]:
    """``--dataset imagenet`` asks for a dataset by name; ``--dataset NAME=PATH`` names a path
    of one's own (from here: a job needs it absolute)."""
    out: list[Any] = []
    for item in items:
        name, sep, path = item.partition("=")
        out.append({"name": name, "path": os.path.abspath(path)} if sep else item)
    return out
