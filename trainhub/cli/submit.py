"""``trainhub submit``: a notebook or script as a job, from its flags."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trainhub.cli.jobargs import add_job_arguments, job_keywords, pairs
from trainhub.cli.logs import follow
from trainhub.cli.printing import print_json


def _notebook_ranks(value: str) -> list[int] | str:
    """``--notebook-ranks 0,3``, ``all`` or ``none``."""
    if value in ("all", "none"):
        return "all" if value == "all" else []
    try:
        return [int(r) for r in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give rank numbers (0,3), all or none") from None


def spec_of(args: argparse.Namespace) -> dict[str, Any]:
    """The job spec that :func:`add_spec_arguments`' flags describe (validated by the service)."""
    from trainhub.api import build_spec

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
    return build_spec(
        args.source,
        name=args.name,
        cells=args.cells,
        cell_tags=args.cell_tags,
        args=args.args,
        parameters=pairs(args.param, "--param"),
        allow_new_parameters=args.allow_new_parameter,
        retry=retry or None,
        notebook_ranks=args.notebook_ranks,
        notify=args.notify,
        **job_keywords(args),
    )


def cmd_submit(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job = service().submit(spec_of(args))
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
    add_spec_arguments(s)
    s.add_argument("-f", "--follow", action="store_true", help="then follow rank 0's log")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_submit)


def add_spec_arguments(s: argparse.ArgumentParser) -> None:
    """A job spec's flags, as ``submit`` takes them (and ``schedule create``, for each run)."""
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
    add_job_arguments(s, runtime_help="e.g. 90m, 2h, 1d")
    s.add_argument("--retry-infrastructure", type=int)
    s.add_argument("--retry-preempted", type=int)
    s.add_argument("--retry-environment", type=int)
    s.add_argument("--retry-backoff", type=float, help="seconds before the first retry")
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
