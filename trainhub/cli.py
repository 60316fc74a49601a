"""``trainhub``: submit notebooks and scripts as jobs and follow them from a terminal."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from datetime import datetime
from typing import Any

from trainhub.controller.serve import add_parser as add_controller_parser
from trainhub.errors import TrainhubError
from trainhub.experiments.cli import add_parsers as add_sweep_parsers
from trainhub.jobs.models import DescribeJob, JobSummary, ListJobsQuery
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import JobState


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


def _print_json(obj: Any) -> None:
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json") if hasattr(o, "model_dump") else o for o in obj]
    print(json.dumps(obj, indent=2, default=str))


def _ago(ts: float | None) -> str:
    if not ts:
        return "-"
    s = int(time.time() - ts)
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def _elapsed(job: JobSummary) -> str:
    if not job.started_at:
        return "-"
    end = job.finished_at or time.time()
    s = int(end - job.started_at)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _datasets(items: list[str]) -> list[Any]:
    """``--dataset imagenet`` asks for a dataset by name; ``--dataset NAME=PATH`` names a path
    of one's own (from here: a job needs it absolute)."""
    out: list[Any] = []
    for item in items:
        name, sep, path = item.partition("=")
        out.append({"name": name, "path": os.path.abspath(path)} if sep else item)
    return out


# --- verbs ----------------------------------------------------------------------------------
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
        _print_json(job)
    else:
        print(job.id)
        if job.wait_reason:
            print(f"{job.state.value}: {job.wait_reason}", file=sys.stderr)
    if args.follow:
        return _follow(job.id, rank=0)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    from trainhub.api import service

    states = [JobState(s) for s in args.state] if args.state else None
    page = service().list_jobs(
        ListJobsQuery(states=states, limit=args.limit, search=args.search),
        user=None if args.all_users else _user(),
    )
    if args.json:
        _print_json(page)
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
                _ago(j.created_at),
                _elapsed(j),
                detail,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    if page.total > len(page.jobs):
        print(f"({len(page.jobs)} of {page.total}; --limit to see more)", file=sys.stderr)
    return 0


def _describe_text(job: DescribeJob) -> str:
    lines = [
        f"Job:        {job.id}",
        f"State:      {job.state.value}" + (f" (attempt {job.attempt})" if job.attempt else ""),
        f"Source:     {job.source}",
        f"Resources:  {job.spec.resources.workers} worker(s) x "
        f"{job.spec.resources.ranks_per_worker} "
        f"process(es), {job.gpus} GPU(s)" + (f" {job.assigned_gpus}" if job.assigned_gpus else ""),
        f"Priority:   {job.priority}",
        f"Directory:  {job.job_dir}",
    ]
    if job.wait_reason:
        lines.append(f"Waiting:    {job.wait_reason}")
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
        _print_json(job)
    else:
        print(_describe_text(job))
    return 0


def _follow(job_id: str, rank: int) -> int:
    """Stream a rank's log; progress (state changes, cells, retries) goes to stderr."""
    from trainhub.api import Job, service
    from trainhub.jobs.logs import LogFollower, split_lines

    svc = service()
    log = LogFollower(svc.log_reader(job_id, rank=rank), hold_partial_s=None)
    event_offset, pending = 0, ""

    def show(chunks: list[Any]) -> None:
        nonlocal pending
        for chunk in chunks:
            lines, pending = split_lines(pending, chunk.text)
            for line in lines:
                print(line, flush=True)

    while True:
        chunks = log.drain()
        show(chunks)
        events, event_offset = svc.events(job_id, offset=event_offset)
        for e in events:
            note = _progress(e, rank)
            if note:
                print(f"[trainhub] {note}", file=sys.stderr, flush=True)
        if not chunks and not events:
            state = Job(job_id).status
            if state.terminal:
                show(log.drain(final=True))  # read after the state: all the job wrote
                if pending:
                    print(pending)
                return 0 if state == JobState.SUCCEEDED else 1
            time.sleep(0.3)


