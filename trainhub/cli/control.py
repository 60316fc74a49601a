"""Verbs that change a job's course, or wait for it: ``cancel``, ``suspend``, ``resume``,
``resubmit``, ``wait``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from trainhub.cli.jobs import add_job_verb
from trainhub.cli.printing import print_json
from trainhub.jobs.models import DescribeJob
from trainhub.jobs.states import JobState


def _stop_each(
    args: argparse.Namespace, stop: Callable[..., DescribeJob], done: JobState, going: str
) -> int:
    """``cancel`` and ``suspend``: ``stop`` each job, say whether it is ``done`` yet or still
    ``going`` there, and with --wait wait for each to come to rest (``Job.wait``: a suspended
    job rests there, one that finished meanwhile has ended)."""
    for job_id in args.jobs:
        job = stop(job_id, reason=args.reason)
        print(f"{job.id}: {done.value if job.state == done else going}")
    if args.wait:
        from trainhub.api import Job

        for job_id in args.jobs:
            Job(job_id).wait()
    return 0


def _print_job(job: DescribeJob, args: argparse.Namespace) -> int:
    """A job a verb made or queued again: the job as ``describe --json`` shows it, or its id."""
    print_json(job) if args.json else print(job.id)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from trainhub.api import service

    return _stop_each(args, service().cancel, JobState.CANCELLED, "cancelling")


def cmd_resubmit(args: argparse.Namespace) -> int:
    from trainhub.api import service

    return _print_job(service().resubmit(args.job), args)


def cmd_resume(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job, forked = service().resume_or_fork(args.job, args.step)
    if forked:  # the fork's older spelling: what the person typed is done, and its name said
        print("trainhub: a new job from a checkpoint is `trainhub fork`", file=sys.stderr)
    return _print_job(job, args)


def cmd_fork(args: argparse.Namespace) -> int:
    from trainhub.api import service

    return _print_job(service().fork(args.job, args.step), args)


def cmd_suspend(args: argparse.Namespace) -> int:
    from trainhub.api import service

    return _stop_each(args, service().suspend, JobState.SUSPENDED, "suspending")


# Where a job rests until something changes it: its end, or suspended (waiting for a person).
RESTING_STATES = frozenset({*(s for s in JobState if s.terminal), JobState.SUSPENDED})
# The watcher reconciles as the server does (a lost supervisor is noticed while waiting).
WAIT_POLL_S, WAIT_RECONCILE_S = 0.5, 5.0


def cmd_wait(args: argparse.Namespace) -> int:
    from trainhub.api import service

    svc = service()
    wanted = {JobState(s) for s in args.states} or RESTING_STATES
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    reconciled = time.monotonic()
    reached: dict[str, DescribeJob] = {}
    while True:
        for job_id in args.jobs:
            if job_id in reached:
                continue
            job = svc.describe(job_id)
            if job.state in wanted:
                reached[job_id] = job
            elif job.state.terminal:
                print(f"trainhub: {job_id} ended {job.state.value}", file=sys.stderr)
                return 1
        if len(reached) == len(args.jobs):
            break
        if deadline is not None and time.monotonic() > deadline:
            still = [f"{j} {svc.describe(j).state.value}" for j in args.jobs if j not in reached]
            print(f"trainhub: still {', '.join(still)} after {args.timeout:g} s", file=sys.stderr)
            return 1
        time.sleep(WAIT_POLL_S)
        if time.monotonic() - reconciled >= WAIT_RECONCILE_S:
            svc.reconcile()
            reconciled = time.monotonic()
    jobs = [reached[j] for j in args.jobs]
    if args.json:
        print_json(jobs[0] if len(jobs) == 1 else jobs)
    else:
        for job in jobs:
            print(f"{job.id}: {job.state.value}")
    return 0


def _add_stop_verb(sub: Any, verb: str, func: Any, waits_until: str, **text: str) -> None:
    """``cancel`` or ``suspend``, with the arguments :func:`_stop_each` reads."""
    v = sub.add_parser(verb, **text)
    v.add_argument("jobs", nargs="+")
    v.add_argument("--reason")
    v.add_argument("--wait", action="store_true", help=waits_until)
    v.set_defaults(func=func)


def add_parsers(sub: Any) -> None:
    add_job_verb(sub, "resubmit", cmd_resubmit, "run a job's spec again as a new job")

    r = sub.add_parser(
        "resume",
        help="queue a suspended job again (same id, from its latest checkpoint)",
        description="For a job that is not suspended, or with --step, it forks (this was the "
        "fork's name once): use `trainhub fork`.",
    )
    r.add_argument("job")
    r.add_argument("--step", type=int, help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_resume)

    f = sub.add_parser(
        "fork",
        help="a new job with this job's spec that starts from one of its checkpoints",
    )
    f.add_argument("job")
    f.add_argument("--step", type=int, help="default: the latest checkpoint")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_fork)

    _add_stop_verb(sub, "cancel", cmd_cancel, "until every process has ended", help="cancel jobs")

    w = sub.add_parser(
        "wait",
        help="wait until jobs reach a state (default: until each ends or is suspended)",
        description="Exits 0 once every job is in one of the --for states; 1 when a job ends "
        "in another state (it can no longer reach them) or the timeout passes first.",
    )
    w.add_argument("jobs", nargs="+", metavar="JOB")
    w.add_argument(
        "--for",
        dest="states",
        action="append",
        default=[],
        choices=[s.value for s in JobState],
        help="a state to wait for (repeatable)",
    )
    w.add_argument("--timeout", type=float, help="seconds (default: no limit)")
    w.add_argument("--json", action="store_true", help="the job as `describe --json` shows it")
    w.set_defaults(func=cmd_wait)

    _add_stop_verb(
        sub,
        "suspend",
        cmd_suspend,
        "until each job is suspended",
        help="stop jobs with their progress saved and their GPUs freed; `resume` continues them",
        description="The ranks get SIGTERM, which runs the callbacks the training code "
        "registered with trainhub.checkpoint.on_stop (a save), and SIGKILL after the grace "
        "period (TRAINHUB_SUSPEND_GRACE, 30 s). The job's state becomes suspended with the "
        "step of its latest checkpoint; `trainhub resume JOB` queues it again.",
    )
