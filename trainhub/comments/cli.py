"""``trainhub comments``: the comments on a job, a sweep, a pipeline run or a model
version.

trainhub comments JOB [--kind sweep|pipeline_run|model_version] [--json]   oldest first
trainhub comments classifier/3 --kind model_version            a version, by number
trainhub comments add JOB "Markdown with @name" [--kind ...]   TEXT "-": read stdin
trainhub comments edit COMMENT "new text"                      one's own only
trainhub comments delete COMMENT                               one's own only
"""

from __future__ import annotations

import argparse
import getpass
import sys
import textwrap
from typing import Any

from trainhub.cli.printing import ago, print_json
from trainhub.comments.kinds import KINDS
from trainhub.comments.model import CommentView
from trainhub.errors import TrainhubError

VERBS = ("add", "edit", "delete")
USAGE = (
    "trainhub comments OBJECT | add OBJECT TEXT | edit COMMENT TEXT | delete COMMENT "
    "[--kind KIND] [--json]"
)


def _comments() -> Any:
    from trainhub.api import service
    from trainhub.comments.board import Comments

    return Comments(service())


def _text(given: str) -> str:
    return sys.stdin.read() if given == "-" else given


def shown(comment: CommentView) -> str:
    """One comment for a terminal: a heading line, then its Markdown indented."""
    edited = " (edited)" if comment.edited_at else ""
    mentions = f"  @{' @'.join(comment.mentions)}" if comment.mentions else ""
    head = f"{comment.id}  {comment.user}  {ago(comment.created_at)} ago{edited}{mentions}"
    return head + "\n" + textwrap.indent(comment.body.rstrip(), "    ")


def _wants(verb: str | None) -> int:
    """How many words follow ``verb`` (listing: the object alone)."""
    return {"add": 2, "edit": 2, "delete": 1}.get(verb or "", 1)


def cmd_comments(args: argparse.Namespace) -> int:
    words, user = list(args.words), getpass.getuser()
    verb = words.pop(0) if words[0] in VERBS and len(words) > 1 else None
    if len(words) != _wants(verb):
        raise TrainhubError(f"usage: {USAGE}")
    board = _comments()
    if verb is None:
        listed = board.list(args.kind, words[0], user=user)
        if args.json:
            print_json(listed)
        else:
            print("\n\n".join(shown(c) for c in listed.comments) or "No comments.")
        return 0
    if verb == "delete":
        board.delete(words[0], user=user)
        print(f"{words[0]}: deleted")
        return 0
    if verb == "add":
        made = board.add(
            {"kind": args.kind, "target": words[0], "body": _text(words[1])}, user=user
        )
    else:
        made = board.edit(words[0], {"body": _text(words[1])}, user=user)
    print_json(made) if args.json else print(made.id)
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "comments",
        help="the comments on a job, sweep, pipeline run or model version (add, edit, delete)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=USAGE,
    )
    p.add_argument("words", nargs="+", metavar="WORD", help=argparse.SUPPRESS)
    p.add_argument("--kind", default="job", choices=list(KINDS), help="what OBJECT is (job)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_comments)