def _progress(event: dict[str, Any], rank: int) -> str | None:
    kind = event.get("type")
    if kind == "state":
        return f"{event['state']}" + (f": {event['reason']}" if event.get("reason") else "")
    if kind == "cell" and event.get("rank") == rank and event.get("phase") == "start":
        return f"cell {event['cell_index'] + 1} started"
    if kind == "retry":
        return (
            f"retrying ({event['failure_class']}: {event['reason']}) "
            f"in {event['backoff_seconds']:.0f}s"
        )
    if kind == "checkpoint":
        return f"checkpoint at step {event.get('step')}"
    return None


def cmd_logs(args: argparse.Namespace) -> int:
    from trainhub.api import service

    if args.follow:
        return _follow(args.job, args.rank)
    svc, offset = service(), 0
    while True:
        data, offset = svc.log(args.job, rank=args.rank, offset=offset)
        if not data:
            return 0
        sys.stdout.write(data.decode(errors="replace"))


def cmd_output(args: argparse.Namespace) -> int:
    """The executed notebook of a job (rank 0's by default), as .ipynb JSON or HTML."""
    from trainhub.api import service

    svc = service()
    if args.html:
        text = svc.notebook_html(args.job, rank=args.rank)
    else:
        text = json.dumps(svc.notebook(args.job, rank=args.rank), indent=1, ensure_ascii=False)
        text += "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def cmd_outputs(args: argparse.Namespace) -> int:
    """List a job's outputs, or fetch one file of them (-o: to a file or folder; - : stdout)."""
    import shutil
    from pathlib import Path

    from trainhub.api import service
    from trainhub.outputs.cleanup import size_text

    svc = service()
    if args.file is None:
        listing = svc.outputs(args.job)
        if args.json:
            _print_json(listing)
            return 0
        for e in listing.entries:
            t = datetime.fromtimestamp(e.mtime).strftime("%Y-%m-%d %H:%M:%S")
            name = e.path + ("/" if e.kind == "dir" else "")
            print(f"{size_text(e.bytes):>8}  {t}  {name}")
        more = " (more left out)" if listing.truncated else ""
        print(f"{listing.files} files, {size_text(listing.bytes)}{more}", file=sys.stderr)
        return 0
    f, name, _ = svc.open_output_file(args.job, args.file)
    with f:
        if args.output == "-":
            shutil.copyfileobj(f, sys.stdout.buffer)
            return 0
        dest = Path(args.output or name)
        if dest.is_dir():
            dest = dest / name
        partial = dest.with_name(f".{dest.name}.part")
        try:  # nothing half-written under the name asked for
            with open(partial, "wb") as out:
                shutil.copyfileobj(f, out)
            os.replace(partial, dest)
        finally:
            partial.unlink(missing_ok=True)
    print(dest, file=sys.stderr)
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Apply the teams' retention policies to ended jobs' outputs; report the space used."""
    from trainhub.api import service
    from trainhub.outputs.cleanup import table

    report = service().cleanup(dry_run=args.dry_run)
    _print_json(report) if args.json else print(table(report))
    return 1 if report.errors else 0


def _notebook_ranks(value: str) -> list[int] | str:
    """``--notebook-ranks 0,3``, ``all`` or ``none``."""
    if value in ("all", "none"):
        return "all" if value == "all" else []
    try:
        return [int(r) for r in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give rank numbers (0,3), all or none") from None


def cmd_events(args: argparse.Namespace) -> int:
    from trainhub.api import service

    events, _ = service().events(args.job)
    if args.json:
        _print_json(events)
        return 0
    for e in events:
        t = datetime.fromtimestamp(e["time"]).strftime("%H:%M:%S.%f")[:-3]
        rest = {k: v for k, v in e.items() if k not in ("time", "type")}
        print(f"{t}  {e['type']:<16} {json.dumps(rest, default=str)}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from trainhub.api import service

    svc = service()
    for job_id in args.jobs:
        job = svc.cancel(job_id, reason=args.reason)
        print(f"{job.id}: {'cancelled' if job.state == JobState.CANCELLED else 'cancelling'}")
    if args.wait:
        from trainhub.api import Job

        for job_id in args.jobs:
            Job(job_id).wait()
    return 0


def cmd_resubmit(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job = service().resubmit(args.job)
    _print_json(job) if args.json else print(job.id)
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
        _print_json(job)
    else:
        print(f"{job.id}: tags {', '.join(job.tags) or '(none)'}; note {job.note or '(none)'}")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    from trainhub.api import service

    job = service().edit(args.job, {"shared": "private" if args.private else "team"})
    if args.json:
        _print_json(job)
    elif job.shared == "team":
        print(f"{job.id}: shared with team {job.team} (read-only)")
    else:
        print(f"{job.id}: private")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from trainhub.api import service

    svc = service()
    if args.step is None and svc.describe(args.job).state == JobState.SUSPENDED:
        job = svc.resume_suspended(args.job)  # the same job again, from where it stopped
    else:
        job = svc.resume(args.job, args.step)
    _print_json(job) if args.json else print(job.id)
    return 0


def cmd_suspend(args: argparse.Namespace) -> int:
    from trainhub.api import service

    svc = service()
    for job_id in args.jobs:
        job = svc.suspend(job_id, reason=args.reason)
        print(f"{job.id}: {'suspended' if job.state == JobState.SUSPENDED else 'suspending'}")
    if args.wait:
        from trainhub.api import Job

        for job_id in args.jobs:
            Job(job_id).wait()  # ends at suspended (or ended, when it finished meanwhile)
    return 0


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
        _print_json(jobs[0] if len(jobs) == 1 else jobs)
    else:
        for job in jobs:
            print(f"{job.id}: {job.state.value}")
    return 0


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from trainhub.api import service

    infos = service().checkpoints(args.job)
    if args.json:
        _print_json(infos)
        return 0
    print(f"{'STEP':>10}  {'TIME':<19}  {'SIZE':>10}  METRICS")
    for c in infos:
        t = datetime.fromtimestamp(c.time).strftime("%Y-%m-%d %H:%M:%S")
        metrics = " ".join(f"{k}={v:.4g}" for k, v in c.metrics.items())
        print(f"{c.step:>10}  {t:<19}  {c.bytes / 2**20:>8.1f}Mi  {metrics}")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    """The datasets the user's team may ask for by name (as the REST API lists them)."""
    from trainhub.api import service

    listing = service().datasets()
    if args.json:
        _print_json(listing)
        return 0
    if not listing.datasets:
        print("no datasets by name here (see `trainhub datasets --help`)", file=sys.stderr)
        return 0
    rows = [("NAME", "ACCESS", "OWNER", "PATH", "DESCRIPTION")]
    for d in listing.datasets:
        access = "read-only" if d.read_only else "read-write"
        rows.append((d.name, access, d.owner or "-", d.path, d.description))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    return 0


