"""The first process of a job's pod: ``python -m trainhub.rank.pod --grace S torchrun ...``.

It runs torchrun and passes SIGTERM and SIGINT on to it (torchrun passes them to the ranks,
whose stop callbacks save a checkpoint). When the kubelet stopped the pod it exits 128 + the
signal, as a process that signal ended does: torchrun itself exits 1 on SIGTERM, which the
Job's podFailurePolicy could not tell from a rank's own failure (exit 143 is ignored there,
any other non-zero exit fails the Job). If torchrun is not done ``grace`` seconds after the
signal, it exits so anyway, before the kubelet's SIGKILL would make it 137. A pod nobody
stopped never exits 143, whatever ended torchrun: the Job would ignore it and run the pod
again, and again. As PID 1 it also reaps the orphans the ranks leave.

torchrun's own output (its messages, what the ranks print before their logs open, and the
summary naming the rank that failed first) goes to the pod's log and, in a job's pod, to
``logs/agent-<worker>-attempt-<n>.log`` in the job directory: the verdict reads it there
(:func:`trainhub.lifecycle.results.agent_output`), as the local supervisor reads its own log.
With ``--metrics`` it samples the pod's GPUs and ranks into the job directory
(trainhub.rank.podmetrics), in a thread that nothing it meets can stop the job with; the rest
is standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from trainhub.jobs import confined
from trainhub.jobs.directory import agent_log_name

if TYPE_CHECKING:
    from trainhub.metrics.sampler import MetricsSampler

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# The exit of a pod stopped from outside, which the Job's podFailurePolicy ignores.
STOPPED_EXIT = 128 + signal.SIGTERM
POLL_SECONDS = 0.2
AGENT_LOG_BYTES = 8 << 20  # of torchrun's output kept per run; the pod's log has it all
# The line each run of a pod starts its part of the kept output with (a pod restarted in the
# same attempt appends to the same file).
RUN_STARTED = "[trainhub] pod "
DRAIN_SECONDS = 2.0  # for the last of torchrun's output once it has exited


def exit_status(code: int) -> int:
    """A child's return code as this process's exit status (-15 -> 143)."""
    return 128 - code if code < 0 else code


def own_exit_status(code: int) -> int:
    """The exit status of a pod nobody stopped: its child's, but never :data:`STOPPED_EXIT`
    (a torchrun ended by a SIGTERM this pod was not sent is the job's own failure)."""
    status = exit_status(code)
    return 1 if status == STOPPED_EXIT else status


def agent_log(environ: Mapping[str, str]) -> tuple[Path, str] | None:
    """(job directory, file) where this pod keeps torchrun's output; None outside a job."""
    job_dir, worker = environ.get("TRAINHUB_JOB_DIR"), environ.get("NODE_RANK", "0")
    attempt = environ.get("TRAINHUB_ATTEMPT", "0")
    if not job_dir or not worker.isdigit() or not attempt.isdigit():
        return None
    return Path(job_dir), agent_log_name(int(worker), int(attempt))


def run(
    command: list[str],
    grace: float,
    metrics: tuple[int, int] | None = None,
    keep: tuple[Path, str] | None = None,
) -> int:
    """``metrics``: (GPUs, ranks) of this pod to sample, or None; ``keep``: (job directory,
    file) to keep torchrun's output in besides the pod's log, or None."""
    # The pod's log (kubectl logs) starts with what it runs; the ranks log to the job directory.
    started = f"[trainhub] running {' '.join(command)}\n"
    print(started, end="", flush=True)
    if keep is None:
        child = subprocess.Popen(command)
        copier = None
    else:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert child.stdout is not None
        first = f"{RUN_STARTED}{socket.gethostname()}: {' '.join(command)}\n"
        copier = _copy_output(child.stdout, *keep, first)
    stopped = _forward_stop_signals(child)  # first: PID 1 ignores a signal it has no handler for
    sampler = _start_sampler(*metrics) if metrics else None
    try:
        while (code := _reap(child.pid)) is None:
            if stopped and time.monotonic() - stopped[0][1] > grace:
                break  # the kubelet's SIGKILL is near: leave with the stop's status
            time.sleep(POLL_SECONDS)
    finally:
        if sampler is not None:
            sampler.stop(timeout=1.0)
        if copier is not None:
            copier.join(DRAIN_SECONDS)  # a rank's orphan may hold the pipe open: not for long
    if stopped:
        return 128 + stopped[0][0]
    assert code is not None  # the loop leaves early only once stopped
    return own_exit_status(code)


def _copy_output(source: IO[bytes], job_dir: Path, name: str, first: str) -> threading.Thread:
    """Copy what ``source`` gives to this process's stdout and, up to AGENT_LOG_BYTES, to the
    job's file ``name`` (appended: a pod restarted in the same attempt adds its run), on a
    thread that nothing it meets can stop the job with."""

    def keep(data: bytes) -> bool:
        try:
            confined.append(job_dir, name, data)
            return True
        except (OSError, ValueError) as error:  # a full disk, a link in its place
            with contextlib.suppress(OSError, ValueError):
                print(f"[trainhub] torchrun's output is not kept in {name}: {error}", flush=True)
            return False

    def copy() -> None:
        kept = len(first.encode()) if keep(first.encode()) else None
        out: IO[bytes] | None = sys.stdout.buffer
        # Read to the end whatever happens to the copies: a pipe no one reads would stall
        # torchrun and the ranks at their next write.
        while chunk := os.read(source.fileno(), 1 << 16):
            try:
                if out is not None:
                    out.write(chunk)
                    out.flush()
            except (OSError, ValueError):
                out = None  # the pod's log is gone: the job goes on
            if kept is not None and kept < AGENT_LOG_BYTES:
                part = chunk[: AGENT_LOG_BYTES - kept]
                kept = kept + len(part) if keep(part) else None
                if kept == AGENT_LOG_BYTES:
                    keep(b"\n[trainhub: the rest of torchrun's output is in the pod's log]\n")

    thread = threading.Thread(target=copy, name="trainhub-torchrun-output", daemon=True)
    thread.start()
    return thread


def _forward_stop_signals(child: subprocess.Popen[bytes]) -> list[tuple[int, float]]:
    """Pass stop signals on to ``child``; returns the (signal, when) of each one received."""
    stopped: list[tuple[int, float]] = []

    def forward(signum: int, frame: object) -> None:
        stopped.append((signum, time.monotonic()))
        if child.returncode is None:
            child.send_signal(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)
    return stopped


def _start_sampler(gpus: int, ranks: int) -> MetricsSampler | None:
    try:
        from trainhub.rank import podmetrics

        return podmetrics.start(gpus, ranks)
    except Exception as error:  # the job runs on without its metrics, and says why
        print(f"[trainhub] this pod's metrics are not sampled: {error!r}", flush=True)
        return None


def _reap(pid: int) -> int | None:
    """Reap every exited child; the return code of ``pid`` once it has exited."""
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 1  # nothing left to wait for (someone else reaped it)
        if done == 0:
            return None
        if done == pid:
            return os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainhub.rank.pod")
    parser.add_argument("--grace", type=float, required=True, help="seconds after a stop signal")
    parser.add_argument(
        "--metrics", action="store_true", help="sample the pod's GPUs and ranks into the job"
    )
    parser.add_argument("--gpus", type=int, default=0, help="the pod's GPUs (with --metrics)")
    parser.add_argument("--ranks", type=int, default=1, help="the pod's ranks (with --metrics)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("no command to run")
    metrics = (args.gpus, args.ranks) if args.metrics else None
    return run(args.command, args.grace, metrics, agent_log(os.environ))


if __name__ == "__main__":
    sys.exit(main())
