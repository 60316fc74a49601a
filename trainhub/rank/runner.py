"""Runs a bundle inside one rank: ``python -m trainhub.rank.runner <bundle_dir>``.

Started by torchrun (locally or in a pod) with RANK, WORLD_SIZE, ... and TRAINHUB_JOB_DIR,
TRAINHUB_ATTEMPT in the environment. Everything the rank prints, C extensions and ``!``
subprocesses included, is appended to ``logs/rank-<r>.log``. Notebook cells run in order in
an IPython shell with the kernel's display pieces (docs/architecture.md, "Notebook -> job");
a failure is written to ``status/<attempt>/rank-<r>.json`` naming the cell and the line, and
the failure class. Each cell's start is an event before it runs: a rank that dies without a
word is placed in its cell from those (:func:`trainhub.lifecycle.verdict.running_cells`).

Exit status: 0 when every cell ran (the last may end it with ``sys.exit(0)``), 1 otherwise.

The run's parts: :mod:`~trainhub.rank.cells` runs a notebook's cells in the shell of
:mod:`~trainhub.rank.shell`, :mod:`~trainhub.rank.failure` locates and reports what failed,
:mod:`~trainhub.rank.ending` handles SIGTERM and the checkpoint saves to finish. Nothing of
this package imports this module: it runs as ``__main__``.
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

from trainhub.bundle.layout import WORKSPACE
from trainhub.bundle.schema import BundleManifest, read_manifest
from trainhub.jobs import world
from trainhub.jobs.directory import write_json_atomic
from trainhub.rank.cells import run_cells
from trainhub.rank.context import RankContext
from trainhub.rank.datawait import install, rank_meter
from trainhub.rank.ending import flush_checkpoints, stop_handler
from trainhub.rank.failure import (
    OK,
    Failure,
    exit_ok,
    innermost_user_frame,
    line_in,
    platform_status,
    report_failure,
    user_paths,
)
from trainhub.rank.logcap import capped_output
from trainhub.rank.logmarks import LogStream, say

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def redirect_output(log_path: Path) -> None:
    """Point fds 1 and 2 at the rank log, so C code and child processes write there too,
    within the log limits (:mod:`trainhub.rank.logcap`: from here on this is a child process)."""
    capped_output(log_path)
    null = os.open(os.devnull, os.O_RDONLY)  # input() fails at once instead of hanging a rank
    os.dup2(null, 0)
    os.close(null)
    # New stream objects: the old ones may have found fd 1 seekable (a file) and now it is a pipe.
    encoding = sys.stdout.encoding or "utf-8"
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = LogStream(fd, encoding)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def run_script(bundle_dir: Path, manifest: BundleManifest, ctx: RankContext) -> Failure | None:
    workspace = (bundle_dir / WORKSPACE).resolve()
    script = workspace / manifest.entry
    sys.argv = [str(script), *manifest.args]
    sys.path.insert(0, str(script.parent))
    ctx.emit("script", phase="start")
    started = time.monotonic()
    failure = None
    try:
        runpy.run_path(str(script), run_name="__main__")
    except BaseException as exc:  # the job's own code: anything it raises is its outcome
        if not exit_ok(exc):
            where = innermost_user_frame(exc, {}, workspace)
            text = user_paths("".join(traceback.format_exception(exc)), workspace)
            print(text, file=sys.stderr, end="")
            failure = Failure(
                exc=exc,
                traceback_text=text,
                file=manifest.entry,
                line=line_in(exc, str(script)),
                raised_at=where,
            )
    ctx.emit(
        "script", phase="end", seconds=round(time.monotonic() - started, 3), ok=failure is None
    )
    return failure


def run_bundle(bundle_dir: Path, ctx: RankContext) -> int:
    """Run the bundle in this process (output already redirected); returns the exit status."""
    status_path = ctx.job.rank_status(ctx.attempt, ctx.rank)
    try:
        manifest = read_manifest(bundle_dir)
        workdir = (bundle_dir / WORKSPACE / manifest.workdir).resolve()
        os.chdir(workdir)
        sys.path.insert(0, str(workdir))
    except Exception as exc:  # an unreadable bundle is the platform's fault, not the user's
        say(f"cannot load the bundle {bundle_dir}: {exc}")
        write_json_atomic(status_path, platform_status(exc, "cannot load the bundle"))
        return 1
    # Cells get matplotlib's inline backend, as ipykernel sets it: plt.show() and the figures a
    # cell leaves open are displayed (then closed) after the cell, as PNG. A script has no
    # display: Agg. Set even when inherited (a kernel exports its inline backend).
    os.environ["MPLBACKEND"] = INLINE_BACKEND if manifest.kind == "notebook" else "Agg"
    warnings.filterwarnings("ignore", message="To exit: use 'exit', 'quit', or Ctrl-D.")
    say(
        f"rank {ctx.rank}/{ctx.world_size}, attempt {ctx.attempt}: "
        f"running {manifest.kind} {manifest.entry}"
    )
    if ctx.rank == 0:  # this world owns the job's checkpoints from now (trainhub.jobs.world)
        try:
            world.claim(ctx.job, world_size=ctx.world_size, attempt=ctx.attempt)
        except OSError as exc:  # unguarded, not stopped: its saves fail the same way, named
            say(f"cannot claim the job's directory for this world of ranks: {exc}")
    run = run_cells if manifest.kind == "notebook" else run_script
    meter = rank_meter(ctx.job, ctx.rank, ctx.attempt)
    install(meter)  # the DataLoaders' wait for data, in metrics/system.jsonl
    try:
        failure = run(bundle_dir, manifest, ctx)
    finally:
        meter.flush()
    if failure is None and not flush_checkpoints(status_path):
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    if failure is None:
        write_json_atomic(status_path, OK)
        say("finished")
        return 0
    report_failure(ctx, failure)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m trainhub.rank.runner <bundle_dir>", file=sys.stderr)
        return 2
    bundle_dir = Path(args[0]).resolve()
    ctx = RankContext.from_env(bundle_dir)
    redirect_output(ctx.job.rank_log(ctx.rank))
    # A crash (SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL) leaves the Python stack in the log:
    # the cell and line it was in.
    faulthandler.enable(file=sys.stderr, all_threads=False)
    # A private IPython directory: no user profile or startup files change what a job runs.
    ipython_dir = tempfile.mkdtemp(prefix="trainhub-ipython-")
    os.environ["IPYTHONDIR"] = ipython_dir
    # Removed below, or on the way out of a stop (a rank ended by SIGTERM runs no finally).
    signal.signal(
        signal.SIGTERM,
        stop_handler(ctx, cleanup=lambda: shutil.rmtree(ipython_dir, ignore_errors=True)),
    )
    code = 1
    try:
        code = run_bundle(bundle_dir, ctx)
        return code
    finally:
        shutil.rmtree(ipython_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