def cmd_admin_render(args: argparse.Namespace) -> int:
    import hashlib
    from pathlib import Path

    import yaml

    from trainhub import __version__
    from trainhub.backends.kubernetes.render import file_name, helm_values, render, to_yaml
    from trainhub.teams import load_teams

    objs = render(load_teams(args.file))
    if args.helm_values:
        values = helm_values(
            objs, hashlib.sha256(Path(args.file).read_bytes()).hexdigest(), __version__
        )
        sys.stdout.write(
            f"# Values of charts/trainhub, rendered from {args.file} by trainhub {__version__}:\n"
            f"#   trainhub admin render {args.file} --helm-values\n"
            "# Render them again after changing the teams file; do not edit them here.\n"
            + yaml.safe_dump(values, sort_keys=False, default_flow_style=False)
        )
        return 0
    if args.out is None:
        sys.stdout.write(to_yaml(objs))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for obj in objs:
        (out / file_name(obj)).write_text(to_yaml([obj]))
    print(f"{len(objs)} objects written to {out}", file=sys.stderr)
    return 0


def cmd_admin_apply(args: argparse.Namespace) -> int:
    from kubernetes import config

    from trainhub.backends.kubernetes.apply import apply_objects, pool_warnings
    from trainhub.backends.kubernetes.render import render
    from trainhub.teams import load_teams

    teams = load_teams(args.file)
    objs = render(teams)
    api = config.new_client_from_config(config_file=args.kubeconfig)
    try:
        for result in apply_objects(api, objs):
            where = f"{result.namespace}/" if result.namespace else ""
            print(
                f"{result.kind} {where}{result.name}: "
                f"{'applied' if result.changed else 'unchanged'}"
            )
        for warning in pool_warnings(api, teams):
            print(f"warning: {warning}", file=sys.stderr)
    finally:
        api.close()
    return 0


