"""The sweep verbs of the ``trainhub`` command line.

    trainhub sweep train.ipynb -p lr=loguniform:1e-4:1e-1 -p batch=[32,64] --trials 8 \\
        --max-running 2 --sampler random --seed 1 --early-stop median:loss:min
    trainhub sweeps
    trainhub sweep show <id>
    trainhub sweep cancel <id>
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from trainhub.cli.jobargs import add_job_arguments, job_keywords
from trainhub.experiments.models import DescribeSweep, SweepSummary, TrialView
from trainhub.experiments.sweep import DIMENSION_SYNTAX, parse_early_stop, parse_parameter
from trainhub.jobs.spec import field_error

_VERBS = ("show", "cancel")


def _print_json(model: Any) -> None:
    print(json.dumps(model.model_dump(mode="json"), indent=2, default=str))


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else json.dumps(value)


def _trial_state(t: TrialView) -> str:
    if t.error:
        return "refused"
    if t.state is None:
        return "submitting"
    if t.failure_class is not None and t.failure_class.value == "stopped_early":
        return "stopped early"
    return t.state.value


def sweep_request(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON of a sweep from ``trainhub sweep``'s arguments (validated by the service)."""
    from trainhub.api import build_spec

    space: dict[str, Any] = {}
    fixed: dict[str, Any] = {}
    for item in args.param:
        name, value, swept = parse_parameter(item)
        (space if swept else fixed)[name] = value
    if not space:
        raise field_error("parameters", f"sweep at least one: {DIMENSION_SYNTAX}")
    job = build_spec(
        args.source,
        name=args.name,
        parameters=fixed,
        allow_new_parameters=args.allow_new_parameter,
        **job_keywords(args),
    )
    sweep: dict[str, Any] = {"space": space, "sampler": args.sampler}
    for key in ("trials", "max_running", "seed"):
        if getattr(args, key) is not None:
            sweep[key] = getattr(args, key)
    if args.early_stop:
        sweep["early_stop"] = parse_early_stop(args.early_stop)
    if args.metric:
        metric, _, mode = args.metric.partition(":")
        sweep["metric"] = metric
        if mode:
            sweep["mode"] = mode
    return {"job": job, "sweep": sweep}


def show(sweep: DescribeSweep) -> str:
    lines = [
        f"Sweep:      {sweep.id} ({sweep.state.value})",
        f"Sampler:    {sweep.sampler}, seed {sweep.seed}; {sweep.trials} trial(s), "
        f"at most {sweep.sweep.max_running} at once",
        f"Trials:     {sweep.submitted} submitted, {sweep.active} active, {sweep.ended} ended, "
        f"{sweep.stopped_early} stopped early",
    ]
    if sweep.sweep.early_stop is not None:
        rule = sweep.sweep.early_stop
        lines.append(f"Early stop: {rule.rule} on {rule.metric} ({rule.mode})")
    if sweep.metric:
        best = "-" if sweep.best_trial is None else f"trial {sweep.best_trial}"
        lines.append(f"Best:       {best} by {sweep.metric} ({sweep.mode})")
    names = list(sweep.sweep.space)
    metric = sweep.metric or "-"
    rows: list[tuple[str, ...]] = [("", "TRIAL", "JOB", "STATE", *names, metric.upper(), "DETAIL")]
    for t in sweep.trial_views:
        detail = t.error or t.wait_reason or (t.reason if t.failure_class else "") or ""
        rows.append(
            (
                "*" if t.best else "",
                str(t.trial),
                t.job_id or "-",
                _trial_state(t),
                *(_value(t.parameters.get(n)) for n in names),
                _number(t.value),
                detail,
            )
        )
    return "\n".join(lines) + "\n\n" + _table(rows)


def summaries(sweeps: list[SweepSummary]) -> str:
    rows: list[tuple[str, ...]] = [
        ("ID", "STATE", "SAMPLER", "TRIALS", "ACTIVE", "ENDED", "STOPPED EARLY", "AGE")
    ]
    for s in sweeps:
        age = int(time.time() - s.created_at)
        rows.append(
            (
                s.id,
                s.state.value,
                s.sampler,
                f"{s.submitted}/{s.trials}",
                str(s.active),
                str(s.ended),
                str(s.stopped_early),
                f"{age}s" if age < 120 else f"{age // 60}m" if age < 7200 else f"{age // 3600}h",
            )
        )
    return _table(rows)


def cmd_sweep(args: argparse.Namespace) -> int:
    from trainhub.api import service

    if args.source in _VERBS:
        if not args.sweep_id:
            raise field_error("sweep", f"name the sweep: trainhub sweep {args.source} <id>")
        if args.source == "show":
            described = service().describe_sweep(args.sweep_id, user=_user())
        else:
            described = service().cancel_sweep(args.sweep_id, user=_user())
        if args.json:
            _print_json(described)
        elif args.source == "show":
            print(show(described))
        else:
            print(f"{described.id}: {described.state.value}")
        return 0
    if args.sweep_id:
        raise field_error("sweep", f"{args.sweep_id!r}: a sweep of a notebook takes no id")
    described = service().create_sweep(sweep_request(args), user=_user())
    if args.json:
        _print_json(described)
    else:
        print(described.id)
        print(
            f"{described.trials} trial(s), {described.submitted} submitted; "
            f"trainhub sweep show {described.id}",
            file=sys.stderr,
        )
    return 0


def cmd_sweeps(args: argparse.Namespace) -> int:
    from trainhub.api import service

    listed = service().list_sweeps(user=None if args.all_users else _user())
    if args.json:
        _print_json(listed)
    else:
        print(summaries(listed.sweeps))
    return 0


def _user() -> str:
    import getpass

    return getpass.getuser()


def add_parsers(sub: Any) -> None:
    """``trainhub sweep`` and ``trainhub sweeps``."""
    s = sub.add_parser(
        "sweep",
        help="run a notebook over a space of parameters (sweep show|cancel <id>)",
        description="Run a notebook over a space of parameters: each trial is a job.",
    )
    s.add_argument("source", help="notebook or script; or show / cancel, then the sweep's id")
    s.add_argument("sweep_id", nargs="?", help="the sweep (with show or cancel)")
    s.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=SPACE",
        help=f"{DIMENSION_SYNTAX}; a plain value is the same in every trial",
    )
    s.add_argument("--sampler", choices=["grid", "random"], default="grid")
    s.add_argument("--trials", type=int, help="grid: every combination; random: 10")
    s.add_argument("--max-running", type=int, help="trials active at once (default 2)")
    s.add_argument("--seed", type=int, help="random: the seed (default: chosen, kept)")
    s.add_argument(
        "--early-stop",
        metavar="RULE:METRIC[:min|max[:MIN_STEPS]]",
        help="median or halving on a scalar the notebook logs, e.g. median:loss:min",
    )
    s.add_argument(
        "--metric", metavar="NAME[:min|max]", help="ranks trials (default: early stop's)"
    )
    s.add_argument("--name")
    s.add_argument("--allow-new-parameter", action="store_true")
    add_job_arguments(s, runtime_help="of each trial, e.g. 90m")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_sweep)

    ls = sub.add_parser("sweeps", help="list sweeps")
    ls.add_argument("--all-users", action="store_true")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_sweeps)
