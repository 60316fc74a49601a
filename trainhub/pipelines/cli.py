"""The ``trainhub pipeline`` verbs.

trainhub pipeline run train.pipeline.yaml -p epochs=5 [--no-cache]
trainhub pipeline run --from <run> -p epochs=5    # run it again as yours (a teammate's shared)
trainhub pipeline check train.pipeline.yaml
trainhub pipeline list
trainhub pipeline describe <run>
trainhub pipeline retry <run>
trainhub pipeline cancel <run>
trainhub pipeline share <run> [--private]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from trainhub.cli.jobargs import pairs
from trainhub.jobs.sharing import Sharing
from trainhub.pipelines.models import DescribeRun, RunSummary


def _user() -> str:
    import getpass

    return getpass.getuser()


def _pipelines() -> Any:
    from trainhub.api import service

    return service().pipelines


def _print(model: Any, args: argparse.Namespace, text: str) -> None:
    print(json.dumps(model.model_dump(mode="json"), indent=2) if args.json else text)


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def described(run: DescribeRun) -> str:
    """A run as a person reads it: its state, then each step with its job or why not."""
    head = f"Run:        {run.id} ({run.name}{', ' + run.file if run.file else ''})\n"
    head += f"State:      {run.state.value}"
    head += f" ({run.retries} retr{'y' if run.retries == 1 else 'ies'})" if run.retries else ""
    head += "" if run.cache else "  [no cache]"
    head += f"\nAgain of:   {run.started_from}" if run.started_from else ""
    rows = [("STEP", "STATUS", "JOB", "NOTE")]
    for v in run.step_views:
        rows.append((v.step, v.status.value, v.job_id or v.reused_from or "-", v.reason or ""))
    return head + "\n\n" + _table(rows)


def summaries(runs: list[RunSummary]) -> str:
    if not runs:
        return "No pipeline runs."
    rows = [("RUN", "PIPELINE", "STATE", "STEPS", "REUSED", "FAILED")]
    for r in runs:
        done = f"{r.succeeded}/{r.steps}"
        rows.append(
            (
                r.id,
                r.name,
                r.state.value,
                done,
                ",".join(r.reused) or "-",
                ",".join(r.failed) or "-",
            )
        )
    return _table(rows)


def cmd_run(args: argparse.Namespace) -> int:
    parameters = pairs(args.param, "--param")
    if (args.file is None) == (args.from_run is None):
        raise SystemExit("trainhub pipeline run: name a pipeline file, or --from an earlier run")
    if args.from_run is not None:
        run = _pipelines().start_again(
            args.from_run, user=_user(), parameters=parameters, cache=not args.no_cache
        )
    else:
        run = _pipelines().start(
            user=_user(), file=args.file, parameters=parameters, cache=not args.no_cache
        )
    _print(run, args, described(run))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    pipeline = _pipelines().validate(
        user=_user(), file=args.file, parameters=pairs(args.param, "--param")
    )
    print(f"{args.file}: pipeline {pipeline.name}, {len(pipeline.steps)} steps: no mistakes")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    listed = _pipelines().list(user=None if args.all_users else _user())
    _print(listed, args, summaries(listed.runs))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    run = _pipelines().describe(args.run, user=_user())
    _print(run, args, described(run))
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    run = _pipelines().retry(args.run, user=_user())
    _print(run, args, described(run))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    run = _pipelines().cancel(args.run, user=_user(), reason=args.reason)
    _print(run, args, described(run))
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    shared = Sharing.PRIVATE if args.private else Sharing.TEAM
    run = _pipelines().share(args.run, shared, user=_user())
    _print(run, args, f"Run {run.id} is {run.shared.value}.")
    return 0


def add_parsers(sub: Any) -> None:
    """``trainhub pipeline …``."""
    p = sub.add_parser(
        "pipeline",
        help="run notebooks as the steps of a pipeline (*.pipeline.yaml)",
        description="Run a pipeline file's steps as jobs, each once its upstream steps are "
        "done, reusing earlier results of unchanged inputs.",
    )
    verbs = p.add_subparsers(dest="pipeline_verb", required=True)

    def verb(name: str, func: Any, help: str) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help)
        v.add_argument("--json", action="store_true")
        v.set_defaults(func=func)
        return v

    for name, func, help in (
        ("run", cmd_run, "start a run of a pipeline file"),
        ("check", cmd_check, "check a pipeline file, starting nothing"),
    ):
        v = verb(name, func, help)
        v.add_argument(
            "file",
            nargs="?" if name == "run" else None,
            help="the *.pipeline.yaml, relative to the workspace",
        )
        v.add_argument(
            "-p",
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a pipeline parameter (JSON value) over its default",
        )
        if name == "run":
            v.add_argument(
                "--no-cache", action="store_true", help="run every step; reuse no earlier result"
            )
            v.add_argument(
                "--from",
                dest="from_run",
                metavar="RUN",
                help="run an earlier run again as yours (its code and parameters; a "
                "teammate's shared run too), -p over its parameters",
            )
    ls = verb("list", cmd_list, "list pipeline runs")
    ls.add_argument("--all-users", action="store_true")
    for name, func, help in (
        ("describe", cmd_describe, "a run's steps, their jobs and states"),
        ("retry", cmd_retry, "run a failed or cancelled run again from its failed steps"),
        ("cancel", cmd_cancel, "cancel a run and every running step"),
        ("share", cmd_share, "share a run and its steps' jobs with your team to read"),
    ):
        v = verb(name, func, help)
        v.add_argument("run", help="the run's id")
        if name == "cancel":
            v.add_argument("--reason")
        if name == "share":
            v.add_argument("--private", action="store_true", help="make it private again")
