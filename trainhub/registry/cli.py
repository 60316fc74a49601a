"""The ``trainhub model`` verbs: the team's model registry from a terminal.

trainhub model register NAME --from JOB[:STEP|:OUTPUT] [--description TEXT]
trainhub model list
trainhub model versions NAME           versions with their metrics side by side
trainhub model describe NAME[@ALIAS|/VERSION]   one version: files, metrics, lineage
trainhub model alias NAME ALIAS VERSION [--reason TEXT] | --remove
trainhub model archive NAME VERSION [--reason TEXT] [--undo]
trainhub model audit NAME              who moved which alias when, and why
trainhub model path NAME[@ALIAS|/VERSION]
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from trainhub.cli.printing import ago, print_columns, print_json
from trainhub.registry.views import ModelView


def _number(value: float) -> str:
    return f"{value:.4g}"


def versions_table(view: ModelView) -> list[tuple[str, ...]]:
    """One row per version, its metrics side by side (the union of every version's)."""
    header = ("VERSION", "ALIASES", "JOB", "BY", "REGISTERED", *view.metric_names, "STATE")
    rows = [header]
    for v in view.versions:
        source = v.source.job + (f":{v.source.step}" if v.source.step is not None else "")
        rows.append(
            (
                str(v.version),
                ",".join("@" + a for a in v.aliases) or "-",
                source,
                v.user,
                ago(v.created_at),
                *(_number(v.metrics[m]) if m in v.metrics else "-" for m in view.metric_names),
                "archived" if v.archived else "ready",
            )
        )
    return rows


def audit_table(view: ModelView) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("WHEN", "WHO", "WHAT", "REASON")]
    for a in view.audit:
        if a.event == "alias":
            before = f"{a.previous}" if a.previous else "none"
            after = f"{a.version}" if a.version else "none"
            what = f"@{a.alias} {before} -> {after}"
        else:
            what = f"{a.event} {a.version}" if a.event != "version" else f"registered {a.version}"
        rows.append((ago(a.time), a.user, what, a.reason or "-"))
    return rows


def _say(args: argparse.Namespace, answer: Any, line: str) -> None:
    """The answer as JSON with ``--json``, else one line."""
    if args.json:
        print_json(answer)
    else:
        print(line)


def cmd_model(args: argparse.Namespace) -> int:
    from trainhub.api import service
    from trainhub.registry import here

    registry = service().registry
    user = getpass.getuser()
    if args.action == "register":
        v = here.register(
            service(), args.name, args.source, user=user, description=args.description
        )
        _say(args, v, f"{v.model}/{v.version}")
        return 0
    if args.action == "list":
        models = registry.list()
        if args.json:
            print_json(models)
        elif models.models:
            rows: list[tuple[str, ...]] = [("NAME", "VERSIONS", "LATEST", "ALIASES", "UPDATED")]
            for m in models.models:
                aliases = ",".join(f"@{a}={v}" for a, v in m.aliases.items()) or "-"
                rows.append(
                    (m.name, str(m.versions), str(m.latest or "-"), aliases, ago(m.updated_at))
                )
            print_columns(rows)
        return 0
    if args.action in ("describe", "path"):
        version = registry.version(args.ref)
        if args.action == "path":
            _say(args, {"path": str(registry.files(version))}, str(registry.files(version)))
        else:
            print_json(version)
        return 0
    if args.action == "alias":
        if (args.version is None) == (not args.remove):
            raise ValueError("alias: give VERSION, or --remove (not both)")
        view = registry.move_alias(
            args.name, args.alias, args.version, user=user, reason=args.reason
        )
        _say(args, view, f"{args.name}@{args.alias}: {view.aliases.get(args.alias, 'removed')}")
        return 0
    if args.action == "archive":
        view = registry.archive(
            args.name, args.version, user=user, reason=args.reason, archived=not args.undo
        )
        _say(args, view, f"{args.name}/{args.version}: {'ready' if args.undo else 'archived'}")
        return 0
    view = registry.describe(args.name)
    if args.json:
        print_json(view.audit if args.action == "audit" else view.versions)
    else:
        print_columns(audit_table(view) if args.action == "audit" else versions_table(view))
    return 0


def add_parsers(sub: Any) -> None:
    """``trainhub model ...``."""
    m = sub.add_parser(
        "model",
        help="the team's model registry (register, list, versions, describe, alias, archive, "
        "audit, path)",
    )
    verbs = m.add_subparsers(dest="action", required=True)
    r = verbs.add_parser("register", help="a job's checkpoint or output as the next version")
    r.add_argument("name")
    r.add_argument(
        "--from",
        dest="source",
        required=True,
        help="JOB (its newest checkpoint, else its outputs), JOB:STEP or JOB:OUTPUT",
    )
    r.add_argument("--description", default="")
    verbs.add_parser("list", help="the team's models")
    for verb, help_ in (("versions", "versions, metrics side by side"), ("audit", "the log")):
        verbs.add_parser(verb, help=help_).add_argument("name")
    for verb in ("describe", "path"):
        verbs.add_parser(verb, help="NAME, NAME@ALIAS or NAME/VERSION").add_argument("ref")
    a = verbs.add_parser("alias", help="point an alias at a version (written in the audit log)")
    a.add_argument("name")
    a.add_argument("alias")
    a.add_argument("version", type=int, nargs="?")
    a.add_argument("--remove", action="store_true", help="remove the alias")
    a.add_argument("--reason", default="")
    ar = verbs.add_parser("archive", help="archive a version (never deleted)")
    ar.add_argument("name")
    ar.add_argument("version", type=int)
    ar.add_argument("--reason", default="")
    ar.add_argument("--undo", action="store_true", help="bring an archived version back")
    for parser in verbs.choices.values():
        parser.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_model)
