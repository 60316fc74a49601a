"""``trainhub submit``: a notebook or script as a job, from its flags."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from trainhub.cli.logs import follow
from trainhub.cli.printing import print_json


def _kv(items: list[str], what: str) -> dict[str, Any]:
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


def _datasets(items: list[str]) -> list[Any]:
    """``--dataset imagenet`` asks for a dataset by name; ``--dataset NAME=PATH`` names a path
    of one's own (from here: a job needs it absolute)."""
    out: list[Any] = []
    for item in items:
        name, sep, path = item.partition("=")
        out.append({"name": name, "path": os.path.abspath(path)} if sep else item)
    return out


def _notebook_ranks(value: str) -> list[int] | str:
    """``--notebook-ranks 0,3``, ``all`` or ``none``."""
    if value in ("all", "none"):
        return "all" if value == "all" else []
    try:
        return [int(r) for r in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give rank numbers (0,3), all or none") from None


def cmd_submit(args: argparse.Namespace) -> int:
    from trainhub.api import build_spec, service

    retry = {
        k: v
        for k, v in {
            "infrastructure": args.retry_infrastructure,
            "preempted": args.retry_preempted,
            "environment": args.retry_environment,
            "backoff_seconds": args.retry_backoff,
        }.items()
        if v is not None
    }
    spec = build_spec(
        args.source,
        name=args.name,
        cells=args.cells,
        cell_tags=args.cell_tags,
        args=args.args,
        parameters=_kv(args.param, "--param"),
        allow_new_parameters=args.allow_new_parameter,
        workers=args.workers,
        processes_per_worker=args.processes_per_worker,
        gpus_per_worker=args.gpus_per_worker,
        cpu=args.cpu,
        memory=args.memory,
        image=args.image,
        team=args.team,
        queue=args.queue,
        priority=args.priority,
        max_runtime=args.max_runtime,
        retry=retry or None,
        env=_kv(args.env, "--env"),
        datasets=_datasets(args.dataset),
        tags=args.tag,
        notebook_ranks=args.notebook_ranks,
        notify=args.notify,
    )
    job = service().submit(spec)
    if args.json:
        print_json(job)
    else:
        print(job.id)
        if job.wait_reason:
            print(f"{job.state.value}: {job.wait_reason}", file=sys.stderr)
    if args.follow:
        return follow(job.id, rank=0)
    return 0


def add_parsers(sub: Any) -> None:
    s = sub.add_parser("submit", help="submit a notebook or script as a job")
    s.add_argument("source", help="notebook (.ipynb) or script (.py), relative to the workspace")
    s.add_argument("args", nargs="*", help="arguments for a script")
    s.add_argument("--name")
    s.add_argument(
        "--cells", type=lambda v: [int(x) for x in v.split(",")], help="cell indices, e.g. 0,2,5"
    )
    s.add_argument("--cell-tags", type=lambda v: v.split(","), help="run the cells with these tags")
    s.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="parameter injected after the 'parameters' cell (JSON value)",
    )
    s.add_argument(
        "--allow-new-parameter",
        action="store_true",
        help="set -p names the notebook's 'parameters' cell does not assign (refused otherwise)",
    )
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--processes-per-worker", "--nproc", type=int)
    s.add_argument("--gpus-per-worker", "--gpus", type=int, default=0)
    s.add_argument("--cpu", type=float)
    s.add_argument("--memory")
    s.add_argument(
        "--image",
        help="a catalog image (name or reference), or a pinned image under a prefix the team's "
        "image policy allows; anything else is refused",
    )
    s.add_argument("--team")
    s.add_argument("--queue")
    s.add_argument("--priority", choices=["low", "normal", "high"], default="normal")
    s.add_argument("--max-runtime", help="e.g. 90m, 2h, 1d")
    s.add_argument("--retry-infrastructure", type=int)
    s.add_argument("--retry-preempted", type=int)
    s.add_argument("--retry-environment", type=int)
    s.add_argument("--retry-backoff", type=float, help="seconds before the first retry")
    s.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    s.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME",
        help="a dataset by name (`trainhub datasets` lists them), or NAME=PATH for a path "
        "in the workspace or below TRAINHUB_DATASET_ROOTS",
    )
    s.add_argument("--tag", action="append", default=[])
    s.add_argument(
        "--notify",
        type=lambda v: [w.strip() for w in v.split(",") if w.strip()],
        help="announce the job through your and your team's alert channels on: failure, "
        "preemption, end (comma-separated)",
    )
    s.add_argument(
        "--notebook-ranks",
        type=_notebook_ranks,
        help="ranks that keep their executed notebook: 0,3, all or none (default: 0)",
    )
    s.add_argument("-f", "--follow", action="store_true", help="then follow rank 0's log")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_submit)
