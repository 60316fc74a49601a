"""What jobs leave and read: the executed notebook (``output``), ``outputs``,
``checkpoints``, and the ``datasets`` a team may ask for by name."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import Any

from trainhub.cli.jobs import add_job_verb
from trainhub.cli.printing import print_columns, print_json


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
            print_json(listing)
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


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from trainhub.api import service

    infos = service().checkpoints(args.job)
    if args.json:
        print_json(infos)
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
        print_json(listing)
        return 0
    if not listing.datasets:
        print("no datasets by name here (see `trainhub datasets --help`)", file=sys.stderr)
        return 0
    rows = [("NAME", "ACCESS", "OWNER", "PATH", "DESCRIPTION")]
    for d in listing.datasets:
        access = "read-only" if d.read_only else "read-write"
        rows.append((d.name, access, d.owner or "-", d.path, d.description))
    print_columns(rows)
    return 0


def add_parsers(sub: Any) -> None:
    add_job_verb(sub, "checkpoints", cmd_checkpoints, "list a job's checkpoints")

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

    d = sub.add_parser(
        "datasets",
        help="list the datasets your team may ask for by name",
        description="Datasets by name: on a cluster the teams file's, locally those of "
        "$TRAINHUB_HOME/datasets.yaml (or TRAINHUB_DATASETS_FILE) that TRAINHUB_TEAM may read.",
    )
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_datasets)
