"""Training scalars, metric range reads, process/host sampling and the sampler thread.

NVML itself is exercised over the fake driver in tests/local/test_nvml_fake.py; here the
sampler runs with no GPU assigned, so no NVML library is loaded into the test process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import psutil
import pytest
import torch

from trainhub.jobs.directory import JobDir
from trainhub.metrics import scalars
from trainhub.metrics.sampler import MetricsSampler
from trainhub.metrics.scalars import log, read_metrics
from trainhub.metrics.system import HostSampler, ProcessSampler


@pytest.fixture(autouse=True)
def fresh_scalars(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("TRAINHUB_JOB_DIR", "RANK", "TRAINHUB_ATTEMPT"):
        monkeypatch.delenv(name, raising=False)
    scalars.reset()
    yield
    scalars.reset()


@pytest.fixture
def job_dir(tmp_path, monkeypatch: pytest.MonkeyPatch) -> JobDir:
    job = JobDir(tmp_path / "job").create()
    monkeypatch.setenv("TRAINHUB_JOB_DIR", str(job.root))
    return job


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


# --- trainhub.log -------------------------------------------------------------------------


def test_log_in_a_job_writes_one_record_per_scalar(job_dir, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("TRAINHUB_ATTEMPT", "2")

    assert log(step=10, loss=0.5, accuracy=torch.tensor(0.25)) == 10
    assert log(loss=torch.tensor([0.375])) == 11  # the step follows on when omitted

    records, _ = read_metrics(job_dir, "scalars")
    assert [(r["step"], r["name"], r["value"]) for r in records] == [
        (10, "loss", 0.5),
        (10, "accuracy", 0.25),
        (11, "loss", 0.375),
    ]
    assert {r["rank"] for r in records} == {0}
    assert {r["attempt"] for r in records} == {2}
    assert all(abs(r["time"] - time.time()) < 60 for r in records)


def test_log_steps_start_at_zero(job_dir):
    log(loss=1.0)
    log(loss=0.5)
    records, _ = read_metrics(job_dir, "scalars")
    assert [r["step"] for r in records] == [0, 1]


def test_log_on_other_ranks_writes_only_when_asked(job_dir, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    log(step=1, loss=0.5)
    assert read_metrics(job_dir, "scalars")[0] == []

    log(step=1, rank0_only=False, loss=0.5)
    records, _ = read_metrics(job_dir, "scalars")
    assert [(r["rank"], r["value"]) for r in records] == [(3, 0.5)]


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        ("0.5", TypeError, "text"),
        (None, TypeError, "NoneType"),
        (torch.ones(3), TypeError, "shape (3,)"),
    ],
)
def test_log_refuses_bad_values_naming_the_scalar(job_dir, value, error, words):
    with pytest.raises(error, match="'grad_norm'") as raised:
        log(step=0, loss=0.5, grad_norm=value)
    assert words in str(raised.value)
    # Nothing of a rejected call is written, not even its good scalars.
    assert read_metrics(job_dir, "scalars")[0] == []


def test_log_records_a_diverging_value_without_stopping_the_training(job_dir):
    log(step=3, loss=float("nan"), grad_norm=torch.tensor(float("inf")), lr=0.1)
    records = {r["name"]: r for r in read_metrics(job_dir, "scalars")[0]}
    assert records["loss"]["value"] is None and records["loss"]["nonfinite"] == "nan"
    assert records["grad_norm"]["nonfinite"] == "inf" and records["lr"]["value"] == 0.1
    assert "nonfinite" not in records["lr"]


def test_log_refuses_a_bad_step(job_dir):
    with pytest.raises(TypeError, match="step"):
        log(step=1.5, loss=0.5)
    with pytest.raises(ValueError, match="step"):
        log(step=-1, loss=0.5)
    with pytest.raises(TypeError, match="at least one scalar"):
        log(step=1)


def test_log_outside_a_job_prints_and_keeps_values(capsys):
    log(loss=0.123456789, lr=torch.tensor(3e-4))
    log(step=7, loss=0.1)

    assert capsys.readouterr().out.splitlines() == [
        "step 0  loss=0.123457  lr=0.0003",
        "step 7  loss=0.1",
    ]
    assert [(r["step"], r["value"]) for r in scalars.history("loss")] == [
        (0, 0.123456789),
        (7, 0.1),
    ]
    assert len(scalars.history()) == 3


# --- read_metrics ---------------------------------------------------------------------------


def test_read_metrics_resumes_from_the_offset(job_dir):
    for step in range(5):
        log(step=step, loss=1.0 / (step + 1), lr=0.1)

    first, offset = read_metrics(job_dir, "scalars", limit=4)
    rest, end = read_metrics(job_dir, "scalars", offset=offset)
    assert [r["step"] for r in first + rest] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert read_metrics(job_dir, "scalars", offset=end) == ([], end)


def test_read_metrics_by_name_fills_the_limit_and_misses_nothing(job_dir):
    for step in range(6):
        log(step=step, loss=float(step), lr=0.1, grad_norm=2.0)

    seen, offset = [], 0
    while True:
        batch, offset = read_metrics(job_dir, "scalars", offset=offset, limit=2, names=["loss"])
        if not batch:
            break
        assert len(batch) == 2 or len(seen) == 6
        seen += batch
    assert [(r["name"], r["step"]) for r in seen] == [("loss", s) for s in range(6)]


def test_read_metrics_names_bad_arguments(job_dir):
    with pytest.raises(ValueError, match="kind"):
        read_metrics(job_dir, "../events")
    with pytest.raises(ValueError, match="offset"):
        read_metrics(job_dir, "gpu", offset=-1)
    with pytest.raises(ValueError, match="limit"):
        read_metrics(job_dir, "gpu", limit=0)
    with pytest.raises(ValueError, match="names"):
        read_metrics(job_dir, "gpu", names=["loss"])


# --- processes and host ---------------------------------------------------------------------

# A rank that sleeps while its child burns a core: only counting children shows the work.
RANK_WITH_BUSY_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.fixture
def rank_with_busy_child() -> Iterator[tuple[int, int]]:
    rank = subprocess.Popen(
        [sys.executable, "-c", RANK_WITH_BUSY_CHILD], stdout=subprocess.PIPE, text=True
    )
    child_pid = int(rank.stdout.readline())
    yield rank.pid, child_pid
    for pid in (child_pid, rank.pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()
    rank.wait()


def test_process_sampler_counts_a_ranks_children(rank_with_busy_child):
    rank_pid, child_pid = rank_with_busy_child
    sampler = ProcessSampler()
    rank_alone = psutil.Process(rank_pid)
    rank_alone.cpu_percent(None)

    [first] = sampler.sample({0: rank_pid})
    assert first["cpu_percent"] is None  # no interval to measure over yet
    time.sleep(0.5)
    [second] = sampler.sample({0: rank_pid})

    assert second["rank"] == 0 and second["pid"] == rank_pid
    assert second["cpu_percent"] > 10
    assert rank_alone.cpu_percent(None) < second["cpu_percent"]
    own_rss = psutil.Process(rank_pid).memory_info().rss
    child_rss = psutil.Process(child_pid).memory_info().rss
    assert second["rss_bytes"] >= own_rss + child_rss // 2


def test_process_sampler_drops_a_rank_whose_process_ended(rank_with_busy_child):
    rank_pid, child_pid = rank_with_busy_child
    sampler = ProcessSampler()
    assert len(sampler.sample({0: rank_pid, 1: os.getpid()})) == 2

    for pid in (child_pid, rank_pid):
        psutil.Process(pid).kill()
    psutil.Process(rank_pid).wait(5)
    records = sampler.sample({0: rank_pid, 1: os.getpid()})
    assert [r["rank"] for r in records] == [1]


def test_process_sampler_drops_a_rank_that_ended_but_is_not_reaped_yet(rank_with_busy_child):
    # Between a rank's exit and its parent's wait it is a zombie: no memory, no record (a last
    # sample of 0 bytes would draw the rank's memory falling to nothing as the job ends).
    rank_pid, child_pid = rank_with_busy_child
    sampler = ProcessSampler()
    assert [r["rank"] for r in sampler.sample({0: rank_pid})] == [0]

    for pid in (child_pid, rank_pid):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.Process(rank_pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the killed rank never became a zombie"
        time.sleep(0.02)
    assert sampler.sample({0: rank_pid}) == []


def test_host_sampler_reports_the_machine():
    host = HostSampler()
    burn_until = time.monotonic() + 0.2
    while time.monotonic() < burn_until:
        pass
    record = host.sample()
    assert record["rank"] is None
    assert 0 < record["cpu_percent"] <= 100
    assert record["memory_total"] == psutil.virtual_memory().total
    assert 0 < record["memory_used"] < record["memory_total"]


# --- the sampler thread ---------------------------------------------------------------------


def test_sampler_without_gpus_records_system_metrics_and_says_why(job_dir):
    sampler = MetricsSampler(job_dir, [], lambda: {0: os.getpid()}, interval=0.05).start()
    wait_for(lambda: sampler.ticks >= 3)
    sampler.stop()
    assert not sampler._thread.is_alive()

    records, _ = read_metrics(job_dir, "system")
    ranks = [r for r in records if r["rank"] == 0]
    hosts = [r for r in records if r["rank"] is None]
    assert len(ranks) >= 3 and len(hosts) >= 3
    assert {r["pid"] for r in ranks} == {os.getpid()}
    assert all(r["rss_bytes"] > 0 for r in ranks)
    assert not (job_dir.metrics / "gpu.jsonl").exists()

    events = [e for e in job_dir.iter_events() if e["type"] == "metrics"]
    assert events == [
        {"time": events[0]["time"], "type": "metrics", "gpu": False,
         "reason": "No GPUs are assigned to this job."}
    ]  # fmt: skip
    assert sampler.cpu_seconds > 0


def test_sampler_survives_a_failing_rank_lookup(job_dir):
    calls = []

    def broken() -> dict[int, int]:
        calls.append(1)
        raise RuntimeError("supervisor lost its process table")

    with MetricsSampler(job_dir, [], broken, interval=0.05) as sampler:
        wait_for(lambda: len(calls) >= 3)
    assert not sampler._thread.is_alive()

    errors = [e for e in job_dir.iter_events() if e["type"] == "metrics" and "error" in e]
    assert len(errors) == 1  # reported once, not once per tick
    assert "supervisor lost its process table" in errors[0]["error"]
    hosts = [r for r in read_metrics(job_dir, "system")[0] if r["rank"] is None]
    assert len(hosts) >= 3  # the host is still sampled


def test_sampler_stop_returns_promptly_with_a_long_interval(job_dir):
    sampler = MetricsSampler(job_dir, [], dict, interval=3600).start()
    wait_for(lambda: sampler.ticks >= 1)
    sampler.stop(timeout=10)
    assert not sampler._thread.is_alive()


def test_sampler_refuses_a_bad_interval(job_dir):
    with pytest.raises(ValueError, match="interval"):
        MetricsSampler(job_dir, [], dict, interval=0)
