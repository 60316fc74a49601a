"""Verbs that list and show jobs, and change what a job says of itself: ``jobs``,
``describe``, ``events``, ``edit``, ``share``, ``compare``."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from trainhub.cli.printing import ago, elapsed, print_columns, print_json
from trainhub.jobs.models import DescribeJob, ListJobsQuery
from trainhub.jobs.states import JobState


def cmd_jobs(args: argparse.Namespace) -> int:
    from trainhub.api import service

    states = [JobState(s) for s in args.state] if args.state else None
    page = service().list_jobs(
        ListJobsQuery(states=states, limit=args.limit, search=args.search),
        user=None if args.all_users else _user(),
    )
    if args.json:
        print_json(page)
        return 0
    rows = [("ID", "STATE", "PRIORITY", "GPUS", "RANKS", "AGE", "ELAPSED", "DETAIL")]
    for j in page.jobs:
        detail = j.wait_reason or (j.failure_class.value if j.failure_class else "")
        rows.append(
            (
                j.id,
                j.state.value,
                j.priority,
                str(j.gpus),
                str(j.world_size),
                ago(j.created_at),
                elapsed(j),
                detail,
            )
        )
    print_columns(rows)
    if page.total > len(page.jobs):
        print(f"({len(page.jobs)} of {page.total}; --limit to see more)", file=sys.stderr)
    return 0


def _describe_text(job: DescribeJob) -> str:
    lines = [
        f"Job:        {job.id}",
        f"State:      {job.state.value}" + (f" (attempt {job.attempt})" if job.attempt else ""),
        f"Source:     {job.source}",
        f"Resources:  {job.spec.resources.worker_range} worker(s) x "
        f"{job.spec.resources.ranks_per_worker} "
        f"process(es), {job.gpus} GPU(s)" + (f" {job.assigned_gpus}" if job.assigned_gpus else ""),
        f"Priority:   {job.priority}",
        f"Directory:  {job.job_dir}",
    ]
    if job.wait_reason:
        lines.append(f"Waiting:    {job.wait_reason}")
    if job.data_wait and job.data_wait.fraction is not None:
        lines.append(
            f"Data wait:  {round(job.data_wait.fraction * 100)} % of the step time"
            + (f" ({job.data_wait.advice})" if job.data_wait.advice else "")
        )
    if job.verdict:
        v = job.verdict
        lines.append(f"Verdict:    {v.failure_class.value}: {v.reason}")
    if job.retries:
        lines.append("Retries:    " + ", ".join(f"{k} {n}" for k, n in job.retries.items()))
    if job.resubmitted_from:
        lines.append(f"From:       {job.resubmitted_from}")
    if job.lineage:
        git = job.lineage.get("git") or {}
        if git.get("commit"):
            lines.append(
                f"Git:        {git['commit'][:12]}" + (" (dirty)" if git.get("dirty") else "")
            )
    lines.append("Timeline:")
    for e in job.timeline:
        t = datetime.fromtimestamp(e["time"]).strftime("%H:%M:%S")
        what = e.get("state") or e["type"]
        extra = e.get("reason") or ""
        lines.append(f"  {t}  {what:<12} {extra}")
    return "\n".join(lines)


def cmd_describe(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job = service().describe(args.job)
    if args.json:
        print_json(job)
    else:
        print(_describe_text(job))
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from trainhub.api import service

    events, _ = service().events(args.job)
    if args.json:
        print_json(events)
        return 0
    for e in events:
        t = datetime.fromtimestamp(e["time"]).strftime("%H:%M:%S.%f")[:-3]
        rest = {k: v for k, v in e.items() if k not in ("time", "type")}
        print(f"{t}  {e['type']:<16} {json.dumps(rest, default=str)}")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    from trainhub.api import service

    svc = service()
    tags = None
    if args.tag or args.untag:
        tags = [t for t in svc.describe(args.job).tags if t not in args.untag]
        tags += [t for t in args.tag if t not in tags]
    job = svc.edit(args.job, {"tags": tags, "note": args.note})
    if args.json:
        print_json(job)
    else:
        print(f"{job.id}: tags {', '.join(job.tags) or '(none)'}; note {job.note or '(none)'}")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job = service().edit(args.job, {"shared": "private" if args.private else "team"})
    if args.json:
        print_json(job)
    elif job.shared == "team":
        print(f"{job.id}: shared with team {job.team} (read-only)")
    else:
        print(f"{job.id}: private")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Jobs side by side: the rows that differ first, then those alike."""
    from trainhub.api import service
    from trainhub.experiments.compare_scalars import parse_goals
    from trainhub.experiments.report import code_diffs, table

    comparison = service().compare(
        args.jobs, goals=parse_goals(args.goal), series=args.json, points=args.points
    )
    if args.json:
        print_json(comparison)
        return 0
    print(table(comparison))
    if args.diff:
        print(code_diffs(comparison))
    return 0


def _user() -> str:
    import getpass

    return getpass.getuser()


def add_job_verb(sub: Any, verb: str, func: Any, text: str) -> None:
    """A verb on one job, with ``--json``: describe, events, checkpoints, resubmit."""
    v = sub.add_parser(verb, help=text)
    v.add_argument("job")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=func)


def add_parsers(sub: Any) -> None:
    j = sub.add_parser("jobs", help="list jobs")
    j.add_argument("--state", action="append", choices=[s.value for s in JobState])
    j.add_argument("--limit", type=int, default=50)
    j.add_argument("--search", help="words found in the name, tags, note or parameters")
    j.add_argument("--all-users", action="store_true")
    j.add_argument("--json", action="store_true")
    j.set_defaults(func=cmd_jobs)

    for verb, func, text in (
        ("describe", cmd_describe, "show a job"),
        ("events", cmd_events, "show a job's events"),
    ):
        add_job_verb(sub, verb, func, text)

    e = sub.add_parser("edit", help="change a job's tags or note (its spec stays as submitted)")
    e.add_argument("job")
    e.add_argument("--tag", action="append", default=[], help="add a tag (repeatable)")
    e.add_argument("--untag", action="append", default=[], help="remove a tag (repeatable)")
    e.add_argument("--note", help="replace the note ('' clears it)")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_edit)

    sh = sub.add_parser(
        "share",
        help="let your team read a job (a hub with teams), or make it private again",
        description="Teammates then see the job in their list and read its logs, metrics, "
        "checkpoints and executed notebook, compare it and resubmit it as a job of their own; "
        "they cannot change or cancel it. Other teams never see it. Jobs are private by default.",
    )
    sh.add_argument("job")
    sh.add_argument("--private", action="store_true", help="stop sharing it")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_share)

    cm = sub.add_parser(
        "compare",
        help="compare 2 to 10 jobs: parameters, lineage, code, resources, verdicts, scalars",
    )
    cm.add_argument("jobs", nargs="+", metavar="JOB")
    cm.add_argument(
        "--goal",
        action="append",
        default=[],
        metavar="NAME:min|max",
        help="whether a scalar's best is its smallest or largest value (default: by its name)",
    )
    cm.add_argument("--diff", action="store_true", help="then each job's code diff, cell by cell")
    cm.add_argument("--points", type=int, help="with --json: at most this many points a curve")
    cm.add_argument("--json", action="store_true", help="the whole comparison, curves included")
    cm.set_defaults(func=cmd_compare)
