"""Verbs for administrators: the cluster's objects from the teams file (``admin render``,
``admin apply``), ``cleanup`` of job outputs, ``usage`` reports, this machine's CPU ``slots``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trainhub.cli.printing import print_json


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


def cmd_admin_doctor(args: argparse.Namespace) -> int:
    """What the cluster lacks for the teams file, one sentence each; exit 1 when anything."""
    from kubernetes import config

    from trainhub.backends.kubernetes.doctor import findings, look
    from trainhub.teams import load_teams

    teams = load_teams(args.file)
    api = config.new_client_from_config(config_file=args.kubeconfig)
    try:
        found = findings(teams, look(api, teams))
    finally:
        api.close()
    for sentence in found:
        print(sentence)
    if not found:
        print(f"the cluster has what {args.file} needs")
    return 1 if found else 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Apply the teams' retention policies to ended jobs' outputs; report the space used."""
    from trainhub.api import service
    from trainhub.outputs.cleanup import table

    report = service().cleanup(dry_run=args.dry_run)
    print_json(report) if args.json else print(table(report))
    return 1 if report.errors else 0


def cmd_slots(args: argparse.Namespace) -> int:
    """Show or set this machine's CPU slots: one value in the store, for every process."""
    from trainhub.api import service
    from trainhub.backends.capabilities import OneMachine

    backend = service().backend
    if not isinstance(backend, OneMachine):
        raise ValueError("slots: only the local backend has CPU slots (the cluster has quotas)")
    if args.count is not None:
        backend.set_slots(args.count)
    print(backend.slots())
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    """GPU, CPU and time usage of the jobs that ended in a period, grouped (every user's jobs
    the store holds, unless --user)."""
    from trainhub.api import usage
    from trainhub.usage.report import csv_text, table

    report = usage(since=args.since, by=args.by, user=args.user, recompute=args.recompute)
    if args.json:
        print_json(report)
    elif args.csv:
        sys.stdout.write(csv_text(report))
    else:
        print(table(report))
    return 0


def _teams_file_verb(
    asub: Any, verb: str, func: Any, text: str, *, cluster: bool = False
) -> argparse.ArgumentParser:
    """An ``admin`` verb over a teams file; ``cluster``: one that talks to a cluster."""
    v = asub.add_parser(verb, help=text)
    v.add_argument("file", help="teams file, e.g. hub_config/teams.yaml")
    if cluster:
        v.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    v.set_defaults(func=func)
    return v


def add_parsers(sub: Any) -> None:
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

    sl = sub.add_parser("slots", help="show or set this machine's CPU slots for CPU-only ranks")
    sl.add_argument("count", type=int, nargs="?", help="the new number of slots (at least 1)")
    sl.set_defaults(func=cmd_slots)

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
    ar = _teams_file_verb(
        asub, "render", cmd_admin_render, "print (or write) the Kubernetes and Kueue objects"
    )
    how = ar.add_mutually_exclusive_group()
    how.add_argument("--out", help="write one YAML file per object into this directory")
    how.add_argument(
        "--helm-values",
        action="store_true",
        help="print them as values of the trainhub Helm chart (charts/trainhub)",
    )
    _teams_file_verb(
        asub, "apply", cmd_admin_apply, "server-side apply the objects to a cluster", cluster=True
    )
    _teams_file_verb(
        asub,
        "doctor",
        cmd_admin_doctor,
        "say what a cluster lacks for the teams file",
        cluster=True,
    )
