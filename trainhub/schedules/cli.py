"""The schedule verbs of the ``trainhub`` command line, and the local scheduler's.

    trainhub schedule create train.ipynb --cron "0 2 * * *" --tz Europe/Berlin \\
        [--concurrency forbid|allow|replace] [--missed run-once|skip] [--starting-deadline 10m]
        [job options as submit takes them]
    trainhub schedule create flow.pipeline.yaml --cron ... [-p NAME=VALUE] [--no-cache]
    trainhub schedule list | describe ID | history ID | pause ID | resume ID | run-now ID
    trainhub schedule delete ID
    trainhub scheduler          the local scheduler in the foreground (started detached for you)
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from trainhub.cli.jobargs import pairs
from trainhub.cli.printing import ago, print_columns, print_json
from trainhub.cli.submit import add_spec_arguments, spec_of
from trainhub.errors import TrainhubError
from trainhub.schedules.model import is_pipeline_file
from trainhub.schedules.views import RunView, ScheduleView

_ON_ONE = ("describe", "history", "pause", "resume", "run-now", "delete")


def _job_options_given(args: argparse.Namespace) -> list[str]:
    """The job options of ``args`` set away from their defaults (a pipeline takes none)."""
    probe = argparse.ArgumentParser(add_help=False)
    add_spec_arguments(probe)
    given = []
    for action in probe._actions:
        value = getattr(args, action.dest, None)
        if action.dest not in ("source", "param") and value not in (action.default, None, []):
            given.append(action.option_strings[-1] if action.option_strings else "script args")
    return given


def _target(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The target of ``schedule create``'s arguments, and its default name."""
    if not is_pipeline_file(args.source):
        if args.no_cache:
            raise TrainhubError("--no-cache is a pipeline's option: this schedule runs a notebook.")
        job = spec_of(args)
        return {"kind": "notebook", "job": job}, job["name"]
    given = _job_options_given(args)
    if given:
        raise TrainhubError(
            f"{', '.join(given)}: a job option, and {args.source} is a pipeline: each step "
            "takes its job options from the pipeline file; a schedule of it takes -p and "
            "--no-cache."
        )
    target = {
        "kind": "pipeline",
        "file": args.source,
        "parameters": pairs(args.param, "--param"),
        "cache": not args.no_cache,
    }
    return target, args.source.rsplit("/", 1)[-1].split(".pipeline.")[0]


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON of a schedule from ``schedule create``'s arguments (validated by the service):
    a ``*.pipeline.yaml`` source makes a pipeline target, anything else a notebook job."""
    target, name = _target(args)
    request: dict[str, Any] = {
        "name": args.schedule_name or name[:32].rstrip("-"),
        "target": target,
        "cron": args.cron,
        "timezone": args.tz,
        "concurrency": args.concurrency,
        "missed": args.missed,
        "paused": args.paused,
        "notify_failure": not args.no_failure_alert,
    }
    if args.starting_deadline is not None:
        request["starting_deadline"] = args.starting_deadline
    return request


def _runs(view: ScheduleView) -> str:
    target = view.target
    if target.kind == "pipeline":
        return f"pipeline {target.file}"
    return target.job.source.path


def _when(view: ScheduleView) -> str:
    return "paused" if view.paused else (view.next_at_local or "never")


def show(view: ScheduleView) -> str:
    deadline = view.starting_deadline_seconds
    lines = [
        f"Schedule:    {view.id} ({'paused' if view.paused else 'active'})",
        f"Runs:        {_runs(view)} as {view.user}" + (f", team {view.team}" if view.team else ""),
        f"When:        {view.cron} in {view.timezone} ({view.cron_text})",
        f"Next:        {_when(view)}",
        f"Concurrency: {view.concurrency}; missed times: {view.missed}"
        + (f", starting deadline {deadline:.0f} s" if deadline else ""),
    ]
    return "\n".join(lines) + "\n\n" + history(view.runs)


def history(runs: list[RunView]) -> str:
    rows: list[tuple[str, ...]] = [("SCHEDULED", "STATE", "JOB/RUN", "DETAIL")]
    for r in runs:
        state = r.job_state or r.state.value
        started = r.job_id or r.pipeline_run or "-"
        rows.append((r.at_local or "run now", state, started, r.reason or ""))
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, _widths(rows), strict=False)) for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def _widths(rows: list[tuple[str, ...]]) -> list[int]:
    return [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]


def cmd_schedule(args: argparse.Namespace) -> int:
    from trainhub.api import service

    schedules = service().schedules
    user = getpass.getuser()
    if args.action == "create":
        view = schedules.create(request_of(args), user=user)
        if args.json:
            print_json(view)
        else:
            print(view.id)
            print(f"next run: {_when(view)}", file=sys.stderr)
        return 0
    if args.action == "list":
        listed = schedules.list(user=user)
        if args.json:
            print_json(listed)
            return 0
        rows: list[tuple[str, ...]] = [("ID", "CRON", "ZONE", "NEXT", "LAST", "AGE")]
        for v in listed.schedules:
            last = v.runs[0].job_state or v.runs[0].state.value if v.runs else "-"
            rows.append((v.id, v.cron, v.timezone, _when(v), last, ago(v.created_at)))
        print_columns(rows)
        return 0
    verb = {
        "describe": schedules.describe,
        "history": schedules.describe,
        "pause": schedules.pause,
        "resume": schedules.resume,
        "run-now": schedules.run_now,
    }
    if args.action == "delete":
        schedules.delete(args.id, user=user)
        print(f"{args.id}: deleted")
        return 0
    view = verb[args.action](args.id, user=user)
    if args.json:
        print_json(view.runs if args.action == "history" else view)
    elif args.action == "describe":
        print(show(view))
    elif args.action == "history":
        print(history(view.runs))
    elif args.action == "run-now":
        run = view.runs[0]
        print(run.job_id or run.pipeline_run or f"{run.state.value}: {run.reason}")
    else:
        print(f"{view.id}: {'paused' if view.paused else 'next run ' + _when(view)}")
    return 0


def cmd_scheduler(args: argparse.Namespace) -> int:
    from trainhub import settings
    from trainhub.schedules import local, process

    if args.detach:
        local.ensure(settings.home())
        return 0
    return process.main()


def add_parsers(sub: Any) -> None:
    """``trainhub schedule ...`` and ``trainhub scheduler``."""
    s = sub.add_parser(
        "schedule",
        help="run a notebook or a pipeline on a cron schedule (create, list, describe, "
        "history, pause, resume, run-now, delete)",
    )
    verbs = s.add_subparsers(dest="action", required=True)
    c = verbs.add_parser(
        "create", help="a notebook or a *.pipeline.yaml on a cron expression in a time zone"
    )
    add_spec_arguments(c)
    c.add_argument(
        "--no-cache", action="store_true", help="a pipeline: run every step, reuse no result"
    )
    c.add_argument("--cron", required=True, help='five fields, e.g. "0 2 * * *"')
    c.add_argument("--tz", default="UTC", help="an IANA time zone, e.g. Europe/Berlin")
    c.add_argument("--schedule-name", help="the schedule's name (default: the job's)")
    c.add_argument("--concurrency", choices=["forbid", "allow", "replace"], default="forbid")
    c.add_argument("--missed", choices=["run-once", "skip"], default="run-once")
    c.add_argument("--starting-deadline", help="e.g. 10m: a time reached later is skipped")
    c.add_argument("--paused", action="store_true", help="create it paused")
    c.add_argument("--no-failure-alert", action="store_true", help="do not announce failed runs")
    c.add_argument("--json", action="store_true")
    ls = verbs.add_parser("list", help="your schedules")
    ls.add_argument("--json", action="store_true")
    for name in _ON_ONE:
        v = verbs.add_parser(name)
        v.add_argument("id")
        v.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_schedule)

    d = sub.add_parser("scheduler", help="the local scheduler that fires schedules")
    d.add_argument(
        "--detach", action="store_true", help="start it in the background unless it runs"
    )
    d.set_defaults(func=cmd_scheduler)
