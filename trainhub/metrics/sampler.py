"""The background sampler that writes a job's GPU and system metrics, once a second.

Records (all with the same ``time`` per tick, epoch seconds):

- ``metrics/gpu.jsonl``: ``{time, gpu, uuid, utilization, memory_utilization, memory_used,
  memory_total, power_w, temperature_c}`` per assigned GPU; a reading NVML cannot give is null.
- ``metrics/system.jsonl``: ``{time, rank, pid, cpu_percent, rss_bytes}`` per rank (its child
  processes included), plus ``{time, rank: null, host, cpu_percent, memory_used,
  memory_total}`` for the machine.

Without GPU metrics (no NVML, no GPU assigned, ``TRAINHUB_GPUS=0``) it records system metrics
alone and emits one ``metrics`` event with ``gpu=False`` and the reason. Later problems
(a reading NVML refuses, a lost GPU, an error in the sampler itself) become one ``metrics``
event each, the first time they occur; nothing ever escapes the thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import METRIC_FILES, JobDir, append_jsonl
from trainhub.metrics.nvml import GpuSampler
from trainhub.metrics.system import HostSampler, ProcessSampler
from trainhub.metrics.tensorboard import TensorBoardReader


class MetricsSampler:
    def __init__(
        self,
        job_dir: JobDir,
        gpu_indices: Sequence[int],
        rank_pids: Callable[[], Mapping[int, int]],
        interval: float = 1.0,
        *,
        first_gpu: int = 0,
        event_fields: Mapping[str, Any] | None = None,
        tensorboard_roots: Sequence[Path] = (),
        tensorboard_from_now: bool = False,
        attempt: Callable[[], int] = lambda: 0,
    ) -> None:
        """``gpu_indices``: NVML's indices of the GPUs to sample, written as ``gpu`` numbers
        from ``first_gpu`` on (a job's pods each see their own GPUs from 0). ``event_fields``
        go into each ``metrics`` event (which pod's sampler says it). ``tensorboard_roots``:
        where the job's TensorBoard event files may be, read into its training scalars
        (:mod:`trainhub.metrics.tensorboard`) as the job's ``attempt()``; with
        ``tensorboard_from_now``, only the files begun after this sampler was made."""
        if not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.job_dir = job_dir
        self.interval = interval
        self._rank_pids = rank_pids
        self._gpus = GpuSampler(gpu_indices)
        self._first_gpu = first_gpu
        self._event_fields = dict(event_fields or {})
        self._processes = ProcessSampler()
        self._host: HostSampler | None = None
        self._gpu_path = job_dir.metrics / METRIC_FILES["gpu"]
        self._system_path = job_dir.metrics / METRIC_FILES["system"]
        scalars = job_dir.metrics / METRIC_FILES["scalars"]
        self._tensorboard = TensorBoardReader(
            tensorboard_roots,
            lambda record: append_jsonl(scalars, record),
            attempt,
            lambda problem: self._report(reason=problem),
            from_now=tensorboard_from_now,
        )
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._reported: set[str] = set()
        self.ticks = 0
        self.cpu_seconds = 0.0
        """CPU time the sampler thread has used so far (its own, not the process's)."""

    def start(self) -> MetricsSampler:
        if self._thread is not None:
            raise RuntimeError("this MetricsSampler was already started")
        self._thread = threading.Thread(target=self._run, name="trainhub-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sampling; returns once the thread has finished its current tick."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> MetricsSampler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        started_cpu = time.thread_time()
        try:
            self._open()
            next_tick = time.monotonic()
            while not self._stopping.is_set():
                self._tick()
                self.ticks += 1
                self.cpu_seconds = time.thread_time() - started_cpu
                next_tick += self.interval
                delay = next_tick - time.monotonic()
                if delay < 0:  # fell behind (suspended, overloaded): skip, do not catch up
                    next_tick, delay = time.monotonic(), 0.0
                self._stopping.wait(delay)
            if self._tensorboard.roots:  # what the job wrote in its last seconds
                self._guarded("TensorBoard", lambda _: self._tensorboard.poll(rescan=True), 0)
        except Exception as error:  # a bug here must not take the job down with it
            self._report(error=f"Metrics sampling stopped: {error!r}.")
        finally:
            self._gpus.close()
            self.cpu_seconds = time.thread_time() - started_cpu

    def _open(self) -> None:
        self.job_dir.metrics.mkdir(parents=True, exist_ok=True)
        self._host = HostSampler()
        if not self._gpus.open():
            self.job_dir.emit("metrics", gpu=False, reason=self._gpus.reason, **self._event_fields)
        self._report_gpu_problems()

    def _tick(self) -> None:
        now = round(time.time(), 3)
        self._guarded("GPU", self._sample_gpus, now)
        self._guarded("rank process", self._sample_ranks, now)
        self._guarded("host", self._sample_host, now)
        if self._tensorboard.roots:
            self._guarded("TensorBoard", lambda _: self._tensorboard.poll(), now)

    def _sample_gpus(self, now: float) -> None:
        for record in self._gpus.sample():
            record["gpu"] += self._first_gpu
            append_jsonl(self._gpu_path, {"time": now, **record})
        self._report_gpu_problems()

    def _sample_ranks(self, now: float) -> None:
        for record in self._processes.sample(self._rank_pids()):
            append_jsonl(self._system_path, {"time": now, **record})

    def _sample_host(self, now: float) -> None:
        assert self._host is not None
        append_jsonl(self._system_path, {"time": now, **self._host.sample()})

    def _guarded(self, what: str, sample: Callable[[float], None], now: float) -> None:
        try:
            sample(now)
        except Exception as error:
            self._report(error=f"{what} metrics could not be sampled: {error!r}.")

    def _report_gpu_problems(self) -> None:
        for problem in self._gpus.take_problems():
            self._report(gpu=True, reason=problem)

    def _report(self, **fields: Any) -> None:
        key = repr(sorted(fields.items()))
        if key in self._reported:
            return
        self._reported.add(key)
        with contextlib.suppress(OSError):  # the job directory itself fails: nowhere to say so
            self.job_dir.emit("metrics", **fields, **self._event_fields)