def cmd_slots(args: argparse.Namespace) -> int:
    """Show or set this machine's CPU slots: one value in the store, for every process."""
    from trainhub.api import service

    backend = service().backend
    admitter = getattr(backend, "admitter", None)
    if admitter is None:
        raise ValueError("slots: only the local backend has CPU slots (the cluster has quotas)")
    if args.count is not None:
        admitter.set_slots(args.count)
    print(admitter.slots())
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    """GPU, CPU and time usage of the jobs that ended in a period, grouped (every user's jobs
    the store holds, unless --user)."""
    from trainhub.api import usage
    from trainhub.usage.report import csv_text, table

    report = usage(since=args.since, by=args.by, user=args.user, recompute=args.recompute)
    if args.json:
        _print_json(report)
    elif args.csv:
        sys.stdout.write(csv_text(report))
    else:
        print(table(report))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Jobs side by side: the rows that differ first, then those alike."""
    from trainhub.api import service
    from trainhub.experiments.compare import parse_goals
    from trainhub.experiments.report import code_diffs, table

    comparison = service().compare(
        args.jobs, goals=parse_goals(args.goal), series=args.json, points=args.points
    )
    if args.json:
        _print_json(comparison)
        return 0
    print(table(comparison))
    if args.diff:
        print(code_diffs(comparison))
    return 0


def _user() -> str:
    import getpass

    return getpass.getuser()


# --- parser ---------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainhub", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)

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
        ("checkpoints", cmd_checkpoints, "list a job's checkpoints"),
        ("resubmit", cmd_resubmit, "run a job's spec again as a new job"),
    ):
        v = sub.add_parser(verb, help=text)
        v.add_argument("job")
        v.add_argument("--json", action="store_true")
        v.set_defaults(func=func)

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

    r = sub.add_parser(
        "resume",
        help="queue a suspended job again (same id, from its latest checkpoint); for any "
        "other job, or with --step, a new job starting from a checkpoint of this one",
    )
    r.add_argument("job")
    r.add_argument("--step", type=int, help="default: the latest checkpoint")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_resume)

    lg = sub.add_parser("logs", help="print a rank's log")
    lg.add_argument("job")
    lg.add_argument("--rank", type=int, default=0)
    lg.add_argument("-f", "--follow", action="store_true")
    lg.set_defaults(func=cmd_logs)

    o = sub.add_parser("output", help="the executed notebook of a job, with its outputs")
    o.add_argument("job")
    o.add_argument("--rank", type=int, default=0)
    o.add_argument("--html", action="store_true", help="rendered by nbconvert")
    o.add_argument("-o", "--output", metavar="FILE", help="write it here (default: stdout)")
    o.set_defaults(func=cmd_output)

    op = sub.add_parser(
        "outputs",
        help="list a job's outputs, or fetch one file of them",
        description="What the job wrote to trainhub.outputs.path() (TRAINHUB_OUTPUT_DIR), "
        "kept after it ended. Without FILE: the folders and files, with sizes and times.",
    )
    op.add_argument("job")
    op.add_argument("file", nargs="?", metavar="FILE", help="relative to the outputs directory")
    op.add_argument(
        "-o", "--output", metavar="DEST", help="file or folder (default: here; -: stdout)"
    )
    op.add_argument("--json", action="store_true")
    op.set_defaults(func=cmd_outputs)

    cu = sub.add_parser(
        "cleanup",
        help="apply the retention policies to job outputs (for administrators)",
        description="Deletes what the teams' retention policies (teams file: retention of a "
        "team; locally $TRAINHUB_HOME/retention.yaml or TRAINHUB_RETENTION_FILE) do not keep: "
        "files older than days, then the oldest files while a job or a team is over its size. "
        "Never touches a job that has not ended. Reports the space used per team and per job.",
    )
    cu.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    cu.add_argument("--json", action="store_true")
    cu.set_defaults(func=cmd_cleanup)

    c = sub.add_parser("cancel", help="cancel jobs")
    c.add_argument("jobs", nargs="+")
    c.add_argument("--reason")
    c.add_argument("--wait", action="store_true", help="until every process has ended")
    c.set_defaults(func=cmd_cancel)

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

    su = sub.add_parser(
        "suspend",
        help="stop jobs with their progress saved and their GPUs freed; `resume` continues them",
        description="The ranks get SIGTERM, which runs the callbacks the training code "
        "registered with trainhub.checkpoint.on_stop (a save), and SIGKILL after the grace "
        "period (TRAINHUB_SUSPEND_GRACE, 30 s). The job's state becomes suspended with the "
        "step of its latest checkpoint; `trainhub resume JOB` queues it again.",
    )
    su.add_argument("jobs", nargs="+")
    su.add_argument("--reason")
    su.add_argument("--wait", action="store_true", help="until each job is suspended")
    su.set_defaults(func=cmd_suspend)

    d = sub.add_parser(
        "datasets",
        help="list the datasets your team may ask for by name",
        description="Datasets by name: on a cluster the teams file's, locally those of "
        "$TRAINHUB_HOME/datasets.yaml (or TRAINHUB_DATASETS_FILE) that TRAINHUB_TEAM may read.",
    )
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_datasets)

    sl = sub.add_parser("slots", help="show or set this machine's CPU slots for CPU-only ranks")
    sl.add_argument("count", type=int, nargs="?", help="the new number of slots (at least 1)")
    sl.set_defaults(func=cmd_slots)

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

    u = sub.add_parser("usage", help="GPU, CPU and time usage of ended jobs, grouped")
    u.add_argument("--since", default="30d", help="a span back from now (30d, 12h) or a date")
    u.add_argument("--by", choices=["user", "team", "pool", "day"], default="user")
    u.add_argument("--user", help="only this user's jobs (default: every user's)")
    u.add_argument(
        "--recompute",
        action="store_true",
        help="derive every ended job's row again (after changing TRAINHUB_WASTE_UTILIZATION_PCT)",
    )
    out = u.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--csv", action="store_true")
    u.set_defaults(func=cmd_usage)

    a = sub.add_parser("admin", help="cluster objects from the teams file (for administrators)")
    asub = a.add_subparsers(dest="admin_verb", required=True)
    ar = asub.add_parser("render", help="print (or write) the Kubernetes and Kueue objects")
    ar.add_argument("file", help="teams file, e.g. hub_config/teams.yaml")
    how = ar.add_mutually_exclusive_group()
    how.add_argument("--out", help="write one YAML file per object into this directory")
    how.add_argument(
        "--helm-values",
        action="store_true",
        help="print them as values of the trainhub Helm chart (charts/trainhub)",
    )
    ar.set_defaults(func=cmd_admin_render)
    ap = asub.add_parser("apply", help="server-side apply the objects to a cluster")
    ap.add_argument("file", help="teams file, e.g. hub_config/teams.yaml")
    ap.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    ap.set_defaults(func=cmd_admin_apply)
    add_sweep_parsers(sub)
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

        if args.verb not in ("admin", "controller"):  # these work on a teams file, not on jobs
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


if __name__ == "__main__":
    sys.exit(main())
