"""GPU inventory and the metrics sampler through the real nvidia-ml-py over a fake driver.

nvidia-ml-py loads libnvidia-ml.so.1 once per process, so each case runs the code under test
in a child process whose LD_LIBRARY_PATH finds the fake (tests/fixtures/fake_nvml).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fixtures.fake_nvml.fake import (
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    FakeNvml,
)
from tests.local.test_runner import make_job
from trainhub.jobs.directory import JobDir
from trainhub.metrics.scalars import read_metrics

INVENTORY = (
    "from trainhub.metrics.nvml import gpu_inventory; print(gpu_inventory().model_dump_json())"
)

# Samples every 0.1 s until the stop file appears; rank 0 is the child process itself.
SAMPLER = """
import json, os, sys, time
from pathlib import Path
from trainhub.jobs.directory import JobDir
from trainhub.metrics.sampler import MetricsSampler

job, gpus, stop = JobDir(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
sampler = MetricsSampler(job, gpus, lambda: {0: os.getpid()}, interval=0.1).start()
deadline = time.monotonic() + 60
while not stop.exists() and time.monotonic() < deadline:
    time.sleep(0.02)
sampler.stop()
print(json.dumps({"ticks": sampler.ticks, "stopped": not sampler._thread.is_alive()}))
"""


def inventory(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", INVENTORY], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
    return result


@contextmanager
def sampling(job: JobDir, gpus: list[int], env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Run a MetricsSampler in a child process; yields a dict that gets the child's summary."""
    stop = job.root / "stop-sampler"
    child = subprocess.Popen(
        [sys.executable, "-c", SAMPLER, str(job.root), json.dumps(gpus), str(stop)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    summary: dict[str, Any] = {}
    try:
        yield summary
    finally:
        stop.touch()
        out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    summary.update(json.loads(out))


def rows(job: JobDir, kind: str) -> list[dict[str, Any]]:
    return read_metrics(job, kind)[0]


def metrics_events(job: JobDir) -> list[dict[str, Any]]:
    return [e for e in job.iter_events() if e["type"] == "metrics"]


def new_job(tmp_path: Path) -> JobDir:
    return JobDir(tmp_path / "job").create()


# --- inventory --------------------------------------------------------------------------------


def test_inventory_lists_the_gpus(fake_nvml: FakeNvml):
    fake_nvml.set_gpu_count(3)
    fake_nvml.set(2, name="NVIDIA A100-SXM4-40GB", memory_total=40 << 30)

    found = inventory(fake_nvml.env)

    assert found["error"] is None
    assert found["driver_version"] == fake_nvml.driver_version
    assert [(g["index"], g["uuid"], g["name"], g["memory_total_bytes"]) for g in found["gpus"]] == [
        (i, gpu.uuid, gpu.name, gpu.memory_total) for i, gpu in enumerate(fake_nvml.gpus)
    ]
    assert found["gpus"][2]["name"] == "NVIDIA A100-SXM4-40GB"


def test_inventory_explains_missing_gpus(fake_nvml: FakeNvml):
    env = fake_nvml.env

    assert inventory({**env, "TRAINHUB_GPUS": "0"}) == {
        "gpus": [],
        "driver_version": None,
        "error": "GPUs are hidden by TRAINHUB_GPUS=0.",
    }
    assert [g["index"] for g in inventory({**env, "TRAINHUB_GPUS": "1"})["gpus"]] == [0]
    assert "TRAINHUB_GPUS='all'" in inventory({**env, "TRAINHUB_GPUS": "all"})["error"]

    fake_nvml.set_gpu_count(0)
    assert inventory(env)["error"] == "NVML sees no GPUs on this machine."

    fake_nvml.set_gpu_count(2).fail("nvmlInitWithFlags", NVML_ERROR_DRIVER_NOT_LOADED)
    assert inventory(env)["error"] == "The NVIDIA driver is not loaded, so NVML could not start."

    fake_nvml.heal().fail("nvmlDeviceGetUUID", NVML_ERROR_GPU_IS_LOST, gpu=1)
    found = inventory(env)
    assert [g["index"] for g in found["gpus"]] == [0]
    assert found["error"] == "GPU 1 could not be read: GPU is lost."


def test_inventory_without_a_driver_library():
    # nvidia-ml-py asked to load a library no system has takes the same path as a machine
    # without the NVIDIA driver, even when this one has it.
    missing = "import ctypes, pynvml\npynvml.CDLL = lambda name: ctypes.CDLL(name + '.absent')\n"
    # Whatever GPUs this process's environment hides (the server tests hide them all).
    env = {k: v for k, v in os.environ.items() if k != "TRAINHUB_GPUS"}
    done = subprocess.run(
        [sys.executable, "-c", missing + INVENTORY],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["error"] == (
        "No NVIDIA driver found: the NVML library libnvidia-ml.so.1 could not be loaded."
    )


# --- sampler ----------------------------------------------------------------------------------


def test_sampler_tracks_the_gpus_as_they_change(fake_nvml: FakeNvml, tmp_path):
    fake_nvml.set(0, utilization_gpu=10, utilization_memory=5, memory_used=3 << 30)
    fake_nvml.set(1, utilization_gpu=20, power_mw=301_500, temperature_c=64)
    job = new_job(tmp_path)

    with sampling(job, [0, 1], fake_nvml.env) as summary:
        wait_for(lambda: len(rows(job, "gpu")) >= 4)
        fake_nvml.set(0, utilization_gpu=93, memory_used=70 << 30)
        changed = wait_for(lambda: [r for r in rows(job, "gpu") if r["utilization"] == 93])

    assert summary["stopped"] and summary["ticks"] >= 3
    records = rows(job, "gpu")
    before = next(r for r in records if r["gpu"] == 0)
    assert before == {
        "time": before["time"],
        "gpu": 0,
        "uuid": fake_nvml.gpus[0].uuid,
        "utilization": 10,
        "memory_utilization": 5,
        "memory_used": 3 << 30,
        "memory_total": fake_nvml.gpus[0].memory_total,
        "power_w": fake_nvml.gpus[0].power_mw / 1000,
        "temperature_c": fake_nvml.gpus[0].temperature_c,
    }
    assert changed[0]["gpu"] == 0 and changed[0]["memory_used"] == 70 << 30
    gpu1 = [r for r in records if r["gpu"] == 1]
    assert {(r["utilization"], r["power_w"], r["temperature_c"]) for r in gpu1} == {(20, 301.5, 64)}
    # GPU and system rows of one tick share its time.
    system_times = {r["time"] for r in rows(job, "system")}
    assert {r["time"] for r in records} <= system_times
    assert metrics_events(job) == []


def test_sampler_reports_readings_nvml_refuses(fake_nvml: FakeNvml, tmp_path):
    fake_nvml.fail("nvmlDeviceGetPowerUsage", NVML_ERROR_NOT_SUPPORTED, gpu=1)
    job = new_job(tmp_path)

    with sampling(job, [0, 1], fake_nvml.env):
        wait_for(lambda: len(rows(job, "gpu")) >= 4)
        # All at once: a sample between two writes would see GPU 0 lost to some calls only.
        every_reading = ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo",
                         "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature")  # fmt: skip
        fake_nvml.fail(every_reading, NVML_ERROR_GPU_IS_LOST, gpu=0)
        wait_for(
            lambda: [r for r in rows(job, "gpu") if r["gpu"] == 0 and r["utilization"] is None]
        )
        wait_for(lambda: len(metrics_events(job)) >= 2)

    gpu1 = [r for r in rows(job, "gpu") if r["gpu"] == 1]
    assert all(r["power_w"] is None and r["utilization"] == 0 for r in gpu1)
    lost = [r for r in rows(job, "gpu") if r["gpu"] == 0 and r["utilization"] is None][-1]
    assert lost["memory_used"] is lost["power_w"] is lost["temperature_c"] is None
    assert [(e["gpu"], e["reason"]) for e in metrics_events(job)] == [
        (True, "GPU 1 power is unavailable: Not Supported."),
        (True, "GPU 0 could not be read: GPU is lost."),
    ]


def test_sampler_without_nvml_records_system_metrics_and_one_reason(fake_nvml: FakeNvml, tmp_path):
    fake_nvml.fail("nvmlInitWithFlags", NVML_ERROR_DRIVER_NOT_LOADED)
    job = new_job(tmp_path)

    with sampling(job, [0, 1], fake_nvml.env):
        wait_for(lambda: len([r for r in rows(job, "system") if r["rank"] is None]) >= 3)

    assert not (job.metrics / "gpu.jsonl").exists()
    assert {r["rank"] for r in rows(job, "system")} == {0, None}
    events = metrics_events(job)
    assert [(e["gpu"], e["reason"]) for e in events] == [
        (False, "The NVIDIA driver is not loaded, so NVML could not start.")
    ]


def test_sampler_with_gpus_hidden(fake_nvml: FakeNvml, tmp_path):
    job = new_job(tmp_path)

    with sampling(job, [0], {**fake_nvml.env, "TRAINHUB_GPUS": "0"}):
        wait_for(lambda: len(rows(job, "system")) >= 4)

    assert not (job.metrics / "gpu.jsonl").exists()
    assert [(e["gpu"], e["reason"]) for e in metrics_events(job)] == [
        (False, "GPUs are hidden by TRAINHUB_GPUS=0.")
    ]


def test_sampler_skips_a_gpu_that_is_not_there(fake_nvml: FakeNvml, tmp_path):
    job = new_job(tmp_path)

    with sampling(job, [1, 4], fake_nvml.env):
        wait_for(lambda: len(rows(job, "gpu")) >= 2)

    assert {r["gpu"] for r in rows(job, "gpu")} == {1}
    assert [(e["gpu"], e["reason"]) for e in metrics_events(job)] == [
        (True, "GPU 4 is not on this machine (NVML sees 2).")
    ]


def test_sampler_keeps_to_the_gpus_trainhub_may_use(fake_nvml: FakeNvml, tmp_path):
    job = new_job(tmp_path)

    with sampling(job, [0, 1], {**fake_nvml.env, "TRAINHUB_GPUS": "1"}):
        wait_for(lambda: len(rows(job, "gpu")) >= 2)

    assert {r["gpu"] for r in rows(job, "gpu")} == {0}
    assert [(e["gpu"], e["reason"]) for e in metrics_events(job)] == [
        (True, "GPU 1 is hidden by TRAINHUB_GPUS=1.")
    ]


# --- a job pod's first process --------------------------------------------------------------
# The pod's ranks run for a moment: long enough to be sampled twice.
POD_SCRIPT = "import time\ntime.sleep(2.5)\n"


def pod_env(job: JobDir, env: dict[str, str], worker: int) -> dict[str, str]:
    env = {k: v for k, v in env.items() if not k.startswith(("TRAINHUB_", "TORCHELASTIC_"))}
    return {**env, "TRAINHUB_JOB_ID": "pod-1", "TRAINHUB_JOB_DIR": str(job.root),
            "NODE_RANK": str(worker)}  # fmt: skip


def test_a_job_pods_first_process_samples_its_gpus_as_the_jobs_and_its_ranks(
    fake_nvml: FakeNvml, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text(POD_SCRIPT)
    job = make_job(tmp_path, workspace, {"path": "train.py"})
    fake_nvml.set(0, utilization_gpu=61).set(1, utilization_gpu=62)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]
    pod = [sys.executable, "-m", "trainhub.rank.pod", "--grace=5", "--metrics", "--gpus=2"]
    done = subprocess.run(
        [*pod, "--ranks=2", *torchrun, "-m", "trainhub.rank.runner", str(job.bundle)],
        env=pod_env(job, fake_nvml.env, worker=1),
        cwd=job.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "metrics are not sampled" not in done.stdout

    # Worker 1 of a job with 2 GPUs per worker: its NVML GPUs 0 and 1 are the job's 2 and 3.
    gpus = {(r["gpu"], r["uuid"], r["utilization"]) for r in rows(job, "gpu")}
    assert gpus == {(2, fake_nvml.gpus[0].uuid, 61), (3, fake_nvml.gpus[1].uuid, 62)}
    system = rows(job, "system")
    ranks = [r for r in system if r["rank"] is not None]
    assert {r["rank"] for r in ranks} == {0, 1}
    assert all(r["rss_bytes"] > 0 for r in ranks)
    assert {r["host"] for r in system if r["rank"] is None} == {socket.gethostname()}
    assert metrics_events(job) == []


def test_a_cpu_pod_says_once_which_worker_has_no_gpu_metrics(
    fake_nvml: FakeNvml, tmp_path: Path
) -> None:
    job = new_job(tmp_path)
    pod = [sys.executable, "-m", "trainhub.rank.pod", "--grace=5", "--metrics", "--gpus=0"]
    sleep = [sys.executable, "-c", "import time; time.sleep(1.5)"]
    done = subprocess.run(
        [*pod, *sleep], env=pod_env(job, fake_nvml.env, worker=3), timeout=60, capture_output=True
    )
    assert done.returncode == 0, done.stderr

    assert not (job.metrics / "gpu.jsonl").exists()
    assert [(e["gpu"], e["reason"], e["worker"]) for e in metrics_events(job)] == [
        (False, "No GPUs are assigned to this job.", 3)
    ]
    assert [r["host"] for r in rows(job, "system")][:1] == [socket.gethostname()]


def test_a_pod_with_a_bad_worker_index_runs_without_its_metrics(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    env = {**pod_env(job, dict(os.environ), worker=0), "NODE_RANK": "one"}
    done = subprocess.run(
        [sys.executable, "-m", "trainhub.rank.pod", "--grace=5", "--metrics",
         sys.executable, "-c", "print('trained')"],
        env=env, timeout=60, capture_output=True, text=True,
    )  # fmt: skip

    assert done.returncode == 0 and "trained" in done.stdout
    assert "this pod's metrics are not sampled: ValueError(\"NODE_RANK must be a worker's" in (
        done.stdout
    )
    assert not job.metrics.exists() or not any(job.metrics.iterdir())
