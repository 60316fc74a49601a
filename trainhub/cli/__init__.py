"""``trainhub``: submit notebooks and scripts as jobs and follow them from a terminal."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from trainhub.cli import admin, artifacts, control, jobs, logs, submit
from trainhub.comments.cli import add_parsers as add_comment_parsers
from trainhub.controller.serve import add_parser as add_controller_parser
from trainhub.errors import TrainhubError
from trainhub.experiments.cli import add_parsers as add_sweep_parsers
from trainhub.jobs.spec import SpecError
from trainhub.pipelines.cli import add_parsers as add_pipeline_parsers
from trainhub.registry.cli import add_parsers as add_model_parsers
from trainhub.schedules.cli import add_parsers as add_schedule_parsers


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainhub", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)
    for group in (submit, jobs, control, logs, artifacts, admin):
        group.add_parsers(sub)
    add_sweep_parsers(sub)
    add_schedule_parsers(sub)
    add_pipeline_parsers(sub)
    add_model_parsers(sub)
    add_comment_parsers(sub)
    add_controller_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a reader that left is answered below
        return code
    except BrokenPipeError:
        # The reader stopped reading (`| head`, `| grep -m1`): end quietly, as a tool that
        # SIGPIPE ends does, with nothing more written (Python's own advice on SIGPIPE).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    try:
        from trainhub.api import service

        # admin and controller work on a teams file, not on jobs; the scheduler reconciles
        if args.verb not in ("admin", "controller", "scheduler"):
            service().reconcile()
        return int(args.func(args) or 0)
    except SpecError as e:
        for err in e.errors:
            print(f"trainhub: {err.field}: {err.message}", file=sys.stderr)
        return 2
    except (TrainhubError, ValueError) as e:
        print(f"trainhub: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
