"""The first process of a job's pod: ``python -m trainhub.rank.pod --grace S torchrun ...``.

It runs torchrun and passes SIGTERM and SIGINT on to it (torchrun passes them to the ranks,
whose stop callbacks save a checkpoint). When the kubelet stopped the pod it exits 128 + the
signal, as a process that signal ended does: torchrun itself exits 1 on SIGTERM, which the
Job's podFailurePolicy could not tell from a rank's own failure (exit 143 is ignored there,
any other non-zero exit fails the Job). If torchrun is not done ``grace`` seconds after the
signal, it exits so anyway, before the kubelet's SIGKILL would make it 137. As PID 1 it also
reaps the orphans the ranks leave. With ``--metrics`` it samples the pod's GPUs and ranks into
the job directory (trainhub.rank.podmetrics), in a thread that nothing it meets can stop the
job with; the rest is standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainhub.metrics.sampler import MetricsSampler

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
POLL_SECONDS = 0.2


def exit_status(code: int) -> int:
    """A child's return code as this process's exit status (-15 -> 143)."""
    return 128 - code if code < 0 else code


def run(command: list[str], grace: float, metrics: tuple[int, int] | None = None) -> int:
    """``metrics``: (GPUs, ranks) of this pod to sample, or None."""
    # The pod's log (kubectl logs) starts with what it runs; the ranks log to the job directory.
    print(f"[trainhub] running {' '.join(command)}", flush=True)
    child = subprocess.Popen(command)
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
    if stopped:
        return 128 + stopped[0][0]
    assert code is not None  # the loop leaves early only once stopped
    return exit_status(code)


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
    return run(args.command, args.grace, (args.gpus, args.ranks) if args.metrics else None)


if __name__ == "__main__":
    sys.exit(main())
